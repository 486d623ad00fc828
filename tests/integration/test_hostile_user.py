"""A hostile local user against the daemon itself (issue 14): any local user can reach the socket,
so no one user's connections or request bodies may lock the others out or take the daemon's
memory; afterwards the daemon is alive and has lost nothing."""
import os
import pwd
import resource
import socket
import subprocess
import sys
import time


HOLDER = r"""
import os, resource, socket, sys, time
want, path = int(sys.argv[1]), sys.argv[2]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
for i in range(want):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
    except OSError as e:
        break
    held.append(s)
print(len(held), flush=True)
time.sleep(float(sys.argv[3]))
open_now = 0
for s in held:
    s.setblocking(False)
    try:
        while s.recv(65536):   # a refusal's answer, written before joblet closed it: then its end
            pass
    except BlockingIOError:
        open_now += 1
    except OSError:
        pass
print(open_now, flush=True)
"""


def as_nobody():
    nobody = pwd.getpwnam("nobody")

    def drop():
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    return drop


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(l for l in f if l.startswith("VmRSS:")).split()[1])


def test_idle_connections_of_one_user_lock_no_one_out(fresh_daemon):
    d = fresh_daemon()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    want = min(5000, hard - 64)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(want), d.sock, "8"], stdout=subprocess.PIPE,
                              text=True, preexec_fn=as_nobody())
    try:
        held = int(holder.stdout.readline())
        assert held >= min(want, 1000), held      # the kernel took them all; joblet closes what is past the cap
        t0 = time.time()
        p = d.rnx("job", "run", "--follow", "echo", "still served", timeout=60)
        assert p.returncode == 0 and p.stdout == "still served\n", p.stderr
        print(f"\nrnx job run --follow with {held} connections held by another user: {time.time() - t0:.1f} s")
        still_open = int(holder.stdout.readline())
        assert still_open <= 64, still_open       # server.max_connections_per_user
    finally:
        holder.kill()
        holder.wait()
    assert d.proc.poll() is None
    code, v = d.api("GET", "/v1/version")
    assert code == 200


def test_big_json_body_refused_before_it_is_read(fresh_daemon):
    d = fresh_daemon()
    before = rss_kb(d.proc.pid)
    body = b'{"command": "true", "env": {' + b",".join(b'"A%d": "x"' % i for i in range(2_500_000)) + b"}}"
    assert len(body) > 30 << 20
    s = socket.socket(socket.AF_UNIX)
    s.connect(d.sock)
    s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
              % len(body))
    try:
        s.sendall(body[:1 << 20])
    except OSError:
        pass
    answer = s.recv(4096).decode(errors="replace")
    s.close()
    assert answer.startswith("HTTP/1.1 413"), answer
    assert "server.max_body_bytes" in answer
    assert rss_kb(d.proc.pid) - before < 64 * 1024
    assert d.api("GET", "/v1/version")[0] == 200


# ---- bounded parsing: what a body under server.max_body_bytes may hold (src/api/body.c) -------

def hwm_kb(pid):
    """The most memory the daemon has held since it started (VmHWM)."""
    with open(f"/proc/{pid}/status") as f:
        return int(next(l for l in f if l.startswith("VmHWM:")).split()[1])


def post_raw(d, path, body, timeout=120):
    """POSTs body (bytes) as it is; the answer's status and JSON."""
    import json
    from conftest import UnixHTTPConnection
    c = UnixHTTPConnection(d.sock, timeout=timeout)
    c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    raw = r.read()
    c.close()
    return r.status, json.loads(raw)


MAX_BODY = 16 << 20  # server.max_body_bytes' default


def fill(head, unit, tail, size=MAX_BODY - 64):
    """head, then as many comma-separated units as fit in size bytes, then tail; and how many."""
    n = (size - len(head) - len(tail)) // (len(unit) + 1)
    return head + b",".join([unit] * n) + tail, n


