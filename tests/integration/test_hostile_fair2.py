"""A hostile local user against the daemon's fair share, second round: bodies that trickle.

1. A streamed upload's PUT (rnx job run --upload) and a copy into a running job (rnx job cp) were
   bounded by an idle timeout that each byte reset: one byte before each jobs.upload_timeout_s
   (server.idle_timeout_s for a copy) kept the body, and what it holds (a place of
   limits.uploads_per_user, its staged directory and open file, a copy's joblet-copy helper and
   its pipe), for as long as the client liked: a 200 MiB upload at a byte every 2 s against a
   timeout of 3 s was still held after 20 s, and would be for 13 years. Each timeout's window must
   now bring 1 MiB (or the rest of the body) (api/pace.h); a body short of it is cut, and its
   place, files and helper go with it. A client at a healthy pace is not cut.

What was probed and held (kept out of pass/fail tests, no wall-clock bound asserted): 16 unread
exec sessions (8 per job, 16 per user across jobs, the 17th 429) and 60 unread log follows of a
fast writer hold the daemon's memory, descriptors and CPU bounded; exec and copy helpers count in
their owner's pids cgroup (<root>/user-UID/shims)."""
import json
import os
import subprocess

from conftest import api_as, need_root, need_setpriv, setpriv, wait_for

USER, OTHER = 4851, 4852
MIB = 1 << 20

# A client run as USER: argv the socket, the method, the path ("-": read from stdin once
# connected), the Content-Length, the bytes sent at once, then one byte every `gap` seconds for
# `dur` seconds; an optional JSON body POSTed to /v1/jobs on a second connection right after the
# first bytes. Prints, as JSON, the seconds after which the daemon closed the connection (null:
# still open at the end), what it answered, and the second request's answer.
_TRICKLE = r"""
import json, socket, sys, time
sock, method, path, length, first, gap, dur = sys.argv[1:8]
s = socket.socket(socket.AF_UNIX); s.connect(sock)
if path == "-":
    path = sys.stdin.readline().strip()
if first.startswith("tar:"):   # a tar's header for one file of that many bytes: the helper waits for them
    import tarfile
    info = tarfile.TarInfo("big")
    info.size = int(first[4:])
    head = info.tobuf(format=tarfile.USTAR_FORMAT)
else:
    head = b"\0" * int(first)
s.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
          f"Content-Length: {length}\r\n\r\n".encode() + head)
t0 = time.monotonic(); closed = None; got = b""; second = None
if len(sys.argv) > 8:
    body = sys.argv[8].encode()
    s2 = socket.socket(socket.AF_UNIX); s2.connect(sock)
    s2.sendall(f"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    second = b""
    while c := s2.recv(65536):
        second += c
    second = second.decode("latin-1")
s.settimeout(float(gap))
while time.monotonic() - t0 < float(dur):
    try:
        c = s.recv(65536)
        if not c:
            closed = time.monotonic() - t0
            break
        got += c
    except socket.timeout:
        pass
    except OSError:
        closed = time.monotonic() - t0
        break
    try:
        s.send(b"\0")
    except OSError:
        closed = time.monotonic() - t0
        break
print(json.dumps({"closed": closed, "answer": got.decode("latin-1")[:300], "second": second}))
"""


