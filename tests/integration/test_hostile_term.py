"""Hostile users against terminals into jobs: attach, exec and the console's WebSocket, as one
local user (no special role) against another user's jobs and against the daemon.

Each test asserts a property; the one that failed before its fix:

1. A WebSocket whose client broke the protocol got joblet's close frame (1002) and then more of
   the job's output as binary messages after it: RFC 6455 5.5.1, nothing is sent after a close.
   joblet reads nothing more from the job's terminal once its close is queued (api/attach.c).

The others are probes that held (another user by every kind of reference, unread streams up to
the bounds, malformed frames, exec's edges and its end with the job): kept as regressions.
Every probe that tries to escape is harmless if it succeeds: it writes a marker file under /tmp."""
import json
import os
import struct
import subprocess
import time

import pytest

from conftest import BUILD, Daemon, api_as, need_root, need_setpriv, rnx_as, setpriv, wait_for

VICTIM = 4361
ATTACKER = 4362
RNX = os.path.join(BUILD, "rnx")

# A client run as some uid (setpriv): argv the socket, the method, the path, a JSON body ("" none),
# the upgrade ("tcp", "websocket"), then hex of bytes sent after the head. Prints the status line
# and what came back within a second, as JSON.
_RAW = r"""
import json, socket, sys, time
sock, method, path, up = sys.argv[1:5]
body, after = json.load(sys.stdin)
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sock)
hdr = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: {up}\r\n"
if up == "websocket":
    hdr += "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
b = body.encode()
hdr += f"Content-Type: application/json\r\nContent-Length: {len(b)}\r\n\r\n"
s.sendall(hdr.encode() + b + bytes.fromhex(after))
got = b""
# the answer's head within 30 s (a 2 MB body takes a while under a sanitizer), then 3 s of what
# follows it (an upgraded stream's first frames)
end = time.time() + 30
s.settimeout(1)
while time.time() < end:
    try:
        c = s.recv(65536)
    except socket.timeout:
        continue
    if not c:
        break
    if b"\r\n\r\n" not in got and b"\r\n\r\n" in got + c:
        end = min(end, time.time() + 3)
    got += c
    if not got.startswith(b"HTTP/1.1 101") and b"\r\n\r\n" in got:
        head, rest = got.split(b"\r\n\r\n", 1)
        n = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
        if n and len(rest) >= n[0]:
            break
print(json.dumps(got.decode("latin-1")))
"""