def test_many_tiny_values_under_the_body_limit_are_refused_unparsed(fresh_daemon):
    """A body just under server.max_body_bytes of tiny values (once: 1.2 GB of jansson's memory)
    is refused with 413 naming the bound, and the daemon's memory grows by little more than the
    body it read."""
    # under ASan, freed bodies would wait in its quarantine (256 MB) and count as held
    asan = os.environ.get("ASAN_OPTIONS")
    d = fresh_daemon(env={"ASAN_OPTIONS": (asan + ":" if asan else "") + "quarantine_size_mb=0"})
    base = hwm_kb(d.proc.pid)
    objects, n_obj = fill(b'{"command": "true", "args": [', b"{}", b"]}")
    strings, n_str = fill(b'{"command": "true", "args": [', b'""', b"]}")
    env, n_env = fill(b'{"command": "true", "env": {', b'"A": 1', b"}}", size=200000)
    cases = [
        (objects, f"the request holds {n_obj + 2} objects and arrays; joblet takes at most 131072 in one request "
                  "(a job's upload listing of 100,000 entries fits)"),
        (strings, f"args: an array of {n_str} elements; joblet takes at most 131072 elements per array"),
        (b'{"command": "true", "args": [' + b",".join([b"[" + b",".join([b"0"] * 100000) + b"]"] * 40) + b"]}",
         f"the request holds {1 + 2 + 40 + 40 * 100000} values; joblet takes at most 800000 in one request"),
        (env, f"env: an object of {n_env} members; joblet takes at most 10000 members per object"),
    ]
    for body, words in cases:
        assert len(body) <= MAX_BODY
        code, ans = post_raw(d, "/v1/jobs", body)
        assert code == 413 and ans["error"]["code"] == "too_large", (code, ans)
        assert ans["error"]["message"].startswith(words), ans
    grown = hwm_kb(d.proc.pid) - base
    assert grown < 64 * 1024, f"the daemon's peak memory grew by {grown} KiB"
    assert d.api("GET", "/v1/version")[0] == 200
    assert d.api("GET", "/v1/jobs")[1]["jobs"] == []


def test_deep_nesting_is_refused(daemon):
    """Objects and arrays 40 levels deep are refused, naming the depth, where and the bound."""
    body = b'{"command": "true", "args": [' + b"[" * 39 + b"]" * 39 + b"]}"
    code, ans = post_raw(daemon, "/v1/jobs", body)
    assert code == 400, ans
    msg = ans["error"]["message"]
    assert msg.startswith("the request nests 41 levels deep (at args[0][0][0]"), msg
    assert msg.endswith("joblet takes at most 32 levels of objects and arrays"), msg
    # a workflow's body is held to the same bounds; 32 levels are taken (and refused by the schema)
    body = b'{"name": "w", "jobs": ' + b"[" * 40 + b"]" * 40 + b"}"
    code, ans = post_raw(daemon, "/v1/workflows", body)
    assert code == 400 and ans["error"]["message"].startswith("the request nests 41 levels deep"), ans
    body = b'{"command": "true", "args": ' + b"[" * 31 + b"]" * 31 + b"}"
    code, ans = post_raw(daemon, "/v1/jobs", body)
    assert code == 400 and "args" in ans["error"]["message"] and "nests" not in ans["error"]["message"], ans
    assert daemon.api("GET", "/v1/version")[0] == 200


