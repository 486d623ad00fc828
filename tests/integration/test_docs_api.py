"""docs/api.md (GPUs, volumes, runtimes, events, history, archive, attach, exec) and docs/batch.md's
table from Slurm's commands to rnx, as a new user types them (a Slurm and Docker user), on a
simulated DGX H100 (gpu.fixture): what differed from the docs.

a. api.md, events: "A client that reconnects with `Last-Event-ID: N` goes on after event N if
   joblet still holds it, else it gets `resync`." Ids started at 1 in every run of joblet: a
   console reconnecting after a restart with the id it had (Last-Event-ID: 5) was sent the new
   run's events from 6 on as the ones it missed, and never told to reload (no hello, no resync):
   its jobs' states stayed stale. An id this run had not given yet got a plain hello. Ids now go
   on across restarts (a run's first is its start in microseconds); any id joblet does not hold
   gets resync.
b. api.md, volumes: "400 names the field ... and what is accepted, including the machine's bound
   on the size". `{"size_mb": 0}` (also -5, 1.5, "64") was answered `size_mb: must be a whole
   number from 1 to 17592186044415`, a bound no volume takes (a filesystem volume takes 16 MB to
   15 TB); now the sizes of the volume's type, as for a size out of them.
c. api.md, exec (and POST /v1/jobs): "its fields ... are checked as a submission's are, a refusal
   naming the field". `"env": {"EPOCHS": 3}` was refused as `env: must be a string`: neither the
   variable nor what to write instead; now `env.EPOCHS: a number, not a string; ...` with field
   `env.EPOCHS` (as the body bounds name `env.BIG`).
d. api.md, archive: `?stat=1`'s `bytes` and `entries` were not those of the `GET`'s headers for a
   directory (0 and 1: no walk); the doc now says so, as Docker's `HEAD .../archive`.
e. batch.md, "From Slurm": nine rows' `rnx job run ... sh job.sh` (cleanup.sh, monitor.sh,
   post.sh) sent no file: each was accepted with a note and would fail `sh: can't open
   'job.sh'`; `rnx job run --wait sh job.sh` exited 2. The rows now send the script with
   `--upload=`, and run as written."""
import json
import os
import re
import shlex
import socket
import time

import pytest

from conftest import UnixHTTPConnection
from sse import Stream
# the docs' machine, and rnx run from a directory, as test_docs_batch has them
from test_docs_batch import DOCS, dgx, rnx_in  # noqa: F401 (dgx: the fixture)


def a_job_seen(d):
    """A job run while a stream is open (events are made only then), and its last event's id."""
    s = Stream(d.sock)
    assert s.next()[0] == "hello"
    jid = d.submit("true")
    while True:
        kind, data, i = s.next()
        if kind == "job" and data["id"] == jid and data["status"] == "COMPLETED":
            return jid, int(i)


def test_an_event_id_of_a_previous_run_gets_resync(dgx):
    """(a) A Last-Event-ID joblet's previous run gave, or one this run has not given, is answered
    resync; ids go on across a restart; an id it holds goes on after it."""
    jid, last = a_job_seen(dgx)
    assert last >= 10**15 and last < 2**53, last   # the run's start in microseconds
    near = Stream(dgx.sock, last_id=last - 1)
    kind, data, i = near.next()
    assert kind != "resync" and int(i) == last, (kind, data, i)
    for stale in (5, last + 1000):
        s = Stream(dgx.sock, last_id=stale)
        kind, data, _ = s.next()
        assert kind == "resync" and data["last_id"] == last, (stale, kind, data)
    dgx.stop()
    dgx.start()
    assert dgx.job(jid)["status"] == "COMPLETED"
    assert a_job_seen(dgx)[1] > last
    s = Stream(dgx.sock, last_id=last)   # the console of the previous run, reconnecting
    kind, data, _ = s.next()
    assert kind == "resync", (kind, data)
    # an id that is no number is refused, naming where it came from (it was taken as none: hello)
    code, body = dgx.api("GET", "/v1/events?last_id=abc")
    assert code == 400 and body["error"]["field"] == "last_id" and "'abc' is not an event id" in \
        body["error"]["message"], (code, body)


@pytest.mark.parametrize("size,given", [(0, "0 MB"), (-5, "'-5'"), (1.5, "'1.5'"), ("64", "'\"64\"'")])
@pytest.mark.parametrize("vtype,sizes", [("filesystem", "from 16 MB to 15 TB (e.g. 1GB)"),
                                         ("memory", "from 1 MB to 1 TB (e.g. 256MB)")])
def test_a_volume_size_refused_says_the_sizes_taken(dgx, size, given, vtype, sizes):
    """(b) Any size_mb refused names the sizes the volume's type takes."""
    status, body = dgx.api("POST", "/v1/volumes", {"name": "v", "size_mb": size, "type": vtype})
    assert status == 400, body
    err = body["error"]
    assert err["field"] == "size_mb"
    assert err["message"] == f"size_mb: {given} is not a size for a {vtype} volume; give {sizes}", err


