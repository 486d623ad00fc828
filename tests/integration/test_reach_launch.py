"""Paths of the daemon's launch and in-job code that no test reached (a gcov run of the whole
suite, 2026-12-05, scripts/coverage_by_file.py): untested behaviour is where bugs hide, so each
is reached here and its answer checked.

- the refusals of an exec, an attach and a copy (the method, the upgrade, the body, the path, a
  job held, suspended or ended): the status, and a message that names the field and what would
  be accepted;
- a copy into a job over jobs.max_upload_bytes (its files' sizes, or the archive's own bytes): 413
  naming it;
- a copy's path with '..' in it is what a root resolves (it dropped one directory too many);
- an attach to a job canceled before it started: joblet says why, and the exit code;
- uploads: a second PUT of one under way (409; the first goes on, nothing lost); a workflow's
  files sent two ways, over jobs.max_upload_bytes together, or with a content_b64 that does not
  match its size (refused whole, nothing made: it was made, and stuck PENDING);
- a shim killed under its running job: the job ends FAILED ("lost"), its error naming a log only
  where there is one, and nothing of it runs on;
- joblet stopped with a terminal, an exec and a copy open (its body waiting for room in the
  helper's pipe): each ended, joblet exits 0 (it aborted in libmicrohttpd), the job runs on;
- a cgroup of a job the database does not hold, a process in it: killed and removed at the next
  start;
- a terminal job waiting for its attach across a restart is seen to start (the shim's file read
  when the job is asked for: no pipe from that shim);
- an attach, an exec and a copy whose clients go before the answer give back the descriptors
  they took (joblet_connection_files);
- an owner's /work image that does not mount: 500 saying what an admin does, nothing left on it,
  and a new one made once it is removed;
- a requeue the database does not take (another process's lock): 503, the job runs on untouched;
- a gVisor job requeued runs again, in a sandbox of its own;
- over TLS, the roles: a reader's certificate watches its own job's terminal, not types; a
  maintainer neither execs into nor copies into another user's job (403 each, nothing done);
- a runsc that cannot serve (its --version failing, a platform it lacks, kvm without /dev/kvm):
  gVisor unavailable, the version and every gVisor job's refusal say why.

One daemon for the module (two of its tests stop and start it again); the tests that need a
configuration of their own (runsc, TLS, a small upload bound, a longer attach wait) have one each."""
import base64
import glob
import hashlib
import http.client
import io
import json
import os
import signal
import socket
import subprocess
import tarfile
import time
import uuid

import pytest

from conftest import Daemon, UnixHTTPConnection, api_as, need_root, need_setpriv, wait_for
from test_terminal import frames, read_head

OTHER = (4397, 4397)   # a user with no account, for its own /work image

@pytest.fixture(scope="module")
def d():
    need_root()
    need_setpriv()
    dm = Daemon("jobs:\n  attach_wait_s: 1\n").start()
    yield dm
    dm.cleanup()


@pytest.fixture(scope="module")
def work_job(d):
    """A running job (root's) with /work/sub/ and /work/file, a terminal and stdin."""
    jid = d.submit("sh", "-c", "mkdir -p /work/sub && echo in-file > /work/file && touch /work/.ready && "
                   "exec sleep 600", tty=True, stdin=True)
    d.wait_status(jid, "RUNNING")
    wait_for(lambda: os.path.exists(os.path.join(d.work(jid), ".ready")), "the job's /work made")
    yield jid
    d.api("POST", f"/v1/jobs/{jid}/stop")


def request(d, method, path, body=None, headers=None):
    """One request as root with the headers given: (status, the answer's JSON or None)."""
    c = UnixHTTPConnection(d.sock, timeout=60)
    try:
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        c.request(method, path, body=data, headers=headers or {})
        r = c.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None)
    finally:
        c.close()


UPGRADE = {"Connection": "Upgrade", "Upgrade": "tcp", "Content-Type": "application/json"}


