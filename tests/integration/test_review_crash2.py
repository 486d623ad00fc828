"""Review (crash consistency, second round: "lose nothing when something fails", "never answer
2xx for what is not committed"). Another process holds joblet.db's write lock (BEGIN
IMMEDIATE), so the daemon's commits fail the way they do on a full or broken disk, and the
daemon is killed with SIGKILL; then what is left is looked at.

1. The "api" audit record of a change made over the TLS listener was written after its 2xx
   answer had gone (api/http.c on_done), into the loop turn's next commit: a failed commit
   rolled it back and nothing wrote it again (state.c's resync does not write audit rows), and
   a SIGKILL in between lost it. It is written before the answer's commit now, and kept until a
   commit takes it.
2. A memory volume whose last job ended while the commit of its removal failed stayed listed,
   its tmpfs mounted, for good: nothing tried again (core/volumes.c volumes_release)."""
import json
import os
import sqlite3
import time

from conftest import wait_for
from test_hostile_tls import Remote, pytestmark  # noqa: F401  (the same skips)
from test_review_crash import locked, unlock
from test_volumes import listed, loop_devices, mount_points, vol  # noqa: F401  (the same skips)


def api_records(conn, like):
    return conn.execute("SELECT detail FROM audit WHERE action = 'api' AND detail LIKE ?", (like,)).fetchall()


def read_db(d):
    return sqlite3.connect(f"file:{d.state}/joblet.db?mode=ro", uri=True, timeout=30)


def test_an_api_change_answered_2xx_has_its_audit_record_committed_first():
    r = Remote()
    try:
        code, job = r.api("admin", "POST", "/v1/jobs", {"command": "sleep", "args": ["300"]})
        assert code in (200, 201), job
        jid = job["id"]
        # answered: the job and its audit record are in the database (not only in the turn's
        # next commit), and both outlive a SIGKILL that comes right after the answer
        db = read_db(r.d)
        try:
            assert api_records(db, "POST /v1/jobs: %"), "the submit's audit record was not committed with its answer"
        finally:
            db.close()
        r.d.kill9()
        r.d.start()
        assert r.d.job(jid)
        db = read_db(r.d)
        try:
            assert api_records(db, "POST /v1/jobs: %"), "the submit's audit record was lost by a SIGKILL"
        finally:
            db.close()

        r.d.wait_status(jid, "RUNNING", timeout=60)
        # a change that writes no row of its own (a signal): its only row is its audit record
        lock = locked(r.d)
        try:
            code, body = r.api("admin", "POST", f"/v1/jobs/{jid}/kill?signal=USR1")
            seen = api_records(lock, f"POST /v1/jobs/{jid}/kill%")
            # the lock's own connection sees what is committed: a 2xx must be there
            assert not (200 <= code < 300 and not seen), \
                f"answered {code} ({body}), but its audit record is not committed"
            assert code >= 500 and "not saved" in json.dumps(body), (code, body)
        finally:
            unlock(lock)
        # the signal went (the job runs on: USR1 kills sleep... or not; what counts is the record):
        # its record is written once the database takes commits again, and outlives a SIGKILL
        db = read_db(r.d)
        try:
            wait_for(lambda: api_records(db, f"POST /v1/jobs/{jid}/kill%"),
                     "the signal's audit record was never written after the database came back", 70)
        finally:
            db.close()
        r.d.kill9()
        r.d.start()
        db = read_db(r.d)
        try:
            got = api_records(db, f"POST /v1/jobs/{jid}/kill%")
        finally:
            db.close()
        assert len(got) == 1, got
    finally:
        r.close()


def memory_volume_job(d, name):
    """A memory volume and a job using it that ends once /volumes/NAME/go exists: its id."""
    assert vol(d, "create", name, "--size=4MB", "--type=memory").returncode == 0
    jid = d.submit("sh", "-c", f"while [ ! -e /volumes/{name}/go ]; do sleep 0.1; done", volumes=[name])
    d.wait_status(jid, "RUNNING", timeout=60)
    return jid


def end_while_locked(d, name, jid):
    """Ends the job while no commit goes through: the volume's removal is not committed."""
    lock = locked(d)
    with open(os.path.join(d.state, "volumes", name, "mnt", "go"), "w"):
        pass
    deadline = time.time() + 90
    while time.time() < deadline and "its last job ended, but" not in d.log():
        time.sleep(0.5)
    assert "its last job ended, but" in d.log(), d.log()[-3000:]
    return lock


def test_a_memory_volume_whose_removal_was_not_committed_goes_later(fresh_daemon):
    d = fresh_daemon()
    jid = memory_volume_job(d, "mv")
    lock = end_while_locked(d, "mv", jid)
    try:
        assert os.path.ismount(os.path.join(d.state, "volumes", "mv", "mnt"))
    finally:
        unlock(lock)
    wait_for(lambda: "mv" not in listed(d), "the memory volume is still listed after the database came back", 90)
    assert not mount_points(os.path.join(d.state, "volumes")), "its tmpfs is still mounted"
    assert not os.path.exists(os.path.join(d.state, "volumes", "mv"))
    d.wait(jid)
    # and it stays gone after a restart (its row was deleted)
    d.kill9()
    d.start()
    assert "mv" not in listed(d)


def test_a_memory_volume_whose_removal_a_sigkill_cut_short_goes_at_start(fresh_daemon):
    d = fresh_daemon()
    jid = memory_volume_job(d, "mk")
    lock = end_while_locked(d, "mk", jid)
    d.kill9()
    unlock(lock)
    d.start()
    wait_for(lambda: "mk" not in listed(d), "the memory volume is still listed after a restart", 60)
    assert not mount_points(os.path.join(d.state, "volumes")), "its tmpfs is still mounted"
    assert d.wait(jid)["status"] in ("COMPLETED", "FAILED"), d.job(jid)
