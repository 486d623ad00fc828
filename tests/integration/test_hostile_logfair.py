"""A hostile local user against the log readers: the loop's per-turn share of log reading is
one user's as much as another's, however many readers each opens. Fails on 8c5bab7, where the
share went reader by reader: 60 readers of one user read 47-56 bytes for each byte another
user's one reader of a log as long got (libmicrohttpd asks each connection for one block a
turn; the turn's budget was never the bound)."""
import os
import selectors
import time

from conftest import api_as
from sse import connect_as

HOG, OTHER = 4351, 4352
SIZE = 32 << 20


def read_all(socks, out):
    """In a child: reads every socket to its end, writing 'T TOTAL' lines to the descriptor out
    as it goes, then 'first T' (its first byte) and 'end T'."""
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    total, last, left, first = 0, 0.0, len(socks), None
    each = {s: [0, b"", None, 0.0] for s in socks}   # bytes, the last of them, how it ended, when
    buf = bytearray(1 << 20)
    while left:
        for k, _ in sel.select():
            try:
                n = k.fileobj.recv_into(buf)
            except BlockingIOError:
                continue
            except OSError as e:   # (a reset: said in its 'sock' line)
                n, each[k.fileobj][2] = 0, repr(e)
            mine = each[k.fileobj]
            if not n:
                sel.unregister(k.fileobj)
                k.fileobj.close()
                left -= 1
                mine[3] = time.monotonic()
            elif first is None:
                first = time.monotonic()
            total += n
            mine[0] += n
            mine[1] = (mine[1] + bytes(buf[max(0, n - 80):n]))[-80:]   # (no copy of the whole read)
        t = time.monotonic()
        if t - last > 0.005:
            os.write(out, f"{t} {total}\n".encode())
            last = t
    t = time.monotonic()
    for i, (n, tail, how, when) in enumerate(each.values()):
        os.write(out, f"sock {i} {n} {how or 'EOF'} {when} {tail!r}\n".encode())
    os.write(out, f"{t} {total}\nfirst {first}\nend {t}\n".encode())


def spawn_reader(socks, nice=0):
    """read_all in a child of its own, at that nice value: (pid, the read end of its lines)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.nice(nice)
            read_all(socks, w)
        finally:
            os._exit(0)
    os.close(w)
    for s in socks:
        s.close()
    return pid, r


def lines_of(child):
    pid, r = child
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return data.decode().split("\n")


def test_many_readers_of_one_user_take_one_users_share(fresh_daemon):
    d = fresh_daemon()
    ids = {}
    for uid in (HOG, OTHER):
        code, job = api_as(d, uid, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", f"head -c {SIZE} /dev/zero"]})
        assert code == 201, job
        ids[uid] = job["id"]
    for uid in (HOG, OTHER):
        assert d.wait(ids[uid], timeout=120)["status"] == "COMPLETED"

    def request(uid):
        return (f"GET /v1/jobs/{ids[uid]}/logs?format=frames HTTP/1.1\r\nHost: x\r\n"
                "Connection: close\r\n\r\n").encode()

    hog = [connect_as(d.sock, HOG) for _ in range(60)]
    other = connect_as(d.sock, OTHER)
    # the hog's account looked up afresh just before its 60 requests (after its connections are
    # made): with its answer out of joblet's cache, they all wait for one look-up, and past 16 of
    # one user (api/park.c PARK_PER_USER) the rest are answered 503 "too many requests wait
    # already": a reader with 284 bytes (CI run 139, and the unexplained short reader of an earlier
    # sanitizer pass). That bound is joblet's, not what this measures. (uid 4351 has no account:
    # joblet keeps "no such account" 5 s, NSSCACHE_NEGATIVE_MS; with the look-up before the 60
    # connections, a run under five workers outlasted it.)
    code, _ = api_as(d, HOG, "GET", f"/v1/jobs/{ids[HOG]}")
    assert code == 200
    for s in hog:
        s.sendall(request(HOG))
    # the readers' own pace must not decide what is measured: joblet writes only what a socket
    # takes, and the one reader, slowed by a busy machine (CI: the suite's other workers), left its
    # socket full while the hog's 60 read on (274 MiB against 32, in a run where joblet shared as
    # it should). The one reader goes first on the CPU; the share it gets is joblet's doing.
    hogs = spawn_reader(hog, nice=10)
    time.sleep(0.3)   # the hog's 60 readers under way
    other.sendall(request(OTHER))
    others = spawn_reader([other], nice=-10)
    hog_lines, other_lines = lines_of(hogs), lines_of(others)

    def stamp(lines, key):
        return float(next(l for l in lines if l.startswith(key + " ")).split()[1])

    first, end = stamp(other_lines, "first"), stamp(other_lines, "end")
    series = [tuple(map(float, l.split())) for l in hog_lines if l and not l.startswith(("first", "end", "sock"))]

    def hog_at(t):
        return max((total for ts, total in series if ts <= t), default=0)

    # each of the hog's readers had the whole log, framed (those that did not: how they ended, the
    # last bytes they had; once, in CI's sanitizer pass, one had 457 KB and the others all of it)
    short = [l for l in hog_lines if l.startswith("sock ") and int(l.split()[2]) <= SIZE]
    assert hog_at(1e18) > 60 * SIZE and not short, (short, first, end, d.log()[-4000:])
    hog_during = hog_at(end) - hog_at(first)
    # the other user's one reader and the hog's 60 together have about a share each (1.5-2.1
    # MiB read by the hog for each MiB the other read, measured); reader by reader, 47-56
    assert hog_during < 6 * SIZE, (f"while another user's one reader read {SIZE >> 20} MiB, one user's 60 "
                                   f"readers read {hog_during / 2**20:.0f} MiB")
    assert d.proc.poll() is None
