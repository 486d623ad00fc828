"""A hostile read of three changes (review of 9fe1af8 trash's thread, 7d72e2e jerr_busy, 2330224 a
failed requeue's late answer), through the real daemon.

- jerr_busy (common/err.h): a 503 with Retry-After means "nothing was done, send it again as it
  is"; rnx does (cli/client.c busy_again). An answer that reports what was done before it stopped
  (a delete-all whose first slices were committed) must not say so: rnx sent it again and printed
  only the second request's count.
- rnx's own line while it waits (busy_again) prints joblet's message as every other line of
  rnx prints joblet's text: escaped (a message holds what users control: an account's name from
  a certificate, a path), never a terminal's escape sequence as it is."""
import json
import os
import sqlite3
import subprocess
import tempfile
import threading
import time

from conftest import BUILD, DbLock, FakeJoblet, UnixHTTPConnection


def ended_jobs(d, n):
    """n CANCELED jobs, made fast: each waits for a held job, which is then canceled."""
    root = d.submit("true", hold=True)
    ids = [d.submit("true", after=[{"job": root, "state": "ok"}]) for _ in range(n)]
    assert d.api("POST", f"/v1/jobs/{root}/cancel")[0] == 200
    deadline = time.time() + 60
    while any(d.job(j)["status"] != "CANCELED" for j in ids[-3:]):
        assert time.time() < deadline, d.job(ids[-1])
        time.sleep(0.2)
    return [root] + ids


def test_a_delete_all_stopped_after_slices_were_deleted_says_no_retry_after(fresh_daemon):
    """DELETE /v1/jobs deletes a slice per turn, each slice committed; another process takes the
    database's write lock once the first slices are gone: the next slice's commit fails. The
    answer says how many were deleted then, and it is no "nothing was done, ask again": no
    Retry-After (before: Retry-After: 1, and rnx asked again and said "deleted N" of the second
    request only)."""
    d = fresh_daemon()
    n = 600
    ids = ended_jobs(d, n)
    dbpath = os.path.join(d.state, "joblet.db")
    reader = sqlite3.connect(dbpath, timeout=30, isolation_level=None, check_same_thread=False)
    got = {}

    def delete_all():
        c = UnixHTTPConnection(d.sock, timeout=120)
        c.request("DELETE", "/v1/jobs")
        r = c.getresponse()
        got["status"], got["retry_after"], got["body"] = r.status, r.getheader("Retry-After"), json.loads(r.read())
        c.close()

    t = threading.Thread(target=delete_all)
    lock = None
    try:
        t.start()
        deadline = time.time() + 30
        while True:  # the first slice committed: then the lock
            left = reader.execute("SELECT count(*) FROM jobs").fetchone()[0]
            if left < n + 1:
                break
            assert time.time() < deadline and t.is_alive(), got
            time.sleep(0.001)
        lock = sqlite3.connect(dbpath, timeout=30, isolation_level=None, check_same_thread=False)
        lock.execute("BEGIN IMMEDIATE")
        t.join(60)
    finally:
        if lock:
            lock.execute("ROLLBACK")
            lock.close()
        reader.close()
    assert not t.is_alive()
    assert got["status"] == 503, got  # (the lock came between two slices)
    msg = got["body"]["error"]["message"]
    assert "jobs were deleted, then" in msg, got
    assert got["retry_after"] is None, got
    # what is left is deleted by the next request, and what was deleted stays so
    code, ans = d.api("DELETE", "/v1/jobs", timeout=60)
    assert code == 200, ans
    assert [j for j in ids if d.api("GET", f"/v1/jobs/{j}")[0] != 404] == []


def test_a_delete_while_another_process_holds_the_lock_is_busy_and_rnx_asks_again(fresh_daemon):
    """A job's delete while another process (a backup, a sqlite3 shell) holds the database's write
    lock: nothing is deleted, and it is said as a submission's is (503 "try again", Retry-After),
    not 500 "internal"; rnx job delete asks again and deletes it once the lock goes."""
    d = fresh_daemon()
    jid = d.submit("true")
    assert d.wait(jid, 30)["status"] == "COMPLETED"
    lock = DbLock(d.state)
    try:
        c = UnixHTTPConnection(d.sock, timeout=60)
        c.request("DELETE", f"/v1/jobs/{jid}")
        r = c.getresponse()
        status, retry_after, body = r.status, r.getheader("Retry-After"), json.loads(r.read())
        c.close()
        assert (status, retry_after) == (503, "1"), (status, retry_after, body)
        assert "nothing was deleted" in body["error"]["message"], body
        assert d.api("GET", f"/v1/jobs/{jid}")[0] == 200
        threading.Timer(3, lock.release).start()
        p = d.rnx("job", "delete", jid, timeout=120)
        assert p.returncode == 0, p.stderr
        assert "is busy" in p.stderr, p.stderr
    finally:
        if not lock.gone.wait(10):
            lock.release()
    assert d.api("GET", f"/v1/jobs/{jid}")[0] == 404


def test_rnx_says_a_busy_answers_message_escaped():
    evil = "busy \x1b]0;owned\x07\x1b[2J now"
    busy = json.dumps({"error": {"code": "unavailable", "message": evil}}).encode()
    gone = json.dumps({"error": {"code": "not_found", "message": "no job 'x'"}}).encode()
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "fake.sock")
        f = FakeJoblet(sock, [(503, [b"Retry-After: 1"], busy), (404, [], gone)])
        try:
            p = subprocess.run([os.path.join(BUILD, "rnx"), "--socket", sock, "job", "status", "x"],
                               capture_output=True, timeout=60)
        finally:
            f.close()
    assert f.n == 2, (f.n, p.stderr)
    assert b"is busy" in p.stderr, p.stderr
    assert b"\x1b" not in p.stderr and b"\x07" not in p.stderr, p.stderr
