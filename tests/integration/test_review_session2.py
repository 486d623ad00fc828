"""Review of the second round of fairness changes (pace of streamed bodies, metrics.readers, the
request byte budget): faults found by review, each shown by a test that failed before its fix.

1. A copy into a job (PUT /v1/jobs/{id}/archive, rnx job cp) whose helper stops reading for a
   while (a slow disk, the job's io.max, a big file's write-back) makes the client wait with the
   pipe full. The window of server.idle_timeout_s began when the pipe refused (api/http.c), so the
   wait itself counted against it: once the helper drained the pipe and took what libmicrohttpd
   held, the window was past its time short of 1 MiB and the copy was cut. The window now begins
   when the client may send again.

2. The 429 of limits.max_request_bytes_per_user said "uid N keeps jobs whose commands, args, env
   and upload listings are X bytes" while X counted arrays' tasks not made yet, streamed uploads
   still arriving and workflows' own text too: a user refused for a workflow's YAML, with no job
   of that size, was told to delete jobs and pass less in the environment. It now says what
   counted, each part's bytes.

3. A streamed upload's PUT sent chunked (no Content-Length) that goes on past the bytes its listing
   declared is refused (400) but read on, up to 1 MiB more, so the client gets the answer. Past
   the declared bytes its pace counted "nothing left to come" (api/uploads.c), which starts a new
   window at each byte: a byte before each jobs.upload_timeout_s held the connection again, for
   as long as 1 MiB at that pace lasts (a year at a byte per 30 s). Past them, what is to come is
   unknown, and each window must bring 1 MiB."""
import json
import os
import signal
import subprocess
import time

from conftest import api_as, need_root, need_setpriv, setpriv, wait_for

USER = 4861
MIB = 1 << 20


def helpers(pid):
    out = subprocess.run(["ps", "--ppid", str(pid), "-o", "pid=,comm="], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines() if line.split()[1:] == ["joblet-copy"]]


# The client: the headers, a pause (the test stops the helper meanwhile), then the whole tar at
# full speed; prints the answer's status line.
_COPY = r"""
import io, socket, sys, tarfile, time
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
    info = tarfile.TarInfo("big"); info.size = 4 << 20
    t.addfile(info, io.BytesIO(b"b" * info.size))
body = buf.getvalue()
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(f"PUT {sys.argv[2]} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
          f"Content-Length: {len(body)}\r\n\r\n".encode())
time.sleep(1.5)
try:
    s.sendall(body)
except OSError as e:
    print("send:", e); sys.exit(0)
got = b""
while b"\r\n\r\n" not in got:
    c = s.recv(65536)
    if not c:
        break
    got += c
print(got.split(b"\r\n")[0].decode() or "closed")
"""


def test_a_copy_whose_helper_stalls_is_not_cut_for_the_wait(fresh_daemon):
    need_root()
    need_setpriv()
    d = fresh_daemon("server:\n  idle_timeout_s: 2\n")
    st, job = api_as(d, USER, "POST", "/v1/jobs", {"command": "sleep", "args": ["600"]})
    assert st == 201, job
    jid = job["id"]
    try:
        d.wait_status(jid, "RUNNING")
        client = subprocess.Popen([*setpriv(USER), "/usr/bin/python3", "-c", _COPY, d.sock,
                                   f"/v1/jobs/{jid}/archive?path=/work"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env={"PATH": "/usr/bin:/bin"})
        helper = wait_for(lambda: helpers(d.proc.pid), "the copy's helper starts", timeout=60)[0]
        os.kill(helper, signal.SIGSTOP)
        try:
            time.sleep(6)  # the pipe fills and the client waits: three windows
        finally:
            os.kill(helper, signal.SIGCONT)
        out, err = client.communicate(timeout=120)
        assert out.strip().startswith("HTTP/1.1 2"), (out, err, d.log()[-1500:])
        assert "fewer than 1048576 bytes" not in d.log()
        st, ans = api_as(d, USER, "GET", f"/v1/jobs/{jid}/archive?path=/work/big&stat=1")
        assert st == 200, ans
    finally:
        d.api("POST", f"/v1/jobs/{jid}/kill")


def test_the_request_bytes_refusal_says_what_counted(fresh_daemon):
    need_root()
    need_setpriv()
    d = fresh_daemon("limits:\n  max_request_bytes_per_user: 1000000\n")
    wf = {"name": "w1", "description": "d" * 60000, "yaml": "# " + "y" * 800000 + "\n",
          "jobs": [{"name": "a", "request": {"command": "sleep", "args": ["60"]}}]}
    st, made = api_as(d, USER, "POST", "/v1/workflows", wf)
    assert st == 201, (st, made)
    # a streamed upload still arriving: its env counts until its bytes come
    st, up = api_as(d, USER, "POST", "/v1/jobs", {"command": "true", "env": {"E": "e" * 50000},
                                                  "uploads": [{"path": "f", "type": "file", "size": 4}]})
    assert st == 202, (st, up)
    st, body = api_as(d, USER, "POST", "/v1/jobs", {"command": "true", "env": {"BIG": "v" * 100000}})
    msg = json.dumps(body)
    assert st == 429 and "limits.max_request_bytes_per_user" in msg, (st, body)
    assert "workflows' own text 860" in msg, msg
    assert "uploads still arriving 500" in msg, msg
    assert "arrays' tasks not made yet 0" in msg, msg


_CHUNKED = r"""
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(f"PUT {sys.argv[2]} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
          "Transfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n".encode())
t0 = time.monotonic(); closed = None
s.settimeout(0.5)
while time.monotonic() - t0 < 20:
    try:
        if not s.recv(65536):
            closed = time.monotonic() - t0
            break
    except socket.timeout:
        pass
    except OSError:
        closed = time.monotonic() - t0
        break
    try:
        s.send(b"1\r\nx\r\n")
    except OSError:
        closed = time.monotonic() - t0
        break
print(json.dumps({"closed": closed}))
"""


def test_a_chunked_upload_past_its_declared_bytes_is_paced_too(fresh_daemon):
    need_root()
    need_setpriv()
    d = fresh_daemon("jobs:\n  upload_timeout_s: 2\n")
    st, up = api_as(d, USER, "POST", "/v1/jobs", {"command": "true",
                                                  "uploads": [{"path": "f", "type": "file", "size": 4}]})
    assert st == 202, up
    p = subprocess.run([*setpriv(USER), "/usr/bin/python3", "-c", _CHUNKED, d.sock, up["upload"]["path"]],
                       capture_output=True, text=True, timeout=80, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    # a byte every half second past the 4 declared: ten windows of 2 s, none bringing 1 MiB
    assert got["closed"] is not None, f"a chunked PUT trickled past its declared bytes was held for 20 s: {got}"