def head_only(d, method, path, length, headers=()):
    """A request's head alone, with Content-Length: length, and the answer joblet gives at the head
    (before any byte of the body): (status, JSON)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(d.sock)
    try:
        s.sendall((f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n" +
                   "".join(h + "\r\n" for h in headers) + "\r\n").encode())
        r = http.client.HTTPResponse(s)
        r.begin()
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None)
    finally:
        s.close()


def tar_of(files):
    """A tar of {name: bytes}."""
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w") as t:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    return b.getvalue()


def error_of(ans):
    return ans["error"]["message"], ans["error"].get("field")


def test_exec_refusals_name_what_is_accepted(d, work_job):
    st, ans = request(d, "GET", f"/v1/jobs/{work_job}/exec")
    assert st == 405 and "exec is POST /v1/jobs/{id}/exec" in error_of(ans)[0], ans
    st, ans = request(d, "POST", f"/v1/jobs/{work_job}/exec", {"command": "true"},
                      {"Content-Type": "application/json"})
    assert st == 400 and "Upgrade: tcp" in error_of(ans)[0], ans
    st, ans = request(d, "POST", f"/v1/jobs/{work_job}/exec", ["true"], UPGRADE)
    assert st == 400 and error_of(ans)[0].startswith("the exec body must be a JSON object: {\"command\""), ans
    st, ans = request(d, "POST", f"/v1/jobs/{work_job}/exec", {"command": "true", "user": "root"}, UPGRADE)
    msg, field = error_of(ans)
    assert st == 400 and field == "user" and "accepted fields: command, args, env, workdir, tty, stdin" in msg, ans
    # none of them ran anything in the job
    assert not [e for e in d.events(work_job) if e[0] == "exec"], d.events(work_job)


def test_attach_refusals_name_what_is_accepted(d, work_job):
    base = f"/v1/jobs/{work_job}/attach"
    st, ans = request(d, "PUT", base)
    assert st == 405 and "POST /v1/jobs/{id}/attach" in error_of(ans)[0] and "websocket" in error_of(ans)[0], ans
    ws = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
          "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    st, ans = request(d, "GET", base, headers={**ws, "Origin": "http://example.com"})
    assert st == 403 and "rnx console" in error_of(ans)[0], ans
    for bad in ({"Sec-WebSocket-Version": "8"}, {"Sec-WebSocket-Key": "c2hvcnQ="}):
        st, ans = request(d, "GET", base, headers={**ws, **bad})
        assert st == 400 and "Sec-WebSocket-Version: 13 and a Sec-WebSocket-Key of 16 bytes" in error_of(ans)[0], \
            (bad, ans)
    assert not [e for e in d.events(work_job) if e[0] == "attached"], d.events(work_job)


def test_copy_refusals_name_the_path_and_what_is_accepted(d, work_job):
    base = f"/v1/jobs/{work_job}/archive"
    st, ans = request(d, "DELETE", base + "?path=/work")
    assert st == 405 and "use GET (copy out of the job) or PUT (copy into it)" in error_of(ans)[0], ans
    for q, says in (("", "say which path in the job"), ("?path=work/file", "is not an absolute path"),
                    ("?path=/", "the job's whole root is not copied"),
                    ("?path=/work/..", "the job's whole root is not copied")):
        st, ans = request(d, "GET", base + q)
        msg, field = error_of(ans)
        assert st == 400 and field == "path" and says in msg and "e.g. /work" in msg, (q, ans)
    # what is not there: 404 naming the path, before a byte of an archive
    for q in ("?path=/work/missing", "?path=/work/missing&stat=1"):
        st, ans = request(d, "GET", base + q)
        msg, field = error_of(ans)
        assert st == 404 and field == "path" and "/work/missing: No such file or directory" in msg, (q, ans)
    # the root may be looked at (stat), not copied
    st, ans = request(d, "GET", base + "?path=/&stat=1")
    assert st == 200 and ans["type"] == "dir", ans


def test_a_copy_path_with_dot_dot_is_resolved_as_a_root_would(d, work_job):
    """/work/sub/../file is /work/file (it was /file: '..' dropped two directories)."""
    for path in ("/work/sub/../file", "/work/./sub//../file", "/tmp/../work/sub/../file"):
        st, ans = request(d, "GET", f"/v1/jobs/{work_job}/archive?path={path}&stat=1")
        assert st == 200 and ans["path"] == "/work/file" and ans["type"] == "file", (path, ans)
    c = UnixHTTPConnection(d.sock, timeout=60)
    c.request("GET", f"/v1/jobs/{work_job}/archive?path=/work/sub/../file")
    r = c.getresponse()
    raw = r.read()
    c.close()
    assert r.status == 200, raw[:300]
    with tarfile.open(fileobj=io.BytesIO(raw)) as t:
        assert t.extractfile(t.getmembers()[0]).read() == b"in-file\n"


def test_a_copy_in_over_jobs_max_upload_bytes_is_413_naming_it(d, work_job):
    """The helper refuses at the entry's header (its size declared): 413 with its words (the
    helper's EFBIG, which no test reached: rnx checks the size before it sends)."""
    ti = tarfile.TarInfo("huge.bin")
    ti.size = 300 << 20   # over the default jobs.max_upload_bytes, 256MB; its bytes never sent
    head = ti.tobuf(format=tarfile.USTAR_FORMAT) + bytes(64 << 10)
    st, ans = request(d, "PUT", f"/v1/jobs/{work_job}/archive?path=/work", head,
                      {"Content-Type": "application/x-tar"})
    assert st == 413 and f"the files hold more than {256 << 20} bytes (jobs.max_upload_bytes)" in \
        error_of(ans)[0], ans
    assert not os.path.lexists(os.path.join(d.work(work_job), "huge.bin"))


