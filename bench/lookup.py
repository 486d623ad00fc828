#!/usr/bin/env python3
"""Lookup: what naming one job, and listing the running ones, costs the daemon with many jobs kept.

Every request about a job (GET /v1/jobs/REF, stop, log, `rnx job status REF`) first resolves REF:
a full id, a name, or a unique id prefix (common/idref.h). This gives each target daemon --kept N
waiting jobs (each after a `sleep` gate, so that none runs: a submission costs little and the
table grows fast), then times GET /v1/jobs/REF one request at a time on a keep-alive connection,
for four kinds of REF, and four listings by state:

  full     the newest job's full id (the last a scan in submission order reaches)
  prefix   the first 8 characters of a job's id
  name     a name one job has
  missing  a full id no job has (the answer is 404)
  poll     GET /v1/jobs?status=RUNNING: the gate alone (what clients waiting for their jobs poll)
  scan     GET /v1/jobs?status=COMPLETED: no job without --ended (every kept one looked at before
           the table kept a list of each ended state: what every state's listing cost before the
           polls used the lists); with --ended N, N of them
  held     GET /v1/jobs?status=HELD: one job, held, among the waiting ones
  pending  GET /v1/jobs?status=PENDING: the --kept waiting jobs (each one written: proportional to
           the answer whatever the daemon does, so meant for a few --kept among many --ended)
  history  GET /v1/history (the console's History page: sums over every job kept, any user's
           request; its answer is the same few lines however many jobs are kept)

--listening holds an event stream open on each daemon while it is timed (GET /v1/events: what a
web console and every `rnx job wait` hold): joblet then publishes each loop turn's changes, and
what that costs a turn falls on every request.

--ended N first gives each daemon N ended jobs (/bin/true, run and waited for, as throughput.py
--kept): the bulk of what a daemon keeps. --kinds picks the kinds timed (default all but pending).

and prints the median and p95 in microseconds per kind, targets side by side (--target NAME=SOCKET,
repeatable; the first is the reference), rounds interleaved (A B, B A, ...):

  lookup.py --kept 20000 --rounds 3 --target before=/tmp/a/sock --target after=/tmp/b/sock
  lookup.py --ended 20000 --kept 10 --kinds poll,held,pending --target ...

The jobs made stay, waiting on the gate: run it against daemons of its own (a state directory
thrown away after). Standard library only.
"""

import argparse
import socket
import statistics
import sys
import threading
import time
import types
import uuid

from throughput import UnixHTTPConnection, request, parse_target, keep_ended

KINDS = ("full", "prefix", "name", "missing", "poll", "scan", "held", "pending", "history")


class Listener:
    """GET /v1/events held open on sock, its events read away by a thread until close()."""

    def __init__(self, sock):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(sock)
        self.s.sendall(b"GET /v1/events HTTP/1.1\r\nHost: joblet\r\n\r\n")
        self.t = threading.Thread(target=self.drain, daemon=True)
        self.t.start()

    def drain(self):
        try:
            while self.s.recv(65536):
                pass
        except OSError:
            pass

    def close(self):
        self.s.shutdown(socket.SHUT_RDWR)
        self.s.close()
        self.t.join(timeout=10)


def fill(sock, kept):
    conn = UnixHTTPConnection(sock)
    st, doc = request(conn, "POST", "/v1/jobs", {"command": "sleep", "args": ["3600"]})
    if st != 201:
        sys.exit(f"lookup: the gate job was refused: {st} {doc}")
    gate = doc["id"]
    after = [{"job": gate, "state": "any"}]
    ids = []
    for i in range(kept):
        body = {"command": "/bin/true", "after": after}
        if i == kept // 2:
            body["name"] = "lookup-named"
        st, doc = request(conn, "POST", "/v1/jobs", body)
        if st != 201:
            sys.exit(f"lookup: job {i} was refused: {st} {doc}")
        ids.append(doc["id"])
    st, doc = request(conn, "POST", "/v1/jobs", {"command": "/bin/true", "after": after})
    if st != 201:
        sys.exit(f"lookup: the held job was refused: {st} {doc}")
    st, doc = request(conn, "POST", f"/v1/jobs/{doc['id']}/hold")
    if st != 200:
        sys.exit(f"lookup: the job was not held: {st} {doc}")
    conn.close()
    return gate, ids


