"""Performance-safety review: loop-thread work that grew with what a user had made, not with the
request (docs/performance.md, "What a loop turn looks at with an event stream open")."""
import datetime
import re
import socket
import threading
import time

from conftest import wait_for

LOOKED = re.compile(r"events: a turn looked at (\d+) workflows of (\d+) kept")


def later():
    return (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=300)).strftime("%Y-%m-%dT%H:%M:%SZ")


def workflow(d, name):
    """A workflow of one job that waits for a time far ahead (nothing runs), canceled: it has
    ended and is kept."""
    body = {"name": name, "jobs": [{"name": "a", "requires": [],
                                    "request": {"command": "true", "schedule_at": later()}}]}
    st, wf = d.api("POST", "/v1/workflows", body)
    assert st == 201, wf
    st, wf = d.api("POST", f"/v1/workflows/{wf['id']}/cancel")
    assert st == 200 and wf["state"] == "CANCELED", wf
    return wf["id"]


class Listener:
    """GET /v1/events held open, what it sends kept."""

    def __init__(self, sock):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(sock)
        self.s.sendall(b"GET /v1/events HTTP/1.1\r\nHost: joblet\r\n\r\n")
        self.got = b""
        self.t = threading.Thread(target=self.drain, daemon=True)
        self.t.start()

    def drain(self):
        try:
            while chunk := self.s.recv(65536):
                self.got += chunk
        except OSError:
            pass

    def close(self):
        self.s.shutdown(socket.SHUT_RDWR)
        self.s.close()
        self.t.join(timeout=10)


def test_an_event_stream_turn_looks_at_the_workflows_that_changed_alone(fresh_daemon):
    """While an event stream is open, each loop turn published the workflows whose state changed
    by looking at every workflow kept: one user's stream of one-job workflows, each canceled,
    made every later turn of the loop, and every request's, cost more for everyone (20,000 kept:
    GET /v1/version 184 -> 511 us a request with a stream open). A turn now looks at the workflows
    that changed alone. (Kept with their canceled jobs: one whose every job is deleted is dropped,
    test_workflow_gc.py.)"""
    d = fresh_daemon()
    kept = [workflow(d, f"w{i}") for i in range(40)]
    lis = Listener(d.sock)
    try:
        wait_for(lambda: b"200 OK" in lis.got, "the event stream's answer")
        seen = len(d.log())
        new = workflow(d, "changed")
        for _ in range(20):
            assert d.api("GET", "/v1/version")[0] == 200
        wait_for(lambda: new.encode() in lis.got and b"CANCELED" in lis.got, "the new workflow's events")
        time.sleep(0.2)
        looked = [(int(a), int(b)) for a, b in LOOKED.findall(d.log()[seen:])]
        # the new workflow's turns (made, then canceled) looked at it alone, the others never
        assert looked, "no turn published a workflow"
        assert all(n == 1 and k == len(kept) + 1 for n, k in looked), looked
        st, wfs = d.api("GET", "/v1/workflows")
        assert st == 200 and len(wfs["workflows"]) == len(kept) + 1
    finally:
        lis.close()


ARRAYS_LOOKED = re.compile(r"events: a turn looked at (\d+) arrays of (\d+) kept")


def test_an_event_stream_turn_looks_at_the_arrays_that_changed_alone(fresh_daemon):
    """The same for job arrays: each turn with a stream open looked at every array kept (a flag
    each) to publish those whose tasks changed. arrays.c now lists them as they change."""
    d = fresh_daemon()

    def canceled_array():
        st, a = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-3", "hold": True})
        assert st == 201, a
        assert d.api("POST", f"/v1/jobs/{a['id']}/cancel")[0] == 200
        return a["id"]

    kept = [canceled_array() for _ in range(40)]
    lis = Listener(d.sock)
    try:
        wait_for(lambda: b"200 OK" in lis.got, "the event stream's answer")
        seen = len(d.log())
        new = canceled_array()
        for _ in range(20):
            assert d.api("GET", "/v1/version")[0] == 200
        wait_for(lambda: new.encode() in lis.got and b"CANCELED" in lis.got, "the new array's events")
        time.sleep(0.2)
        looked = [(int(a), int(b)) for a, b in ARRAYS_LOOKED.findall(d.log()[seen:])]
        assert looked, "no turn published an array"
        assert all(n == 1 and k == len(kept) + 1 for n, k in looked), looked
    finally:
        lis.close()
