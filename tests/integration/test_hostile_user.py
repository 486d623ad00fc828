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

from conftest import BUILD

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
        open_now += s.recv(1) != b""
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
        assert time.time() - t0 < 30
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
