"""A hostile local user against the history kept while commits fail (core/job_events.c): while
another process holds the state database's lock (a backup, a sqlite3 shell), each event is kept
in memory until a commit takes it. What one new event costs must not grow with every event kept.

1. Each new event looked through every event kept for lost ones of its own job (insert_lost_of),
   so that its job's history stayed in order: while the lock was held, a user's 1,500 jobs
   canceled in one turn (their --after job stopped) were 1,500 x 1,500 / 2 kept events looked at
   on the loop thread (up to 65,536 x 65,536 as the list fills). Now the lost events are tried
   again once per transaction, oldest first, and while some stay lost a new event waits behind
   them: what is looked at grows with the events, not with their square.

The attacker is a local account made for the test (useradd); joblet reads the peer's
credentials."""
import sqlite3
import time

from conftest import DbLock, bulk_as, local_account


def test_events_of_many_jobs_while_the_database_is_locked_cost_what_they_are(fresh_daemon):
    """A user's job GATE and 1,500 jobs after it (afterok); with the database locked by another
    process the user stops GATE: its dependents are canceled, an "ended" event each, none of
    which a commit takes. What that looked at among the kept events
    (joblet_event_kept_looks_total) is a few per event, not each event times those kept before
    it (over a million). Once the lock is gone, every dependent's history ends in "ended", in
    the database, after a kill -9 and a restart."""
    d = fresh_daemon("limits:\n  max_queued_per_user: 0\n  max_jobs_per_user: 0\n")
    n = 1500
    with local_account("hev") as (_name, uid, gid):
        user = (uid, gid)
        (code, gate), = bulk_as(d, user, [["POST", "/v1/jobs", {"command": "sleep", "args": ["600"]}]])
        assert code == 201, gate
        d.wait_status(gate["id"], "RUNNING")
        w = bulk_as(d, user, [["POST", "/v1/jobs", {"command": "true", "after": [{"job": gate["id"], "state": "ok"}]}]] * n)
        assert all(code == 201 for code, _ in w), w[-1]
        deps = [j["id"] for _, j in w]
        looks0 = d.metric("joblet_event_kept_looks_total")
        lock = DbLock(d.state)
        try:
            (code, ans), = bulk_as(d, user, [["POST", f"/v1/jobs/{gate['id']}/stop", None]])
            # (done; 503 says it is not saved yet)
            assert code == 200 or (code == 503 and "not saved" in ans["error"]["message"]), (code, ans)
            deadline = time.time() + 120
            while d.job(deps[-1])["status"] != "CANCELED" and time.time() < deadline:
                time.sleep(0.2)
            assert d.job(deps[-1])["status"] == "CANCELED", d.job(deps[-1])
            looks = d.metric("joblet_event_kept_looks_total") - looks0
        finally:
            lock.release()
        assert "event ended not recorded" in d.log(), "no insert failed: the lock did not hold"
        print(f"{n} jobs canceled while the database was locked: {looks:.0f} kept events looked at")
        assert looks < 20 * n, f"{looks:.0f} kept events looked at for {n} events"
        d.wait(d.submit("true"))                  # commits go through again
        deadline = time.time() + 60
        while "that a failed commit lost written again" not in d.log() and time.time() < deadline:
            time.sleep(0.2)
        d.kill9()
        d.start()
        c = sqlite3.connect(f"file:{d.state}/joblet.db?mode=ro", uri=True)
        try:
            rows = c.execute("SELECT job_id, event FROM job_events ORDER BY job_id, n").fetchall()
        finally:
            c.close()
        last = {}
        for jid, ev in rows:
            last[jid] = ev
        missing = [j for j in deps if last.get(j) != "ended"]
        assert not missing, f"{len(missing)} of {n} histories do not end in 'ended': {missing[:3]}"