def test_very_long_string_is_refused_but_inline_content_is_not(daemon):
    """A 2 MiB string is refused (strings: 1 MiB), naming where it is; an inline upload's
    content_b64 is bounded by the body alone; the small routes' strings by 4 KiB."""
    import base64
    import json
    body = json.dumps({"command": "true", "env": {"BIG": "x" * (2 << 20)}}).encode()
    code, ans = post_raw(daemon, "/v1/jobs", body)
    assert code == 413 and ans["error"].get("field") == "env.BIG", ans
    assert ans["error"]["message"].startswith("env.BIG: a string of 2097152 bytes; joblet takes strings of at most "
                                              "1048576 bytes (but an upload's content_b64"), ans
    key = "K" * (1 << 20) + "K"
    code, ans = post_raw(daemon, "/v1/jobs", json.dumps({"command": "true", "env": {key: "1"}}).encode())
    assert code == 413 and "a string of 1048577 bytes" in ans["error"]["message"], ans
    data = os.urandom(3 << 20)
    code, ans = post_raw(daemon, "/v1/jobs", json.dumps({"command": "sha256sum", "args": ["blob"], "uploads": [
        {"path": "blob", "content_b64": base64.b64encode(data).decode()}]}).encode())
    assert code == 201, ans
    code, ans = post_raw(daemon, "/v1/volumes", json.dumps({"name": "v" * 5000, "size_mb": 1}).encode())
    assert code == 413 and ans["error"]["message"].startswith("name: a string of 5000 bytes; joblet takes strings "
                                                              "of at most 4096 bytes"), ans
    code, ans = post_raw(daemon, "/v1/volumes", b'{"name": "v", "size_mb": 1, "x": [' + b"0," * 20 + b"0]}")
    assert code == 413 and ans["error"]["message"].startswith("x: an array of 21 elements"), ans
    assert daemon.api("GET", "/v1/version")[0] == 200


# One user's request bodies half sent (Content-Length 16 MiB each). First one of 15 MiB, which
# takes a buffer of a whole body (16 MiB, its user's share; joblet has read at least 10 MiB of it
# when sendall returns, the socket holding the rest), then a whole job of 1 MiB, which must
# be refused for that share (its status line and answer printed); then 39 more of 2 MiB each (80
# MiB in all: past joblet's whole buffer for bodies, 64 MiB), printing how many it holds; then it
# holds them until its stdin closes (a real attacker sends a byte before each idle timeout).
BODY_HOG = r"""
import socket, sys
path = sys.argv[1]
held = []
def hold(n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % (16 << 20) + b" " * n)   # (returns once joblet read most)
    held.append(s)
def job(n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    b = b" " * n + b'{"command":"true"}'   # (JSON takes the white space before its value)
    s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(b) + b)
    answer = b""
    while True:
        got = s.recv(65536)
        if not got:
            break
        answer += got
    s.close()
    return answer.decode(errors="replace")
hold(15 << 20)
answer = job(1 << 20)
print(answer.splitlines()[0], flush=True)
print(answer.split("\r\n\r\n", 1)[-1].strip(), flush=True)
while len(held) < 40:
    hold(2 << 20)
print(len(held), flush=True)
sys.stdin.read()
"""


def test_one_user_cannot_take_the_body_buffer_from_the_others(daemon):
    # One user's bodies half sent held joblet's whole buffer for bodies (one budget for everyone:
    # server.max_body_bytes x 1.5, at least 64 MiB) with a dozen connections, and every other
    # user's job submission was answered 503 for as long as that user wished. Now a user holds
    # at most a share of it (429, naming it), and another user's submissions are taken: a small
    # one, and one of 512 KiB (which the buffer's budget, not the share, bounds).
    from conftest import api_as, rnx_as, setpriv
    mallory, alice = 4611, 4612
    hog = subprocess.Popen([*setpriv(mallory), "/usr/bin/python3", "-c", BODY_HOG, daemon.sock],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        status, body = hog.stdout.readline().strip(), hog.stdout.readline()
        assert status.startswith("HTTP/1.1 429"), (status, body)
        assert "one user may" in body and "MiB" in body, body
        assert int(hog.stdout.readline()) == 40   # every connection taken: only bodies are bounded
        code, ans = api_as(daemon, alice, "POST", "/v1/jobs", b" " * (512 << 10) + b'{"command": "true"}')
        assert code == 201, (code, ans)
        r = rnx_as(daemon, alice, "job", "run", "true")
        assert r.returncode == 0, r.stderr
        # Mallory's own small submissions still go: a body of a few KiB is never refused for it
        code, ans = api_as(daemon, mallory, "POST", "/v1/jobs", {"command": "true"})
        assert code == 201, (code, ans)
    finally:
        hog.stdin.close()
        hog.wait(timeout=60)
