"""The daemon stays up and bounded whatever a local caller sends (found in review)."""
import json
import os
import socket
import time

from conftest import UnixHTTPConnection


def raw_get(d, path):
    c = UnixHTTPConnection(d.sock)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, json.loads(body)


def test_non_utf8_input_in_error_messages_does_not_crash(daemon):
    """Percent-encoded invalid UTF-8 in ids, filters and paths gets a JSON error, and joblet lives on."""
    for path, status in (("/v1/jobs/%ff", 404), ("/v1/jobs?status=%ff", 400),
                         ("/%ff", 404), ("/v1/jobs/0/logs?stream=%ff", 404)):
        code, body = raw_get(daemon, path)
        assert code == status, (path, code, body)
        assert body["error"]["message"], body
    long_path = "a/" + "é" * 1000
    code, body = daemon.api("POST", "/v1/jobs", {"command": "true", "uploads": [{"path": long_path, "type": "dir"}]})
    assert code == 400, body
    assert daemon.proc.poll() is None and daemon.api("GET", "/v1/version")[0] == 200


def test_too_many_uploads_are_refused_quickly(daemon):
    """More than 100,000 upload entries are refused by count; duplicates are found in one pass."""
    before = daemon.job_dirs()
    ups = [{"path": f"d{i}", "type": "dir"} for i in range(100001)]
    code, body = daemon.api("POST", "/v1/jobs", {"command": "true", "uploads": ups}, timeout=60)
    assert code == 400 and "at most" in body["error"]["message"], body
    ups = [{"path": f"d{i}", "type": "dir"} for i in range(50000)] + [{"path": "d7", "type": "dir"}]
    code, body = daemon.api("POST", "/v1/jobs", {"command": "true", "uploads": ups}, timeout=60)
    assert code == 400 and "listed twice" in body["error"]["message"], body
    assert daemon.job_dirs() == before


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_followers_that_hang_up_release_their_connections(daemon):
    """Clients that close a log stream while waiting for output do not pin connections or fds."""
    jid = daemon.submit("sleep", "60")
    daemon.wait_status(jid, "RUNNING")
    base = fd_count(daemon.proc.pid)
    try:
        for _ in range(60):
            s = socket.socket(socket.AF_UNIX)
            s.connect(daemon.sock)
            s.sendall(f"GET /v1/jobs/{jid}/logs?follow=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            s.recv(4096)  # the answer's head: the follower is waiting now
            s.close()
        deadline = time.time() + 10
        while time.time() < deadline and fd_count(daemon.proc.pid) > base + 5:
            time.sleep(0.1)
        assert fd_count(daemon.proc.pid) <= base + 5, (base, fd_count(daemon.proc.pid))
    finally:
        daemon.api("POST", f"/v1/jobs/{jid}/stop")
        daemon.wait(jid)


def test_stop_of_a_finished_job_is_a_conflict(daemon):
    """Stopping a job that has ended answers 409 and leaves its record as it was."""
    jid = daemon.submit("true")
    job = daemon.wait(jid)
    code, body = daemon.api("POST", f"/v1/jobs/{jid}/stop")
    assert code == 409 and body["error"]["code"] == "conflict", body
    assert daemon.job(jid)["stopped_by"] is None and daemon.job(jid)["status"] == job["status"]


def test_second_daemon_on_the_same_state_is_refused(daemon, fresh_daemon):
    """A second joblet on a state directory in use exits at once and touches nothing."""
    d2 = fresh_daemon(start=False)
    d2.state = daemon.state
    try:
        d2.start()
        raise AssertionError("a second joblet started on the same state directory")
    except RuntimeError as e:
        assert "another joblet is using the state directory" in str(e), str(e)
    assert daemon.api("GET", "/v1/version")[0] == 200