def test_an_env_value_not_a_string_is_named(dgx):
    """(c) The variable is named, in a job's request and an exec's alike."""
    status, body = dgx.api("POST", "/v1/jobs", {"command": "true", "env": {"LR": "0.1", "EPOCHS": 3}})
    assert status == 400, body
    assert body["error"] == {"code": "invalid_argument", "field": "env.EPOCHS",
                             "message": "env.EPOCHS: a number, not a string; every value of env is a string "
                                        "(\"EPOCHS\": \"1\", not 1)"}
    p = rnx_in(dgx, "/", "job", "run", "sleep", "60")
    jid = p.stdout.strip()
    try:
        dgx.wait_status(jid, "RUNNING")
        s = socket.socket(socket.AF_UNIX)
        s.connect(dgx.sock)
        b = json.dumps({"command": "true", "env": {"DEBUG": True}}).encode()
        s.sendall(f"POST /v1/jobs/{jid}/exec HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
                  f"Content-Type: application/json\r\nContent-Length: {len(b)}\r\n\r\n".encode() + b)
        got = b""
        while b"}}" not in got:
            c = s.recv(4096)
            if not c:
                break
            got += c
        s.close()
        assert got.startswith(b"HTTP/1.1 400"), got
        err = json.loads(got.split(b"\r\n\r\n", 1)[1].strip().splitlines()[-1])["error"]
        assert err["field"] == "env.DEBUG" and err["message"].startswith("env.DEBUG: true or false, not a string"), err
    finally:
        rnx_in(dgx, "/", "job", "kill", jid)


def test_archive_stat_is_of_the_path_alone(dgx):
    """(d) As the doc now says: stat=1 does not walk; the GET's headers have the walk's totals."""
    jid = rnx_in(dgx, "/", "job", "run", "sh", "-c",
                 "mkdir -p /work/out; echo hi > /work/out/a.txt; ln -s a.txt /work/out/l; exec sleep 60").stdout.strip()
    try:
        dgx.wait_status(jid, "RUNNING")
        st = None
        for _ in range(100):
            status, st = dgx.api("GET", f"/v1/jobs/{jid}/archive?path=/work/out&stat=1")
            if status == 200:
                break
            time.sleep(0.05)
        assert st == {"path": "/work/out", "name": "out", "type": "dir", "bytes": 0, "entries": 1, "mode": "0755"}
        status, st = dgx.api("GET", f"/v1/jobs/{jid}/archive?path=/work/out/l&stat=1")
        assert st["type"] == "file" and st["bytes"] == 3 and st["entries"] == 1, st
        c = UnixHTTPConnection(dgx.sock)
        c.request("GET", f"/v1/jobs/{jid}/archive?path=/work/out")
        r = c.getresponse()
        r.read()
        assert r.status == 200
        assert (r.getheader("X-Joblet-Path-Bytes"), r.getheader("X-Joblet-Path-Entries")) == ("3", "3")
        text = open(os.path.join(DOCS, "api.md")).read()
        assert "`bytes` is a file's size,\n  0 for a directory, and `entries` is 1" in text
        # a PUT into a file is a bad parameter (400, as Docker's), not a path not found (404)
        for path, code in (("/work/out/a.txt", 400), ("/work/nothere", 404), ("/work/out/a.txt/x", 404)):
            c = UnixHTTPConnection(dgx.sock)
            c.request("PUT", f"/v1/jobs/{jid}/archive?path={path}", body=b"\0" * 1024,
                      headers={"Content-Type": "application/x-tar"})
            r = c.getresponse()
            body = json.loads(r.read())
            assert r.status == code and body["error"]["field"] == "path", (path, r.status, body)
        # a bad archive is the body's fault: no field named
        c = UnixHTTPConnection(dgx.sock)
        c.request("PUT", f"/v1/jobs/{jid}/archive?path=/work", body=os.urandom(4096),
                  headers={"Content-Type": "application/x-tar"})
        r = c.getresponse()
        body = json.loads(r.read())
        assert r.status == 400 and not body["error"].get("field"), (r.status, body)
    finally:
        rnx_in(dgx, "/", "job", "kill", jid)


def from_slurm_rows():
    text = open(os.path.join(DOCS, "batch.md")).read().split("## From Slurm", 1)[1]
    return [c for c in re.findall(r"`(rnx job run [^`]*)`", text) if re.search(r" sh \w+\.sh$", c)]


def test_the_from_slurm_rows_send_their_scripts(dgx, tmp_path):
    """(e) Every `rnx job run ... sh X.sh` of the table, 123 and 124 being jobs that completed,
    runs as written: accepted with no note, and the script runs."""
    rows = from_slurm_rows()
    assert len(rows) == 9, rows
    nums = []
    for _ in range(2):
        jid = rnx_in(dgx, tmp_path, "job", "run", "true").stdout.strip()
        dgx.wait(jid)
        nums.append(str(dgx.job(jid)["number"]))
    for f in ("job.sh", "cleanup.sh", "monitor.sh", "post.sh"):
        (tmp_path / f).write_text(f"echo {f} ran\n")
    for row in rows:
        argv = shlex.split(row.replace("123", nums[0]).replace("124", nums[1]))
        p = rnx_in(dgx, tmp_path, *argv[1:], timeout=200)
        assert p.returncode == 0 and "note" not in p.stderr, (row, p.returncode, p.stderr)
        ref = p.stdout.split()[0]
        if "--wait" in argv:
            continue
        w = rnx_in(dgx, tmp_path, "job", "wait", "-q", ref, timeout=200)
        script = argv[-1]
        if ":notok" in row:   # its dependency never met: canceled, as Slurm's DependencyNeverSatisfied
            assert dgx.job(ref)["status"] == "CANCELED", row
            continue
        assert w.returncode == 0, (row, w.stdout, w.stderr)
        one = ref + "_0" if any(a.startswith("--array") for a in argv) else ref
        log = rnx_in(dgx, tmp_path, "job", "log", one)
        assert log.stdout == f"{script} ran\n", (row, log.stdout, log.stderr)
