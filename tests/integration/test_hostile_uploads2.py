"""A long upload listing made a slice of each loop turn (core/incoming.c), attacked by local users:
clients that go at each stage of a staged inline submission and of a suspended PUT, one user's
long listing against another's, and the pace a PUT is held to while joblet makes its entries.
Each request is sent as an unprivileged uid (setpriv)."""
import glob
import json
import os
import re
import subprocess

from conftest import api_as, need_setpriv, setpriv, wait_for

PY = "/usr/bin/python3"
USER = 4335   # the attacker
OTHER = 4336  # another user of the machine

# a client as the uid it runs as: sends one request (headers, then its body from stdin), says
# "sent", then waits for its answer and prints [status, seconds from sent to answer, answer]
CLIENT = r"""
import json, socket, sys, time
sock, method, path = sys.argv[1:4]
body = sys.stdin.buffer.read()
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
t0 = time.monotonic()
try:
    s.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
except OSError:
    pass  # answered (refused) before the whole body was read: the answer follows
print("sent", flush=True)
raw = b""
while True:
    try:
        chunk = s.recv(1 << 20)
    except OSError:
        break
    if not chunk:
        break
    raw += chunk
head, _, rest = raw.partition(b"\r\n\r\n")
print(json.dumps([int(head.split()[1]) if raw else 0, time.monotonic() - t0, rest.decode(errors="replace")[:2000]]),
      flush=True)
"""


def send(d, user, method, path, body):
    p = subprocess.Popen([*setpriv(user), PY, "-c", CLIENT, d.sock, method, path], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    p.stdin.write(body)
    p.stdin.close()
    assert p.stdout.readline() == b"sent\n"
    return p


def answer(p, timeout=300):
    out = p.stdout.readline()
    p.wait(timeout=timeout)
    return json.loads(out)


def staged(d):
    return glob.glob(os.path.join(d.state, "jobs", ".incoming-*")) + \
        glob.glob(os.path.join(d.state, "work", "[0-9]*", ".incoming-*"))


def entry_paths(d, name):
    return [p for top in ("*", ".incoming-*") for p in
            glob.glob(os.path.join(d.state, "jobs", top, "work", name)) +
            glob.glob(os.path.join(d.state, "work", "[0-9]*", top, name))]


def dirs(prefix, n):
    return [{"path": f"{prefix}{i}", "type": "dir"} for i in range(n)]


def slots_free(d, user, n=4):
    """user may open n streamed uploads (limits.uploads_per_user): each answered 202; then dropped
    again by the timeout (not sent)."""
    for _ in range(n):
        code, ans = api_as(d, user, "POST", "/v1/jobs", {"command": "true", "uploads": [
            {"path": "f", "type": "file", "size": 1}]})
        assert code == 202, ans


def test_a_staged_inline_submission_whose_client_goes_is_dropped(fresh_daemon):
    """An inline listing of 60,000 directories, staged and made a slice per turn, its POST parked
    between slices: its client goes. libmicrohttpd reads nothing more of a request whose body is
    in, so the listing was made whole and the job too, for no one; now dropped at the next turn
    (nothing made), its place of limits.uploads_per_user free again."""
    need_setpriv()
    d = fresh_daemon()
    body = json.dumps({"command": "true", "uploads": dirs("d", 60000)}).encode()
    p = send(d, USER, "POST", "/v1/jobs", body)
    wait_for(lambda: entry_paths(d, "d100"), "the listing's first entries")
    p.kill()
    p.wait()
    wait_for(lambda: not staged(d), "the staged listing dropped or made", 120)
    assert d.job_count() == 0, "a job was made for a client that went away"
    slots_free(d, USER)


def test_a_staged_workflow_whose_client_goes_is_dropped(fresh_daemon):
    """The same for a workflow whose jobs' inline listings are long together (2 x 30,000
    directories), staged as one upload: its client goes midway; nothing is made, neither the
    workflow nor its jobs, and its place of limits.uploads_per_user is free again."""
    need_setpriv()
    d = fresh_daemon()
    body = json.dumps({"name": "gone", "jobs": [
        {"name": "a", "request": {"command": "true", "uploads": dirs("a", 30000)}},
        {"name": "b", "request": {"command": "true", "uploads": dirs("b", 30000)}}]}).encode()
    p = send(d, USER, "POST", "/v1/workflows", body)
    wait_for(lambda: entry_paths(d, "a100"), "the listing's first entries")
    p.kill()
    p.wait()
    wait_for(lambda: not staged(d), "the staged listing dropped or made", 120)
    assert d.job_count() == 0, "a job was made for a client that went away"
    code, wfs = d.api("GET", "/v1/workflows")
    assert code == 200 and wfs["workflows"] == [], wfs
    slots_free(d, USER)


def test_a_put_waiting_on_its_entries_keeps_its_pace(fresh_daemon):
    """A PUT whose listing has 60,000 directories before a 3 MiB file: its first bytes wait, given
    back to libmicrohttpd, while joblet makes the directories a slice per turn. That wait is
    joblet's, not the client's: with jobs.upload_timeout_s 2 the PUT is still answered 201."""
    need_setpriv()
    d = fresh_daemon("jobs:\n  upload_timeout_s: 2\n")
    size = 3 << 20
    ups = dirs("d", 60000) + [{"path": "f", "type": "file", "size": size}]
    code, ans = api_as(d, USER, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", "wc -c < /work/f"],
                                                     "uploads": ups})
    assert code == 202, ans
    p = send(d, USER, "PUT", ans["upload"]["path"], b"x" * size)
    code, secs, ans = answer(p)
    print(f"PUT answered {code} after {secs:.2f} s")
    assert code == 201, ans
    jid = re.match(r'\{"id":"([0-9a-f-]{36})"', ans).group(1)
    assert d.wait(jid, timeout=300)["status"] == "COMPLETED"
    assert d.output(jid).strip() == str(size)


