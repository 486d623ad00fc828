"""An array's task lists kept as blocks sized to their ranges (core/arrays.h: spec always; skip,
ahead and released NULL while empty) over a restart of joblet: an array held whole with tasks
released from its hold one by one and tasks canceled before they were made, and an array with
tasks made ahead of its list's order (--after=ARRAY:corr) and tasks canceled before they were
made, read back the same after a clean stop and after a kill -9: the rows' lists, what the API
says of each array, and what happens next (the next task made is the one it was before)."""
import os
import sqlite3

from conftest import tasks_of, wait_for
from test_arrays import LIMITS

ROW = "spec, skip, ahead, released, made, held, canceled_by, canceled_ms, gone_canceled"


def rows(d, ids):
    conn = sqlite3.connect(f"file:{os.path.join(d.state, 'joblet.db')}?mode=ro", uri=True, timeout=30)
    try:
        return {i: conn.execute(f"SELECT {ROW} FROM arrays WHERE id = ?", (i,)).fetchone() for i in ids}
    finally:
        conn.close()


def seen(d, ids):
    """What the API says of each array (its times and last pass's counts left out: the same
    array's state, not the same moment), and its rows."""
    out = {}
    for i in ids:
        a = dict(d.job(i)["array"])
        a.pop("pass_runs", None)
        out[i] = (a, d.job(i)["status"])
    return out, rows(d, ids)


def test_an_arrays_skip_ahead_and_released_read_back_the_same_after_a_restart(fresh_daemon):
    d = fresh_daemon(LIMITS)
    # C: held whole, tasks released one by one (%1: one made, ahead of the cursor; the rest wait,
    # kept in released), tasks not made canceled (skip), its %N changed (rnx job update --throttle)
    c = d.rnx("job", "run", "--hold", "--array=0-99:3%1", "sleep", "600", check=True).stdout.split()[-1]
    cs = c[:8]
    # A's tasks 1-9 complete at once, A_0 waits: two of B's tasks 1-9 are made ahead of B_0 (%2)
    a = d.rnx("job", "run", "--array=0-9", "sh", "-c", 'test "$SLURM_ARRAY_TASK_ID" != 0 || sleep 600',
              check=True).stdout.split()[-1]
    b = d.rnx("job", "run", "--array=0-19%2", f"--after={a}:corr", "sleep", "600", check=True).stdout.split()[-1]
    bs = b[:8]
    try:
        for t in (3, 9, 15, 21, 27):
            d.rnx("job", "release", f"{cs}_{t}", check=True)
        d.rnx("job", "cancel", f"{cs}_[30-60:3]", check=True)
        d.rnx("job", "cancel", f"{cs}_90", check=True)
        d.rnx("job", "hold", f"{cs}_21", check=True)
        wait_for(lambda: d.job(f"{cs}_3")["status"] == "RUNNING", "C_3 running")
        wait_for(lambda: d.job(b)["array"]["counts"].get("RUNNING") == 2, "two of B's tasks made ahead, running")
        d.rnx("job", "cancel", f"{bs}_[12-15]", check=True)
        d.rnx("job", "cancel", f"{bs}_17", check=True)
        d.rnx("job", "update", "--throttle=2", c, check=True)
        wait_for(lambda: d.job(f"{cs}_9")["status"] == "RUNNING", "C_9 running under %2")
        ids = (a, b, c)
        before, r0 = seen(d, ids)
        # every list kept, and kept as the test set it up
        assert r0[c][1] and r0[c][2] and r0[c][3] and r0[b][1] and r0[b][2], r0
        assert before[c][0]["throttle"] == 2 and before[c][0]["released"] == "3,9,15,27", before[c]
        for how in ("stop", "kill9"):
            d.stop() if how == "stop" else d.kill9()
            assert rows(d, ids) == r0, how
            d.start()
            after, r1 = seen(d, ids)
            assert r1 == r0, how
            assert after == before, how
        # and what comes next is what would have: C_15 and C_27 run as C_3 and C_9 stop, none of
        # C's held tasks does
        d.rnx("job", "stop", f"{cs}_3", check=True)
        d.rnx("job", "stop", f"{cs}_9", check=True)
        wait_for(lambda: d.job(f"{cs}_15")["status"] == "RUNNING" and d.job(f"{cs}_27")["status"] == "RUNNING",
                 "C_15 and C_27 running")
        made = sorted(j["array"]["task"] for j in tasks_of(d, c))
        assert made == [3, 9, 15, 27], made
        assert d.job(f"{cs}_0")["status"] == "HELD" and d.job(f"{cs}_21")["status"] == "HELD"
        assert d.job(f"{cs}_33")["status"] == "CANCELED" and d.job(f"{cs}_90")["status"] == "CANCELED"
        # B: two tasks made ahead run (those whose own task completed first); stopped, two more
        # are made, none of those canceled before they were made, none made twice
        first = [j["array"]["task"] for j in tasks_of(d, b)]
        assert len(first) == 2 and not set(first) & {0, 12, 13, 14, 15, 17}, first
        for t in first:
            d.rnx("job", "stop", f"{bs}_{t}", check=True)
        wait_for(lambda: d.job(b)["array"]["counts"].get("RUNNING") == 2, "two more of B's tasks running")
        made = [j["array"]["task"] for j in tasks_of(d, b)]
        assert len(made) == len(set(made)) == 4 and set(first) < set(made), made
        assert not set(made) & {0, 12, 13, 14, 15, 17}, made
        assert d.job(f"{bs}_0")["status"] == "PENDING" and d.job(f"{bs}_13")["status"] == "CANCELED"
        assert "arrays: the counts per owner differ" not in d.log()
    finally:
        for x in (c, b, a):
            d.rnx("job", "cancel", x)
