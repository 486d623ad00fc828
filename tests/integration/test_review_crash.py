"""Review (crash consistency of the newer state transitions: "lose nothing when something
fails", "never answer 2xx for what is not committed"). Each test makes one step of joblet fail
the way a crash or a full disk does (another process holds the database's write lock, so no
commit of the daemon's goes through) and looks at what is left, in the answer and on the host."""
import os
import sqlite3
import time

from conftest import wait_for
from test_job_control import COUNTER, frozen, stands_still


def locked(d):
    """A connection holding joblet.db's write lock: every commit of the daemon's fails (busy)."""
    lock = sqlite3.connect(os.path.join(d.state, "joblet.db"), timeout=30, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    return lock


def unlock(lock):
    lock.execute("ROLLBACK")
    lock.close()


def test_a_requeue_of_a_suspended_job_that_is_not_saved_leaves_it_suspended(fresh_daemon):
    """rnx job requeue of a SUSPENDED job thaws it (its processes must hear the stop), then
    commits the requeue before the stop is sent (job_launch.c requeue_committed). When that
    commit fails the answer is an error ("the requeue was not saved"), and nothing was to
    change: the job was suspended by an admin and must stay frozen. It did not: thaw_to_stop
    (job_ctl.c) had thawed it and set it RUNNING before the commit, and nothing froze it again:
    a failed request resumed a suspended job (its processes run, its GPUs used)."""
    d = fresh_daemon()
    jid = d.submit(*COUNTER)
    d.wait_status(jid, "RUNNING")
    wait_for(lambda: os.path.exists(os.path.join(d.work(jid), "n")), "the counter never started", 30)
    code, body = d.api("POST", f"/v1/jobs/{jid}/suspend")
    assert code == 200, body
    wait_for(lambda: frozen(d, jid), "the job never froze", 30)
    lock = locked(d)
    try:
        asked = time.monotonic()
        code, body = d.api("POST", f"/v1/jobs/{jid}/requeue", timeout=120)
        took = time.monotonic() - asked
        frozen_at_answer = frozen(d, jid)
        assert code >= 500, (code, body)
        # the answer names the cause (not "SQL statements in progress", a failed write left active)
        assert "in progress" not in body["error"]["message"], body
        # frozen again before the answer, as a suspend's answer waits for its freeze: once the
        # freezer says so, or a second after it was asked (CI run 83 read it still thawing: the
        # answer came at once then). Past that second the kernel may still be freezing it
        assert frozen_at_answer or took >= 1.0, f"answered {code} after {took:.2f} s, the job not frozen again yet"
        wait_for(lambda: frozen(d, jid), f"a requeue answered {code} ({body}) thawed the suspended job", 30)
        # (a thawed job's counter moves every 50 ms: 2 s still is frozen; `not advances` waited
        # its whole 30 s, in each pass)
        assert stands_still(d, jid, 2), "the suspended job runs again after a requeue that failed"
    finally:
        unlock(lock)
    # once the database takes commits again, what it says is what is: SUSPENDED, frozen
    time.sleep(3)
    assert d.job(jid)["status"] == "SUSPENDED", d.job(jid)
    assert frozen(d, jid)
    d.kill9()
    d.start()
    assert d.job(jid)["status"] == "SUSPENDED", d.job(jid)
    assert frozen(d, jid)
    assert d.api("POST", f"/v1/jobs/{jid}/kill")[0] == 200
    d.wait(jid)