def raw_as(d, uid, method, path, body="", up="tcp", after=b""):
    p = subprocess.run([*setpriv(uid), "/usr/bin/python3", "-c", _RAW, d.sock, method, path, up],
                       input=json.dumps([body, after.hex()]), capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def status_of(text):
    return int(text.split(" ", 2)[1]) if text.startswith("HTTP/1.1 ") else 0


def frame(ch, payload=b""):
    return struct.pack(">BI", ch, len(payload)) + payload


@pytest.fixture(scope="module")
def daemon():
    need_root()
    d = Daemon("jobs:\n  attach_wait_s: 1\n").start()
    yield d
    d.cleanup()


@pytest.fixture
def victim_jobs(daemon):
    need_root()
    need_setpriv()
    made = []

    def run(command, *args, uid=VICTIM, **fields):
        st, job = api_as(daemon, uid, "POST", "/v1/jobs", {"command": command, "args": list(args), **fields})
        assert st == 201, job
        made.append(job["id"])
        daemon.wait_status(job["id"], "RUNNING")
        return job["id"]

    yield run
    for j in made:
        daemon.api("POST", f"/v1/jobs/{j}/stop")


def test_another_users_job_by_every_reference(daemon, victim_jobs):
    jid = victim_jobs("sh", "-c", "exec sleep 600", name="vict-term", tty=True, stdin=True)
    st, arr = api_as(daemon, VICTIM, "POST", "/v1/jobs", {"command": "sleep", "args": ["600"], "array": "0-1",
                                                          "name": "vict-arr"})
    print("array", st, arr)
    refs = [jid, jid[:8], "vict-term"]
    if st == 201:
        aid = arr["id"]
        refs += [f"{aid}_0", f"{aid[:8]}_1", "vict-arr_0"]
    time.sleep(2)
    for ref in refs:
        for method, action, up, body in (("POST", "attach", "tcp", ""), ("GET", "attach", "websocket", ""),
                                         ("POST", "exec", "tcp", json.dumps({"command": "sh", "args": [
                                             "-c", "echo pwned > /tmp/termh-pwned"]}))):
            got = raw_as(daemon, ATTACKER, method, f"/v1/jobs/{ref}/{action}", body, up,
                         frame(0, b"echo typed-by-attacker > /tmp/termh-typed\n"))
            print(ref, action, up, status_of(got), got[:200].replace("\r\n", " | "))
            assert status_of(got) in (403, 404, 409), got
    assert not os.path.exists("/tmp/termh-pwned") and not os.path.exists("/tmp/termh-typed")


# A client of many streams, run as some uid: argv the socket, then JSON: a list of [path, body,
# after-hex]; it opens them all, sends each its bytes, reads only the heads, then sleeps holding them.
_HOLD = r"""
import json, socket, sys, time
sock = sys.argv[1]
held = []
for path, body, after in json.loads(sys.argv[2]):
    s = socket.socket(socket.AF_UNIX); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); s.connect(sock)
    b = body.encode()
    s.sendall((f"POST {path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(b)}\r\n\r\n").encode() + b + bytes.fromhex(after))
    h = b""
    while b"\r\n\r\n" not in h:
        h += s.recv(1)
    print(h.split(b"\r\n")[0].decode(), flush=True)
    held.append(s)
print("held", flush=True)
time.sleep(float(sys.argv[3]))
"""


def hold_as(d, uid, streams, seconds):
    return subprocess.Popen([*setpriv(uid), "/usr/bin/python3", "-c", _HOLD, d.sock,
                             json.dumps([[p, b, a.hex()] for p, b, a in streams]), str(seconds)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin"})


def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def test_unread_streams_stay_within_the_bounds_and_others_are_served(daemon, victim_jobs):
    """One user opens every attach and exec its bounds allow on noisy jobs and never reads: the
    next is refused (429), the daemon's memory stays small, another user's job still runs."""
    noisy = victim_jobs("sh", "-c", "exec yes flood-flood-flood", uid=ATTACKER, tty=True, stdin=True)
    quiet = victim_jobs("sleep", "600", uid=ATTACKER)
    before = rss_kb(daemon.proc.pid)
    streams = [(f"/v1/jobs/{noisy}/attach", "", b"")] * 8
    streams += [(f"/v1/jobs/{quiet}/exec", json.dumps({"command": "yes", "args": ["x" * 200], "tty": t}), b"")
                for t in (True, False) for _ in range(4)]
    streams += [(f"/v1/jobs/{noisy}/exec", json.dumps({"command": "yes", "tty": t}), b"")
                for t in (True, False) for _ in range(4)]
    p = hold_as(daemon, ATTACKER, streams, 60)
    lines = []
    for _ in range(len(streams) + 1):
        lines.append(p.stdout.readline().strip())
    print(lines)
    assert lines.count("HTTP/1.1 101 Switching Protocols") == len(streams) and lines[-1] == "held", lines
    over = raw_as(daemon, ATTACKER, "POST", f"/v1/jobs/{quiet}/exec", json.dumps({"command": "true"}))
    assert status_of(over) == 429, over
    time.sleep(5)
    t0 = time.time()
    r = rnx_as(daemon, VICTIM, "job", "run", "echo", "served")
    print("victim run took", time.time() - t0, r.returncode, r.stdout, r.stderr)
    after = rss_kb(daemon.proc.pid)
    print("rss before", before, "after", after)
    p.kill()
    p.wait()
    assert r.returncode == 0, r.stderr
    assert daemon.wait(r.stdout.strip())["status"] == "COMPLETED" and "served" in daemon.output(r.stdout.strip())
    # 24 streams of 64 KiB each way at most, and slack: not the output the jobs wrote meanwhile
    assert after - before < 24 * 128 + 16 * 1024, (before, after)


def test_malformed_frames_end_only_their_own_stream(daemon, victim_jobs):
    """Huge lengths, a resize of the wrong length, a client's own exit and hello frames, unknown
    channels, a close inside a frame, a frame a byte at a time, a flood of resizes: the job goes
    on, later attaches work, another user is still served."""
    jid = victim_jobs("sh", uid=ATTACKER, tty=True, stdin=True)
    bads = {
        "huge": struct.pack(">BI", 0, 0xFFFFFFFF) + b"x" * 100,
        "resize-long": struct.pack(">BI", 3, 8) + b"\0" * 8,
        "exit-from-client": frame(4, b"\0\0\0\7"),
        "hello-again": frame(6, b"\1root (uid 0)"),
        "unknown": frame(99, b"z" * 65536) + frame(0, b"echo after-unknown > /tmp/termh-unk-$(id -u)\n"),
        "close-mid": frame(0, b"echo par")[:8] + frame(5),
        "fragments": b"".join(bytes([c]) for c in frame(0, b"echo frag-ok\n")),
        "zero-resize": frame(3, b"\0\0\0\0") * 1000,
    }
    for name, data in bads.items():
        t0 = time.time()
        got = raw_as(daemon, ATTACKER, "POST", f"/v1/jobs/{jid}/attach", "", "tcp", data)
        print(name, status_of(got), round(time.time() - t0, 2), repr(got[-300:]))
        assert status_of(got) == 101, got
    assert daemon.job(jid)["status"] == "RUNNING"
    got = raw_as(daemon, ATTACKER, "POST", f"/v1/jobs/{jid}/attach", "", "tcp", frame(0, b"\x15echo still-$((6*7))\n"))
    assert "still-42" in got, got
    t0 = time.time()
    r = rnx_as(daemon, VICTIM, "job", "run", "echo", "served")
    print("victim", time.time() - t0, r.returncode)
    assert r.returncode == 0, r.stderr
    assert daemon.wait(r.stdout.strip())["status"] == "COMPLETED" and "served" in daemon.output(r.stdout.strip())


def test_an_exec_ends_with_its_job(daemon, victim_jobs):
    """What an exec left behind (setsid, nohup) ends with the job; no exec while it stops or
    after it ended; nothing of the job's uid is left on the host."""
    jid = victim_jobs("sh", "-c", "trap '' TERM; echo > /work/mark; while :; do sleep 1; done", uid=ATTACKER)
    r = rnx_as(daemon, ATTACKER, "job", "exec", jid, "sh", "-c", "setsid sleep 7771 > /dev/null 2>&1 < /dev/null & "
               "nohup sleep 7772 > /dev/null 2>&1 & echo started")
    print("exec", r.returncode, r.stdout, r.stderr)
    assert r.returncode == 0 and "started" in r.stdout, r.stderr
    daemon.api("POST", f"/v1/jobs/{jid}/stop")
    time.sleep(0.3)
    r = rnx_as(daemon, ATTACKER, "job", "exec", jid, "sh", "-c", "sleep 7773 & echo during-stop")
    print("exec during stop", r.returncode, r.stdout, r.stderr)
    assert r.returncode != 0 and "during-stop" not in r.stdout
    assert daemon.wait(jid)["status"] == "STOPPED"
    time.sleep(1)
    ps = subprocess.run(["ps", "-u", str(ATTACKER), "-o", "pid,args"], capture_output=True, text=True).stdout
    print("ps", ps)
    r = rnx_as(daemon, ATTACKER, "job", "exec", jid, "true")
    print("exec ended", r.returncode, r.stderr)
    assert r.returncode != 0 and "has ended" in r.stderr
    assert "777" not in ps, ps


def fds_naming(pid, needle):
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            t = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if needle in t:
            out.append(t)
    return out


def test_a_deleted_terminal_jobs_files_are_not_held(daemon, victim_jobs):
    """A terminal job with clients attached ends and is deleted: joblet holds nothing of it."""
    jid = victim_jobs("sh", uid=ATTACKER, tty=True, stdin=True)
    p = hold_as(daemon, ATTACKER, [(f"/v1/jobs/{jid}/attach", "", frame(0, b"exit 3\n"))] * 3, 30)
    print([p.stdout.readline().strip() for _ in range(4)])
    assert daemon.wait(jid)["exit_code"] == 3
    st, body = api_as(daemon, ATTACKER, "DELETE", f"/v1/jobs/{jid}")
    assert st == 200, body
    try:
        wait_for(lambda: not fds_naming(daemon.proc.pid, jid) and not fds_naming(daemon.proc.pid, "(deleted)"),
                 "joblet lets go of the deleted job", timeout=20)
    finally:
        p.kill()
        p.wait()


def test_exec_edges_are_refused_or_contained(daemon, victim_jobs):
    """A huge argv, a huge variable, a workdir with .., the init's root as workdir, LD_PRELOAD:
    refused with a reason, or run as the job's user and nothing lands on the host."""
    jid = victim_jobs("sleep", "600", uid=ATTACKER)
    for body in ({"command": "sh", "args": ["-c", "echo $#", "x"] + ["a" * 100] * 20000},
                 {"command": "sh", "args": ["-c", "echo ${#BIG}"], "env": {"BIG": "b" * (4 << 20)}},
                 {"command": "sh", "args": ["-c", "pwd; echo x > /tmp/termh-wd-escape"], "workdir": "/../../../tmp"},
                 {"command": "sh", "args": ["-c", "pwd; ls /proc/1/root"], "workdir": "/proc/1/root"},
                 {"command": "sh", "args": ["-c", "id"], "env": {"LD_PRELOAD": "/nonexistent.so"}}):
        t0 = time.time()
        got = raw_as(daemon, ATTACKER, "POST", f"/v1/jobs/{jid}/exec", json.dumps(body), "tcp", frame(5))
        print(status_of(got), round(time.time() - t0, 2), repr(got[-400:]))
        assert status_of(got) in (101, 400, 413), got
        if status_of(got) == 101:
            assert "uid=0" not in got and "\x04\x00\x00\x00\x04" in got, got
    assert not os.path.exists("/tmp/termh-wd-escape")


def ws(op, payload=b"", fin=True, mask=b"\1\2\3\4", length=None):
    n = len(payload) if length is None else length
    h = bytes([(0x80 if fin else 0) | op])
    if n < 126:
        h += bytes([0x80 | n])
    elif n < 65536:
        h += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        h += bytes([0x80 | 127]) + struct.pack(">Q", n)
    return h + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def test_nothing_is_sent_after_joblets_websocket_close(daemon, victim_jobs):
    """Broken WebSocket frames from a local user: each gets a close (with its code) and nothing
    after it, though the job's terminal has output to replay; the daemon stays up for others."""
    jid = victim_jobs("sh", "-c", "echo ready; exec sh", uid=ATTACKER, tty=True, stdin=True)
    wait_for(lambda: "ready" in daemon.output(jid), "the job's first line")
    cases = {
        "huge-len": ws(2, length=1 << 62),
        "ping-flood": ws(9, b"p" * 125) * 3000,
        "frag-then-close": ws(2, frame(0, b"echo fr")[:7], fin=False) + ws(8, b"\3\350"),
        "cont-no-msg": ws(0, b"abc"),
        "frags": ws(2, frame(0, b"echo ws-ok\n")[:6], fin=False) + ws(0, frame(0, b"echo ws-ok\n")[6:], fin=True),
        "text": ws(1, b"hi"),
        "one-byte-close": ws(8, b"\3"),
        "ctl-frag": ws(9, b"x", fin=False),
    }
    after_close = {}
    for name, data in cases.items():
        t0 = time.time()
        got = raw_as(daemon, ATTACKER, "GET", f"/v1/jobs/{jid}/attach", "", "websocket", data)
        print(name, status_of(got), round(time.time() - t0, 2), len(got), repr(got[-200:]))
        assert status_of(got) == 101, got
        msgs = ws_messages(got.split("\r\n\r\n", 1)[1].encode("latin-1"))
        closes = [i for i, (op, _) in enumerate(msgs) if op == 8]
        if closes and closes[0] != len(msgs) - 1:
            after_close[name] = msgs[closes[0]:]
    print("job", daemon.job(jid)["status"], "rss", rss_kb(daemon.proc.pid))
    t0 = time.time()
    r = rnx_as(daemon, VICTIM, "job", "run", "echo", "served")
    print("victim", time.time() - t0, r.returncode)
    assert r.returncode == 0
    assert not after_close, f"frames sent after joblet's close: {after_close}"


def ws_messages(raw):
    """A server's frames (unmasked): [(opcode, payload)]; a frame cut short ends the list."""
    out, i = [], 0
    while i + 2 <= len(raw):
        op, n, at = raw[i] & 0x0f, raw[i + 1] & 0x7f, i + 2
        if n == 126:
            n, at = struct.unpack(">H", raw[i + 2:i + 4])[0], i + 4
        elif n == 127:
            n, at = struct.unpack(">Q", raw[i + 2:i + 10])[0], i + 10
        if at + n > len(raw):
            break
        out.append((op, raw[at:at + n]))
        i = at + n
    return out