def test_a_copy_in_whose_archive_outgrows_the_bound_is_413(fresh_daemon):
    """The archive's bytes beyond what its files may hold (jobs.max_upload_bytes, an eighth more
    and 16 MiB for the tar's own headers): 413 once joblet stops reading it, and the file after
    the bound is not written. Its bytes here are pax headers' (no file's: the helper's own bound
    does not see them)."""
    d = fresh_daemon("jobs:\n  max_upload_bytes: 4KB\n")
    jid = d.submit("sh", "-c", "exec sleep 600")
    d.wait_status(jid, "RUNNING")
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.PAX_FORMAT) as t:
        for i in range(20):   # (libarchive takes a pax header of up to 1 MiB)
            ti = tarfile.TarInfo(f"d{i}")
            ti.type = tarfile.DIRTYPE
            ti.pax_headers = {"comment": "x" * 950_000}
            t.addfile(ti)
        ti = tarfile.TarInfo("small.txt")
        ti.size = 3
        t.addfile(ti, io.BytesIO(b"abc"))
    st, ans = request(d, "PUT", f"/v1/jobs/{jid}/archive?path=/work", b.getvalue(),
                      {"Content-Type": "application/x-tar"})
    assert st == 413 and "the archive is larger than jobs.max_upload_bytes (4096 bytes) allows" in \
        error_of(ans)[0], ans
    assert not os.path.lexists(os.path.join(d.work(jid), "small.txt"))


def test_copy_of_a_job_not_started_suspended_or_ended(d):
    """A held job has not started: nothing is copied out of it or into it, as for a queued one
    (it was: its /work copied out, and written into before its command ran)."""
    held = d.submit("sh", "-c", "echo later > /work/x", hold=True)
    assert d.job(held)["status"] == "HELD"
    st, ans = request(d, "GET", f"/v1/jobs/{held}/archive?path=/work")
    assert st == 409 and "has not started: it has no files to copy yet" in error_of(ans)[0], ans
    st, ans = head_only(d, "PUT", f"/v1/jobs/{held}/archive?path=/work", len(tar_of({"planted": b"x"})))
    assert st == 409 and "has not started" in error_of(ans)[0], ans
    d.api("POST", f"/v1/jobs/{held}/cancel")
    # a suspended job: its /work is copied, its root is not, and the answer does not say it ended
    jid = d.submit("sh", "-c", "echo frozen > /work/f && exec sleep 600")
    d.wait_status(jid, "RUNNING")
    wait_for(lambda: os.path.exists(os.path.join(d.work(jid), "f")), "the job's /work/f")
    st, ans = d.api("POST", f"/v1/jobs/{jid}/suspend")
    assert st == 200, ans
    d.wait_status(jid, "SUSPENDED")
    st, ans = request(d, "GET", f"/v1/jobs/{jid}/archive?path=/etc/hostname&stat=1")
    msg = error_of(ans)[0]
    assert st == 409 and "only its /work can be copied" in msg and "ended" not in msg and "SUSPENDED" in msg, ans
    st, ans = request(d, "GET", f"/v1/jobs/{jid}/archive?path=/work/f&stat=1")
    assert st == 200 and ans["bytes"] == 7, ans
    d.api("POST", f"/v1/jobs/{jid}/stop")
    done, _, _ = d.run("sh", "-c", "echo kept > /work/kept")
    st, ans = request(d, "GET", f"/v1/jobs/{done['id']}/archive?path=/etc/hostname&stat=1")
    msg = error_of(ans)[0]
    assert st == 409 and "has ended and its root went with it" in msg and "only its /work can be copied" in msg, ans
    st, ans = request(d, "GET", f"/v1/jobs/{done['id']}/archive?path=/work/kept&stat=1")
    assert st == 200 and ans["bytes"] == 5, ans