def test_one_users_long_listing_does_not_take_every_slice(fresh_daemon):
    """USER's inline listing of 60,000 directories is being made; OTHER then submits one of 6,000.
    The loop's slice for making entries is shared: OTHER's, a tenth as long, is answered first
    (held: each upload makes at least 64 entries a call, whoever spent the turn's 20 ms)."""
    need_setpriv()
    d = fresh_daemon()
    big = send(d, USER, "POST", "/v1/jobs", json.dumps({"command": "true", "uploads": dirs("d", 60000)}).encode())
    wait_for(lambda: entry_paths(d, "d100"), "the long listing's first entries")
    small = send(d, OTHER, "POST", "/v1/jobs", json.dumps({"command": "true", "uploads": dirs("e", 6000)}).encode())
    code_s, secs_s, ans_s = answer(small)
    code_b, secs_b, ans_b = answer(big)
    print(f"small answered {code_s} after {secs_s:.2f} s; big {code_b} after {secs_b:.2f} s")
    assert code_s == 201 and code_b == 201, (ans_s, ans_b)
    assert secs_s < secs_b, "the short listing waited for the long one's"


def put_cut_short(d, before, after):
    """USER's streamed listing: `before` directories, a 2-byte file, `after` directories; its PUT
    sends the 2 bytes and goes once the listing's entries are being made (on the side of the file
    where there are more). (the daemon's log lines of the upload)"""
    ups = dirs("d", before) + [{"path": "f", "type": "file", "size": 2}] + dirs("e", after)
    code, ans = api_as(d, USER, "POST", "/v1/jobs", {"command": "true", "uploads": ups})
    assert code == 202, ans
    p = send(d, USER, "PUT", ans["upload"]["path"], b"hi")
    wait_for(lambda: entry_paths(d, "e100" if after > before else "d100"), "the listing's entries")
    p.kill()
    p.wait()
    wait_for(lambda: not staged(d), "the staged listing dropped or made", 120)
    return [line for line in d.log().splitlines() if " upload " in line]


def test_a_put_whose_client_goes_while_its_last_entries_are_made_is_dropped(fresh_daemon):
    """The body is all in (the file first), 60,000 directories after it being made a slice per turn,
    the PUT's end called again each turn: its client goes. It was made whole, and the job too,
    for no one; now dropped at the next turn, its place of limits.uploads_per_user free."""
    need_setpriv()
    d = fresh_daemon()
    log = put_cut_short(d, 0, 60000)
    assert d.job_count() == 0, log[-3:]
    assert "dropped" in log[-1], log[-3:]
    slots_free(d, USER)


def test_a_put_whose_client_goes_while_its_first_entries_are_made_is_dropped(fresh_daemon):
    """The same with 60,000 directories before the file: its bytes wait with libmicrohttpd, which
    reads the socket when resumed: dropped, its place free."""
    need_setpriv()
    d = fresh_daemon()
    log = put_cut_short(d, 60000, 0)
    assert d.job_count() == 0, log[-3:]
    assert "dropped" in log[-1], log[-3:]
    slots_free(d, USER)