def paths(ids):
    refs = {"full": ids[-1], "prefix": ids[len(ids) // 3][:8], "name": "lookup-named", "missing": str(uuid.uuid4())}
    return {**{k: f"/v1/jobs/{r}" for k, r in refs.items()}, "poll": "/v1/jobs?status=RUNNING",
            "scan": "/v1/jobs?status=COMPLETED", "held": "/v1/jobs?status=HELD",
            "pending": "/v1/jobs?status=PENDING", "history": "/v1/history"}


def time_kind(sock, path, n):
    conn = UnixHTTPConnection(sock)
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        st, _ = request(conn, "GET", path)
        lat.append(time.perf_counter() - t0)
        if st not in (200, 404):
            sys.exit(f"lookup: GET {path}: {st}")
    conn.close()
    lat.sort()
    return statistics.median(lat) * 1e6, lat[int(len(lat) * 0.95)] * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", action="append", type=parse_target, metavar="NAME=SOCKET", required=True)
    ap.add_argument("--kept", type=int, default=20000, help="waiting jobs each daemon keeps (default 20000)")
    ap.add_argument("--requests", type=int, default=500, help="requests per kind per round (default 500)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ended", type=int, default=0, help="ended jobs each daemon keeps first (default 0)")
    ap.add_argument("--listening", action="store_true", help="an event stream open on each daemon while timed")
    ap.add_argument("--kinds", default=",".join(k for k in KINDS if k != "pending"),
                    help="the kinds timed, comma-separated (default all but pending)")
    a = ap.parse_args()
    kinds = a.kinds.split(",")
    if not set(kinds) <= set(KINDS):
        ap.error(f"--kinds: of {', '.join(KINDS)}")
    made = {}
    for name, sock in a.target:
        if a.ended and keep_ended(types.SimpleNamespace(kept=a.ended, concurrency=8, timeout=3600), sock) < 0:
            sys.exit(f"lookup: {name}: the ended jobs were not made")
        t0 = time.time()
        made[name] = fill(sock, a.kept)
        print(f"{name}: {a.kept} waiting jobs in {time.time() - t0:.1f} s", flush=True)
    res = {(name, k): [] for name, _ in a.target for k in kinds}
    order = list(a.target)
    listeners = [Listener(sock) for _, sock in a.target] if a.listening else []
    for r in range(a.rounds):
        for name, sock in (order if r % 2 == 0 else order[::-1]):
            rs = paths(made[name][1])
            for k in kinds:
                res[(name, k)].append(time_kind(sock, rs[k], a.requests))
    for li in listeners:
        li.close()
    print(f"\nGET /v1/jobs/REF and ?status= with {a.kept} waiting and {a.ended} ended jobs kept"
          f"{', an event stream open' if a.listening else ''}: median (p95) us per request, median over "
          f"{a.rounds} rounds")
    print(f"{'target':12s}" + "".join(f"{k:>22s}" for k in kinds))
    ref_name = a.target[0][0]
    for name, _ in a.target:
        cells = []
        for k in kinds:
            med = statistics.median(x[0] for x in res[(name, k)])
            p95 = statistics.median(x[1] for x in res[(name, k)])
            base = statistics.median(x[0] for x in res[(ref_name, k)])
            cells.append(f"{med:7.0f} ({p95:6.0f}) {med / base:4.2f}x")
        print(f"{name:12s}" + "".join(f"{c:>22s}" for c in cells))


if __name__ == "__main__":
    main()