def trickle(d, method, path, length, first, gap, dur):
    p = subprocess.run([*setpriv(USER), "/usr/bin/python3", "-c", _TRICKLE, d.sock, method, path, str(length),
                        str(first), str(gap), str(dur)], capture_output=True, text=True, timeout=dur + 60,
                       env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def streamed(size):
    return {"command": "true", "uploads": [{"path": "f", "type": "file", "size": size}]}


def upload_to_client(d, size, script, *args):
    """An upload of size bytes made by USER, its path handed to a client started (and connected)
    before it, as USER: script, its argv the socket and args, reading the path from stdin. The
    client's (stdout, stderr). Its PUT must come within jobs.upload_timeout_s of the upload's
    answer: under CI's load a new process's start, or a request before it, took more than 2 s."""
    client = subprocess.Popen([*setpriv(USER), "/usr/bin/python3", "-c", script, d.sock, *args],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={"PATH": "/usr/bin:/bin"})
    try:
        st, up = api_as(d, USER, "POST", "/v1/jobs", streamed(size))
        assert st == 202, up
        return client.communicate(up["upload"]["path"] + "\n", timeout=120)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()


def children(pid, name):
    out = subprocess.run(["ps", "--ppid", str(pid), "-o", "comm="], capture_output=True, text=True).stdout
    return [c for c in out.split() if c == name]


def test_a_trickled_upload_is_cut_and_gives_its_place_back(fresh_daemon):
    need_root()
    need_setpriv()
    d = fresh_daemon("jobs:\n  upload_timeout_s: 2\nlimits:\n  uploads_per_user: 1\n")
    # a byte every half second, for 30 s: ten times the timeout, and none of its windows brings 1 MiB
    # (the trickle's client asks the second upload itself: one before its PUT, a process of its
    # own, passed the 2 s under CI's load, and the upload was dropped for no PUT, never measured)
    out, _ = upload_to_client(d, 8 * MIB, _TRICKLE, "PUT", "-", str(8 * MIB), "1000", "0.5", "30",
                              json.dumps(streamed(10)))
    got = json.loads(out)
    # its one place is taken while the PUT is under way: a second upload, asked right after the
    # PUT's first bytes, waits for it
    assert got["second"].startswith("HTTP/1.1 429") and "limits.uploads_per_user" in got["second"], got
    assert got["closed"] is not None, f"a PUT trickled a byte per 0.5 s was held for 30 s: {got}"
    assert "fewer than 1048576 bytes came in jobs.upload_timeout_s (2 s)" in d.log()
    # its place, its request and its staged directory went with it
    wait_for(lambda: not [n for n in os.listdir(os.path.join(d.state, "jobs")) if n.startswith(".incoming-")],
             "the staged directory is removed")
    # a client at a healthy pace (1 MiB at a time, half a second apart) is not cut
    healthy = r"""
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
path = sys.stdin.readline().strip()
s.sendall(f"PUT {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {3 << 20}\r\n\r\n".encode())
for _ in range(3):
    time.sleep(0.5)
    s.sendall(b"h" * (1 << 20))
got = b""
while b"\r\n\r\n" not in got:
    c = s.recv(65536)
    if not c:
        break
    got += c
print(got.split(b"\r\n")[0].decode())
"""
    out, err = upload_to_client(d, 3 * MIB, healthy)
    assert out.strip() == "HTTP/1.1 201 Created", (out, err, d.log()[-2000:])


def test_a_trickled_copy_into_a_job_is_cut_with_its_helper(fresh_daemon):
    need_root()
    need_setpriv()
    d = fresh_daemon("server:\n  idle_timeout_s: 2\nlimits:\n  uploads_per_user: 1\n")
    st, job = api_as(d, USER, "POST", "/v1/jobs", {"command": "sleep", "args": ["600"]})
    assert st == 201, job
    jid = job["id"]
    try:
        d.wait_status(jid, "RUNNING")
        got = trickle(d, "PUT", f"/v1/jobs/{jid}/archive?path=/work", 512 + 100 * MIB + 1024, f"tar:{100 * MIB}", 0.5, 30)
        assert got["closed"] is not None, f"a copy trickled a byte per 0.5 s was held for 30 s: {got}"
        assert "fewer than 1048576 bytes of the body came in server.idle_timeout_s (2 s)" in d.log()
        # the copy's helper and its place are gone: the next copy of this user is taken
        wait_for(lambda: not children(d.proc.pid, "joblet-copy"), "the copy's helper ends")
        st, ans = api_as(d, USER, "GET", f"/v1/jobs/{jid}/archive?path=/work&stat=1")
        assert st == 200, ans
        # another user is served meanwhile and after
        st, v = api_as(d, OTHER, "GET", "/v1/version")
        assert st == 200, v
    finally:
        d.api("POST", f"/v1/jobs/{jid}/kill")