def attach(d, jid):
    """An attach over joblet's socket as root: the socket, once answered 101."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(d.sock)
    s.sendall(f"POST /v1/jobs/{jid}/attach HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
              f"Content-Length: 0\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        assert c, head
        head += c
    assert head.startswith(b"HTTP/1.1 101"), head
    return s


def test_an_attach_to_a_job_that_ends_before_it_starts_says_why(d):
    """The attach waits for the job's terminal; the job is canceled first: joblet says so on
    stderr, then the exit frame with the code a client exits with (1: it never ran)."""
    jid = d.submit("sh", "-c", "echo never", tty=True, hold=True)
    s = attach(d, jid)
    try:
        wait_for(lambda: any(e[0] == "attached" for e in d.events(jid)), "the attach recorded")
        st, ans = d.api("POST", f"/v1/jobs/{jid}/cancel")
        assert st == 200, ans
        got = frames(s)
    finally:
        s.close()
    err = b"".join(p for ch, p in got if ch == 2).decode()
    assert f"joblet: job {jid[:8]} ended (CANCELED" in err and "before its terminal could be attached" in err, got
    assert got[-1] == (4, 1), got
    assert not [p for ch, p in got if ch == 1], got   # nothing of the job's: it never ran


def staged_bytes(d):
    """The bytes of the files of uploads still arriving (.incoming-* under the state directory:
    <state>/jobs, or its owner's /work filesystem under jobs.work_quota)."""
    n = 0
    for dp, _, fs in os.walk(d.state):
        if "/.incoming-" in dp:
            n += sum(os.lstat(os.path.join(dp, f)).st_size for f in fs)
    return n


def incoming_dirs(d):
    """The directories of uploads still arriving, wherever they are staged."""
    return [os.path.join(dp, x) for dp, ds, _ in os.walk(d.state) for x in ds if x.startswith(".incoming-")]


def test_a_second_put_of_an_upload_under_way_is_409_and_the_first_goes_on(d):
    data = bytes(range(256)) * 40   # 10240 bytes
    st, ans = d.api("POST", "/v1/jobs", {"command": "sh", "args": ["-c", "wc -c < a.bin; sha256sum < a.bin"],
                                         "uploads": [{"path": "a.bin", "size": len(data)}]})
    assert st == 202, ans
    path = ans["upload"]["path"]
    first = socket.socket(socket.AF_UNIX)
    first.settimeout(60)
    first.connect(d.sock)
    try:
        first.sendall(f"PUT {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data[:100])
        # the first PUT is under way once its first bytes are written (a second PUT before would
        # be the one under way)
        wait_for(lambda: staged_bytes(d) >= 100, "the first PUT's bytes staged")
        st, ans = head_only(d, "PUT", path, len(data))
        assert st == 409 and f"upload {path.rsplit('/', 1)[1]} is already being sent" in error_of(ans)[0], ans
        first.sendall(data[100:])
        r = http.client.HTTPResponse(first)
        r.begin()
        job = json.loads(r.read())
        assert r.status == 201, job
    finally:
        first.close()
    done = d.wait(job["id"])
    assert done["status"] == "COMPLETED" and d.output(job["id"]) == \
        f"{len(data)}\n{hashlib.sha256(data).hexdigest()}  -\n", d.output(job["id"])


def test_a_workflows_uploads_one_way_and_within_the_limit_together(d):
    from test_workflows import job
    before = len(d.api("GET", "/v1/workflows")[1]["workflows"])
    streamed = job("a", "true", uploads=[{"path": "x", "size": 5}])
    inline = job("b", "true", uploads=[{"path": "y", "content_b64": base64.b64encode(b"hi").decode()}])
    st, ans = d.api("POST", "/v1/workflows", {"name": "two-ways", "jobs": [streamed, inline]})
    msg, field = error_of(ans)
    assert st == 400 and field == "jobs[1].request.uploads", ans
    assert "job 'b': uploads: 'y' carries content_b64, but this workflow's files follow the request" in msg, ans
    # each job within jobs.max_upload_bytes (256MB), the two together over it
    big = 150 << 20
    st, ans = d.api("POST", "/v1/workflows", {"name": "too-big", "jobs": [
        job("a", "true", uploads=[{"path": "x", "size": big}]), job("b", "true", uploads=[{"path": "y", "size": big}])]})
    assert st == 413, ans
    assert f"the workflow's jobs upload {2 * big} bytes together, over the limit of {256 << 20} bytes " \
           "(jobs.max_upload_bytes)" in error_of(ans)[0], ans
    # nothing made of either
    assert len(d.api("GET", "/v1/workflows")[1]["workflows"]) == before
    assert not incoming_dirs(d)


def test_a_workflows_inline_upload_that_does_not_match_its_size_is_refused_whole(d):
    """Refused as a job's is (400 naming the field), before anything is made; it was accepted
    (201), and the workflow stayed PENDING for ever, its jobs never made ("DELETED")."""
    from test_workflows import job
    before = len(d.api("GET", "/v1/workflows")[1]["workflows"])
    for up, says in (({"path": "x", "size": 5, "content_b64": "aGk="}, "size 5 does not match its content_b64 (2 bytes)"),
                     ({"path": "x", "content_b64": "a!=="}, "content_b64 is not valid base64")):
        st, ans = d.api("POST", "/v1/workflows", {"name": "bad-b64", "jobs": [
            job("ok", "true"), job("a", "true", requires=[("ok", "COMPLETED")], uploads=[up])]})
        msg, field = error_of(ans)
        assert st == 400 and field == "jobs[1].request.uploads" and says in msg, (up, ans)
        st, ans = d.api("POST", "/v1/jobs", {"command": "true", "uploads": [up]})
        assert st == 400 and error_of(ans)[1] == "uploads" and says in error_of(ans)[0], (up, ans)
    assert len(d.api("GET", "/v1/workflows")[1]["workflows"]) == before
    # content_b64 null is none, in a workflow as in a job: its bytes follow (a PUT)
    up = {"path": "x", "size": 3, "content_b64": None}
    st, ans = d.api("POST", "/v1/workflows", {"name": "null-b64", "jobs": [job("a", "cat x", uploads=[up])]})
    assert st == 202, ans
    st, wf = request(d, "PUT", ans["upload"]["path"], b"abc")
    assert st == 201, wf
    jid = wf["jobs"][0]["job_id"]
    assert d.wait(jid)["status"] == "COMPLETED" and d.output(jid) == "abc", d.output(jid)


def cgroup_procs(d, jid):
    """The processes left in the job's cgroups, in every hierarchy that has one."""
    rel = os.path.join(d.cgroup_root, d.job_cgroup(jid))
    out = set()
    for base in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory"):
        for dp, _, fs in os.walk(os.path.join(base, rel)):
            if "cgroup.procs" in fs:
                try:
                    out |= set(open(os.path.join(dp, "cgroup.procs")).read().split())
                except OSError:
                    pass
    return out


def test_a_shim_killed_under_its_job_ends_it_lost_and_nothing_runs_on(d):
    mark = "reach-lost-" + uuid.uuid4().hex[:8]
    jid = d.submit("sh", "-c", f"sleep 600; echo {mark}")
    job = d.wait_status(jid, "RUNNING")
    wait_for(lambda: cgroup_procs(d, jid), "the job's processes in its cgroup")
    os.kill(job["shim_pid"], signal.SIGKILL)
    done = d.wait(jid)
    assert done["status"] == "FAILED" and done["end_reason"] == "lost", done
    # it names its log only where there is one (it named a shim.log that did not exist)
    log = os.path.join(d.state, "jobs", jid, "shim.log")
    said = f"the job's shim (pid {job['shim_pid']}) ended without recording how the job ended"
    if os.path.exists(log):
        assert done["error"] == f"{said}; see {log}", done
    else:
        assert done["error"].startswith(said + " and wrote no shim.log: it was killed (SIGKILL"), done
    # nothing of the job runs on: its processes went with it
    wait_for(lambda: not cgroup_procs(d, jid), "the job's cgroups empty")
    assert not [p for p in os.listdir("/proc") if p.isdigit() and mark in open_cmdline(p)]


def open_cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def upgraded(d, method, path, body=b"", length=None):
    """A request asking Upgrade: tcp, its body sent whole (or its first bytes, with length the
    Content-Length): the socket and the answer's status line."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(d.sock)
    s.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
              f"Content-Type: application/json\r\nContent-Length: {len(body) if length is None else length}\r\n"
              f"\r\n".encode() + body)
    return s


def read_status(s):
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        assert c, head
        head += c
    return int(head.split(b" ", 2)[1])


def exec_helpers(jid):
    """The pids of joblet's exec helpers (joblet-exec JOB SHIM_PID) at work for job jid."""
    return [p for p in os.listdir("/proc") if p.isdigit() and open_cmdline(p).startswith(f"joblet-exec\0{jid}\0")]


def test_joblet_stopped_with_a_terminal_an_exec_and_a_copy_open_ends_each(d, work_job):
    """Each is ended (the client's stream closes, the helpers go), joblet exits cleanly, and the
    job runs on, adopted again at the next start."""
    term = attach(d, work_job)
    exe = upgraded(d, "POST", f"/v1/jobs/{work_job}/exec", json.dumps({"command": "sleep", "args": ["300"]}).encode())
    assert read_status(exe) == 101
    wait_for(lambda: exec_helpers(work_job), "the exec's helper at work")
    # a copy into the job, its body a part sent: its helper waits for the rest
    tar = tar_of({"big": os.urandom(4 << 20)})
    cp = socket.socket(socket.AF_UNIX)
    cp.settimeout(60)
    cp.connect(d.sock)
    cp.sendall(f"PUT /v1/jobs/{work_job}/archive?path=/work HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-tar\r\n"
               f"Content-Length: {len(tar)}\r\n\r\n".encode() + tar[:4096])
    copies = wait_for(lambda: [p for p in os.listdir("/proc") if p.isdigit() and
                               open_cmdline(p).startswith("joblet-copy\0in\0")], "the copy's helper at work")
    # the helper stopped, the body sent until joblet reads no more: its pipe to the helper is full,
    # and the connection waits for room (suspended: libmicrohttpd aborted a stop with one so)
    for p in copies:
        os.kill(int(p), signal.SIGSTOP)
    cp.setblocking(False)
    sent, idle = 4096, 0
    while sent < len(tar) and idle < 20:
        try:
            sent += cp.send(tar[sent:sent + 65536])
            idle = 0
        except BlockingIOError:
            idle += 1
            time.sleep(0.1)
    assert sent < len(tar), "joblet read the whole body with its helper stopped"
    try:
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(timeout=60) == 0, d.log()[-3000:]
        for s in (term, exe):
            s.settimeout(30)
            while s.recv(65536):
                pass   # (what was under way, then the end of the stream: no hang)
        assert not exec_helpers(work_job)
        wait_for(lambda: not [p for p in copies if os.path.exists(f"/proc/{p}") and
                              open(f"/proc/{p}/stat").read().split()[2] != "Z"], "the copy's helper ended")
    finally:
        for p in copies:   # (ended by joblet: SIGKILL ends a stopped process; else by this)
            try:
                os.kill(int(p), signal.SIGKILL)
            except ProcessLookupError:
                pass
        for s in (term, exe, cp):
            s.close()
        d.start()
    assert d.job(work_job)["status"] == "RUNNING"
    # what the copy wrote is the job's (a copy stopped half way leaves it, docs/api.md); no more
    assert not os.path.exists(os.path.join(d.work(work_job), "big")) or \
        os.path.getsize(os.path.join(d.work(work_job), "big")) < (1 << 20)


def test_a_cgroup_of_a_job_the_database_does_not_hold_is_killed_and_removed_at_the_start(d):
    """As a shim forked by a joblet killed before it committed the job leaves it: its process in
    the job's cgroups (cgroup2's and v1 pids'), no row. The next start kills it and removes them."""
    d.stop()
    ghost = str(uuid.uuid4())
    cgs = [os.path.join(base, d.cgroup_root, "user-0", ghost) for base in ("/sys/fs/cgroup/unified",
                                                                          "/sys/fs/cgroup/pids")
           if os.path.isdir(os.path.join(base, d.cgroup_root))]
    assert cgs, "no cgroup tree of the daemon's"
    p = subprocess.Popen(["sleep", "300"])
    try:
        for cg in cgs:
            os.makedirs(cg)
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(p.pid))
        d.start()
        assert p.wait(timeout=60) == -signal.SIGKILL
        assert not [cg for cg in cgs if os.path.exists(cg)]
        assert f"cgroup of job {ghost}, which the database does not hold: 1 processes killed" in d.log()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for cg in cgs:
            if os.path.isdir(cg):
                os.rmdir(cg)


FAKE_RUNSC = """#!/bin/sh
case "$1" in
--version) echo "runsc version 0.0~20240101.0"; echo "spec: 1.1.0" ;;
flags) echo "flags: no such subcommand" >&2; exit 2 ;;
--help) echo "Usage: runsc <flags> <subcommand> <subcommand args>"; echo "  -platform string  ptrace, kvm" ;;
*) exit 1 ;;
esac
"""


@pytest.mark.parametrize("script,platform,why", [
    ("#!/bin/sh\necho 'runsc: cannot start: broken install'\nexit 3\n", "",
     "--version failed: runsc: cannot start: broken install"),
    (FAKE_RUNSC, "systrap", "isolation.platform is systrap, which runsc 0.0~20240101.0 does not have"),
    (FAKE_RUNSC, "kvm", "isolation.platform is kvm, but /dev/kvm: "),
])
def test_a_runsc_that_cannot_serve_is_named_and_its_jobs_refused(fresh_daemon, tmp_path, script, platform, why):
    """isolation.runsc and isolation.platform as an admin sets them: gVisor is unavailable, the
    version says why, and a gVisor job is refused saying so; native jobs run."""
    if platform == "kvm" and os.access("/dev/kvm", os.R_OK | os.W_OK):
        pytest.skip("/dev/kvm is usable here")
    runsc = tmp_path / "runsc"
    runsc.write_text(script)
    runsc.chmod(0o755)
    os.chmod(tmp_path, 0o755)
    d = fresh_daemon(f"isolation:\n  runsc: {runsc}\n" + (f"  platform: {platform}\n" if platform else ""))
    st, v = d.api("GET", "/v1/version")
    gv = next(m for m in v["isolation"]["modes"] if m["name"] == "gvisor")
    assert gv["available"] is False and why in gv["why"] and gv["runsc"] == str(runsc), gv
    assert not gv["why"][-1].isspace(), gv   # (a failing runsc's output ended it with its newline)
    st, ans = d.api("POST", "/v1/jobs", {"command": "true", "isolation": "gvisor"})
    assert st == 400 and ans["error"]["field"] == "isolation" and \
        ans["error"]["message"] == f"isolation: gvisor is not available on this machine: {gv['why']}", ans
    job, _, _ = d.run("true")
    assert job["status"] == "COMPLETED", job


def test_streams_whose_clients_go_before_the_answer_give_back_what_they_took(d, work_job):
    """An attach, an exec and a copy whose clients close as soon as they asked: what each took of
    the connections' descriptors is given back (a leak would leave the gauge up, and in the end
    refuse every terminal of the machine). (Here joblet upgrades them before it sees the close:
    the end of a connection before its 101, attach.c's free_unused, is not reached.)"""
    base = d.metric("joblet_connection_files")
    assert base is not None
    body = json.dumps({"command": "true"}).encode()
    for _ in range(10):
        for s in (upgraded(d, "POST", f"/v1/jobs/{work_job}/attach"),
                  upgraded(d, "POST", f"/v1/jobs/{work_job}/exec", body),
                  upgraded(d, "GET", f"/v1/jobs/{work_job}/archive?path=/work/file")):
            s.close()
    wait_for(lambda: d.metric("joblet_connection_files") == base, "the descriptors given back")
    # and a terminal still attaches
    s = attach(d, work_job)
    s.close()


def test_a_gvisor_job_requeued_runs_again_in_a_sandbox_of_its_own(d):
    """A requeued gVisor job's next run lets go of its run before's sandbox uid and takes one again
    (job_launch's launch: the branch no test reached)."""
    modes = d.api("GET", "/v1/version")[1]["isolation"]["modes"]
    if not any(m["name"] == "gvisor" and m["available"] for m in modes):
        pytest.skip("gVisor is not available here")
    jid = d.submit("sh", "-c", "echo run-$(id -u); exec sleep 600", isolation="gvisor")
    d.wait_status(jid, "RUNNING", timeout=120)
    wait_for(lambda: "run-" in d.output(jid), "the first run's line", timeout=120)
    st, ans = d.api("POST", f"/v1/jobs/{jid}/requeue")
    assert st == 200, ans
    wait_for(lambda: d.output(jid).count("run-") == 2, "the second run's line", timeout=120)
    job = d.job(jid)
    assert job["status"] == "RUNNING" and job["preemptions"] == 1, job
    # both runs as the job's uid in their sandbox, the first ended by the requeue, the second started
    assert d.output(jid) == f"run-{job['uid']}\n" * 2, d.output(jid)
    assert [e for e, _ in d.events(jid)].count("started") == 2, d.events(jid)
    d.api("POST", f"/v1/jobs/{jid}/stop")
    assert d.wait(jid, timeout=120)["status"] == "STOPPED"


def test_a_requeue_the_database_does_not_take_leaves_the_job_running(d):
    """A requeue's intent is committed before its stop is sent: with joblet's database locked by
    another process (a backup), 503 with Retry-After, and the job runs on untouched (nothing was
    sent; not left half requeued). Once the lock is gone the requeue goes through."""
    from conftest import DbLock
    jid = d.submit("sh", "-c", "echo run; exec sleep 600")
    d.wait_status(jid, "RUNNING")
    wait_for(lambda: "run" in d.output(jid), "the run's line")
    lock = DbLock(d.state)
    try:
        st, retry, ans = d.api_retry_after("POST", f"/v1/jobs/{jid}/requeue")
    finally:
        lock.release()
    msg = ans["error"]["message"]
    assert st == 503 and retry is not None and "database is locked" in msg and \
        msg.endswith("; nothing was requeued: the job runs on as it was; try again in a moment"), (st, retry, ans)
    job = d.job(jid)
    assert job["status"] == "RUNNING" and not job["requeuing"] and job["preemptions"] == 0, job
    assert "requeued" not in [e for e, _ in d.events(jid)], d.events(jid)
    assert d.output(jid) == "run\n"
    st, ans = d.api("POST", f"/v1/jobs/{jid}/requeue")
    assert st == 200, ans
    wait_for(lambda: d.output(jid) == "run\nrun\n", "the run after the requeue")
    d.api("POST", f"/v1/jobs/{jid}/stop")


def test_a_suspended_jobs_requeue_the_database_does_not_take_leaves_it_suspended(d):
    """A suspended job is thawed for its requeue's stop; when the requeue's intent cannot be
    committed (another process holds joblet's database), it is frozen again (job_ctl.c refreeze):
    503 with Retry-After, the job SUSPENDED as the admin left it, its command not running on (its
    output does not grow), a `suspended` event saying it was frozen again; resumed, it runs."""
    from conftest import DbLock
    jid = d.submit("sh", "-c", "while :; do echo tick; sleep 0.1; done")
    d.wait_status(jid, "RUNNING")
    wait_for(lambda: "tick" in d.output(jid), "the job's first line")
    st, ans = d.api("POST", f"/v1/jobs/{jid}/suspend")
    assert st == 200, ans
    d.wait_status(jid, "SUSPENDED")
    lock = DbLock(d.state)
    try:
        st, retry, ans = d.api_retry_after("POST", f"/v1/jobs/{jid}/requeue")
    finally:
        lock.release()
    assert st == 503 and retry is not None and "database is locked" in ans["error"]["message"], (st, retry, ans)
    job = d.job(jid)
    assert job["status"] == "SUSPENDED" and not job["requeuing"] and job["preemptions"] == 0, job
    time.sleep(0.5)
    ticks = d.output(jid).count("tick")
    time.sleep(1)
    assert d.output(jid).count("tick") == ticks, "the job ran on while SUSPENDED"
    wait_for(lambda: any(e == "suspended" and "frozen again" in detail for e, detail in d.events(jid)),
             "the event of the job frozen again")
    assert "requeued" not in [e for e, _ in d.events(jid)], d.events(jid)
    st, ans = d.api("POST", f"/v1/jobs/{jid}/resume")
    assert st == 200, ans
    wait_for(lambda: d.output(jid).count("tick") > ticks, "the job runs once resumed")
    d.api("POST", f"/v1/jobs/{jid}/stop")


def loops_backed_by(path):
    out = []
    for bf in glob.glob("/sys/block/loop*/loop/backing_file"):
        try:
            if open(bf).read().strip() == path:
                out.append(bf)
        except OSError:
            pass
    return out


def test_an_owners_work_image_that_does_not_mount_is_named_and_made_anew_once_removed(d):
    """An owner's /work image that holds no filesystem (damaged): their submission is refused 500
    (the machine's fault; it was 507, 'insufficient storage', with room to spare), saying what an
    admin does; no loop device is left on it; removed, the owner's next job makes a new one."""
    uid = OTHER[0]
    image = os.path.join(d.state, "work", f"{uid}.img")
    with open(image, "wb") as f:
        f.write(bytes(1 << 20))
    st, ans = api_as(d, OTHER, "POST", "/v1/jobs", {"command": "true"})
    msg = ans["error"]["message"]
    assert st == 500 and msg.startswith(f"the /work filesystem of uid {uid} (jobs.work_quota): mount {image}"), ans
    assert f"the image holds no filesystem that mounts (damaged?): an admin checks it (e2fsck -f {image}), or " \
           "removes it, and the owner's next job makes a new, empty one" in msg, ans
    assert not loops_backed_by(image)
    assert f"the /work filesystem of uid {uid}: " in d.log()
    os.unlink(image)
    st, job = api_as(d, OTHER, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", "echo fresh > /work/f; cat /work/f"]})
    assert st == 201, job
    assert d.wait(job["id"])["status"] == "COMPLETED" and d.output(job["id"]) == "fresh\n"


def test_over_tls_a_reader_watches_only_and_a_maintainer_neither_execs_nor_copies_in():
    """The roles' refusals at the terminal, exec and copy routes (docs/remote.md): a reader's
    certificate watches its own job's terminal (a WebSocket GET with ?stdin=0), not types (403); a
    maintainer, who sees and stops another user's job, neither runs a process in it nor copies
    files into it (403 each, naming what was refused), and nothing happens in the job."""
    from test_remote import Remote
    r = Remote()
    try:
        d = r.d
        # a job of the reader's account, submitted on the machine (a reader's certificate submits none)
        st, job = api_as(d, r.uid["reader"], "POST", "/v1/jobs",
                         {"command": "sh", "args": ["-c", "exec sleep 600"], "tty": True, "stdin": True})
        assert st == 201, job
        mine = job["id"]

        def tls_attach(who, jid, query=""):
            s = r.ctx(who).wrap_socket(socket.create_connection(("127.0.0.1", r.port), timeout=60),
                                       server_hostname="localhost")
            # (a GET: a WebSocket's, as the console's; a reader's POST is refused as a change)
            s.sendall(f"GET /v1/jobs/{jid}/attach{query} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                      f"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                      f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".encode())
            return s, read_head(s)[1]

        s, head = tls_attach("reader", mine)
        body = s.recv(4096)
        s.close()
        assert head.startswith(b"HTTP/1.1 403") and b"typing into a job's terminal" in head + body, head + body
        s, head = tls_attach("reader", mine, "?stdin=0")
        s.close()
        assert head.startswith(b"HTTP/1.1 101"), head
        st, job = r.api("developer", "POST", "/v1/jobs", {"command": "sh", "args": ["-c", "exec sleep 600"]})
        assert st == 201, job
        theirs = job["id"]
        d.wait_status(theirs, "RUNNING")
        st, ans = r.api("maintainer", "GET", f"/v1/jobs/{theirs}")
        assert st == 200, ans   # seen
        st, ans = r.api("maintainer", "PUT", f"/v1/jobs/{theirs}/archive?path=/work", raw=tar_of({"planted": b"x"}),
                        ctype="application/x-tar")
        assert st == 403 and "copying files into another user's job" in ans["error"]["message"], ans
        c = http.client.HTTPSConnection("127.0.0.1", r.port, context=r.ctx("maintainer"), timeout=60)
        c.request("POST", f"/v1/jobs/{theirs}/exec", body=json.dumps({"command": "id"}),
                  headers={"Connection": "Upgrade", "Upgrade": "tcp", "Content-Type": "application/json"})
        resp = c.getresponse()
        ans = json.loads(resp.read())
        c.close()
        assert resp.status == 403 and "running a process in another user's job" in ans["error"]["message"], ans
        assert not os.path.lexists(os.path.join(d.work(theirs), "planted"))
        assert not [e for e, _ in d.events(theirs) if e == "exec"], d.events(theirs)
    finally:
        r.close()


def test_a_terminal_job_waiting_for_its_attach_across_a_restart_is_seen_to_start(fresh_daemon):
    """joblet restarted while a terminal job's shim waits for its first attach: the new joblet
    has no line from that shim (its pipe was the old one's), so it reads the shim's file when
    the job is asked for; the job shows RUNNING once it started (its attach wait over), then
    ends as it does."""
    d = fresh_daemon("jobs:\n  attach_wait_s: 3\n")
    jid = d.submit("sh", "-c", "echo started-alone; sleep 2", tty=True)
    wait_for(lambda: d.job(jid)["shim_pid"], "its shim")
    assert d.job(jid)["status"] == "QUEUED"
    d.stop()
    d.start()
    job = d.wait_status(jid, "RUNNING", timeout=60)
    assert job["started_at"], job
    done = d.wait(jid, timeout=60)
    assert done["status"] == "COMPLETED" and "started-alone" in d.output(jid), (done, d.output(jid))
    assert [e for e, _ in d.events(jid)].count("started") == 1, d.events(jid)
