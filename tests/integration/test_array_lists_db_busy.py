"""An array's task lists (core/arrays.c: skip, ahead and released kept as blocks, NULL while
empty) changed while the database refuses every commit (another process holds its write lock):
each change that is not saved puts the list it replaced back (list_back) or keeps the new one for
the next save, never both, never neither: no block freed twice or lost (the sanitizer pass), and
what the API says once the lock goes is what a restart reads back."""
from conftest import DbLock, wait_for
from test_array_lists_restart import seen


def test_array_list_changes_refused_by_a_busy_database_leave_it_whole(fresh_daemon):
    d = fresh_daemon()
    c = d.rnx("job", "run", "--hold", "--array=0-99:3%1", "--schedule=1h", "true", check=True).stdout.split()[-1]
    cs = c[:8]
    try:
        d.rnx("job", "release", f"{cs}_[3-9:3]", check=True)
        d.rnx("job", "cancel", f"{cs}_[30-36:3]", check=True)
        before, r0 = seen(d, (c,))
        lock = DbLock(d.state)
        codes = []
        try:
            for args in (("release", f"{cs}_[12-18:3]"), ("hold", f"{cs}_3"), ("cancel", f"{cs}_[60-66:3]"),
                         ("hold", c), ("update", "--throttle=3", c), ("release", f"{cs}_[90-96:3]")):
                codes.append((args, d.rnx("job", *args).returncode))
        finally:
            lock.release()
        assert any(rc != 0 for _, rc in codes), codes
        # what the daemon holds now is saved with its next change, at the latest
        d.rnx("job", "release", f"{cs}_99", check=True)
        now, r1 = seen(d, (c,))
        d.stop()
        d.start()
        after, r2 = seen(d, (c,))
        assert r2 == r1 and after == now, (codes, now, after)
        assert d.rnx("job", "release", c).returncode == 0
        wait_for(lambda: d.job(c)["array"]["held"] is False, "released whole")
    finally:
        d.rnx("job", "cancel", c)
