#!/usr/bin/env python3
"""Throughput: submit many trivial jobs at once through joblet's HTTP API and time them to the end.

C submitter threads, each with its own keep-alive connection to the daemon's unix socket, POST
/v1/jobs {"command": "/bin/true"} until N jobs are in; then the active jobs are polled until every
one of them is terminal. Prints jobs/s from the first submission to the last job's end, the
final statuses, and the daemon's RSS (VmRSS of the pid that GET /v1/version names) idle before
and after the run, plus the highest value seen during it.

Two builds of joblet side by side: --target NAME=SOCKET (repeatable) with --rounds R measures
every target once per round, the order rotated each round (A B, B A, A B, ...), and ends with
jobs/s per round and the median of each target, relative to the first target:

  throughput.py --rounds 4 --cleanup \
      --target before=/tmp/bench-before/sock --target after=/tmp/bench-after/sock

Floors (--floors, default "unshare,bwrap"; "none" to leave them out): in the same run, round by
round interleaved with joblet, the same number of /bin/true commands run by the plain tools, as many
at a time as joblet has submitters (--concurrency, default 8), with `xargs -P`:

  unshare  unshare -fp --mount-proc /bin/true        (pid and mount namespaces, a fresh /proc)
  bwrap    bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev /bin/true
                                                      (user, pid, net, ipc, uts, cgroup namespaces)

and the table gives each one's jobs/s, its median over the rounds, and joblet's ratio to each floor
(joblet/unshare, joblet/bwrap). Joblet's workload is one function per kind (WORKLOADS): "single",
N separate POST /v1/jobs, and "array", one POST of an N-task array run C at a time (%C), its tasks
made by the daemon as they start; --workload single,array measures both as rows of the same rounds.

  throughput.py --rounds 4 --cleanup                  # joblet at --socket against both floors

--kept N first gives every daemon N ended /bin/true jobs to keep, so that the run shows what a
submission costs with many jobs kept (the "daemon CPU" line: its CPU per job); with --poll 0.5
the polls' own scans of the table weigh little:

  throughput.py --kept 20000 --poll 0.5 --floors none --rounds 2 \
      --target before=/tmp/bench-before/sock --target after=/tmp/bench-after/sock

Standard library only.
"""

import argparse
import collections
import datetime
import http.client
import json
import math
import os
import shutil
import socket
import subprocess
import statistics
import sys
import threading
import time

TERMINAL = {"COMPLETED", "FAILED", "STOPPED", "CANCELED"}


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a unix socket."""

    def __init__(self, path, timeout=30.0):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.unix_path)
        except OSError:
            s.close()
            raise
        self.sock = s


def request(conn, method, path, body=None):
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=headers)
    r = conn.getresponse()
    raw = r.read()
    try:
        doc = json.loads(raw) if raw else None
    except ValueError:
        doc = {"_raw": raw[:200].decode(errors="replace")}
    if r.will_close:
        conn.close()        # http.client reconnects on the next request
    return r.status, doc


def api(sock_path, method, path, body=None, timeout=60.0):
    conn = UnixHTTPConnection(sock_path, timeout)
    try:
        return request(conn, method, path, body)
    finally:
        conn.close()


def parse_ts(s):
    """RFC 3339 as the API writes it ("2026-11-22T10:00:00.123Z") -> UNIX seconds."""
    if not s:
        return None
    try:
        return datetime.datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00")).timestamp()
    except ValueError:
        return None


def read_rss(pid):
    """(VmRSS kB, VmHWM kB) of pid, or raises OSError."""
    rss = hwm = None
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    if rss is None:
        raise OSError(f"/proc/{pid}/status has no VmRSS (a kernel thread or a zombie?)")
    return rss, hwm


def read_cpu_s(pid):
    """utime + stime of pid (its threads included) in seconds, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def mib(kb):
    return f"{kb / 1024:.1f} MiB" if kb is not None else "n/a"


def pctl(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    return sorted_vals[max(1, math.ceil(p / 100.0 * len(sorted_vals))) - 1]


class RssSampler(threading.Thread):
    def __init__(self, pid, interval):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak = None
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                rss, _ = read_rss(self.pid)
                self.peak = rss if self.peak is None else max(self.peak, rss)
            except (OSError, ValueError):
                return
            self.stop.wait(self.interval)


class LeanConnection:
    """A keep-alive HTTP/1.1 client on the unix socket for the one request the submitters repeat:
    the request's bytes are built once, and the answer is read with a minimal parser
    (Content-Length or chunked body), so that the harness takes as little of the CPUs the daemon
    and its jobs need as the floors' harness (xargs) does. http.client's header parsing, and a
    thread per connection contending for the GIL, cost ~1 ms of CPU per job on a 2-core VM."""

    def __init__(self, path, timeout=30.0):
        self.path, self.timeout, self.sock, self.buf = path, timeout, None, b""

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.path)
        except OSError:
            s.close()
            raise
        self.sock, self.buf = s, b""

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock, self.buf = None, b""

    def fill(self):
        d = self.sock.recv(65536)
        if not d:
            raise http.client.RemoteDisconnected("the daemon closed the connection")
        self.buf += d

    def answer(self):
        """(status, body bytes) when buf holds a whole answer (taken from it), else None."""
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        lines = self.buf[:end].split(b"\r\n")
        status = int(lines[0].split()[1])
        hdr = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(b":")
            hdr[k.strip().lower()] = v.strip().lower()
        pos = end + 4
        if b"content-length" in hdr:
            stop = pos + int(hdr[b"content-length"])
            if len(self.buf) < stop:
                return None
            body = self.buf[pos:stop]
        elif hdr.get(b"transfer-encoding") == b"chunked":
            parts = []
            while True:
                eol = self.buf.find(b"\r\n", pos)
                if eol < 0:
                    return None
                size = int(self.buf[pos:eol].split(b";")[0], 16)
                pos = eol + 2
                if size == 0:
                    stop = self.buf.find(b"\r\n\r\n", pos - 2)      # no trailers: "0\r\n\r\n"
                    if stop < 0:
                        return None
                    stop += 4
                    break
                if len(self.buf) < pos + size + 2:
                    return None
                parts.append(self.buf[pos:pos + size])
                pos += size + 2
            body = b"".join(parts)
        else:
            raise http.client.HTTPException("an answer without Content-Length or chunked body")
        self.buf = self.buf[stop:]
        if hdr.get(b"connection") == b"close":
            self.close()
        return status, body

    def roundtrip(self, raw):
        """Sends raw (a whole request), waits, and returns (status, body bytes)."""
        if self.sock is None:
            self.connect()
        self.sock.sendall(raw)
        while True:
            a = self.answer()
            if a:
                return a
            self.fill()


def post_bytes(path, body):
    data = json.dumps(body).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data


def submit_all(sock_path, n, concurrency, body):
    """POSTs body n times, on `concurrency` keep-alive connections each with one request
    outstanding, from one thread (selectors). Returns (ids, failures Counter, examples,
    per-request latencies in s, t0 wall, t0 perf, t_done perf)."""
    import selectors
    ids, lat = [], []
    failures = collections.Counter()
    examples = {}
    raw = post_bytes("/v1/jobs", body)
    sel = selectors.DefaultSelector()
    conns = []
    for _ in range(concurrency):
        c = LeanConnection(sock_path)
        try:
            c.connect()
            conns.append(c)
        except OSError as ex:
            failures[f"connect: {ex.strerror or ex}"] += 1
    sent = 0
    t0_wall, t0 = time.time(), time.perf_counter()

    def send(c):
        nonlocal sent
        if sent >= n:
            return
        if c.sock is None:                  # the daemon closed it after an answer: a new one
            c.connect()
        sent += 1
        c.started = time.perf_counter()
        c.sock.sendall(raw)
        sel.register(c.sock, selectors.EVENT_READ, c)

    def fail(key, text):
        failures[key] += 1
        examples.setdefault(key, text)

    for c in conns:
        send(c)
    while sel.get_map():
        for key, _ in sel.select():
            c = key.data
            try:
                c.fill()
                a = c.answer()
            except (OSError, ValueError, http.client.HTTPException) as ex:
                # Not retried: the daemon may have created the job before the connection broke.
                sel.unregister(key.fileobj)
                c.close()
                fail(type(ex).__name__, str(ex))
                send(c)
                continue
            if a is None:
                continue
            lat.append(time.perf_counter() - c.started)
            sel.unregister(key.fileobj)
            code, data = a
            try:
                doc = json.loads(data) if data else None
            except ValueError:
                doc = {"_raw": data[:200].decode(errors="replace")}
            if code == 201 and isinstance(doc, dict) and doc.get("id"):
                ids.append(doc["id"])
            else:
                err = (doc or {}).get("error", {}) if isinstance(doc, dict) else {}
                fail(f"HTTP {code} {err.get('code', '')}".strip(), err.get("message") or str(doc)[:200])
            send(c)
    t_done = time.perf_counter()
    for c in conns:
        c.close()
    sel.close()
    return ids, failures, examples, lat, t0_wall, t0, t_done


ACTIVE = ("SCHEDULED", "QUEUED", "RUNNING", "STOPPING")


def wait_terminal(sock_path, ids, poll, timeout):
    """Polls until every id is terminal. Returns (jobs by id, perf time seen, polls).

    Each poll asks only for jobs still active (GET /v1/jobs?status=...), so the daemon is not
    made to serialise every finished job many times over while it is being measured; one full
    GET /v1/jobs at the end reads the final state of all of them."""
    want = set(ids)
    conn = UnixHTTPConnection(sock_path, timeout=120)
    deadline = time.perf_counter() + timeout
    polls = 0
    try:
        while True:
            active = set()
            for state in ACTIVE:
                code, doc = request(conn, "GET", "/v1/jobs?status=" + state)
                if code != 200:
                    raise RuntimeError(f"GET /v1/jobs?status={state} answered {code}: {doc}")
                active.update(j["id"] for j in doc.get("jobs", []) if j.get("id") in want)
            polls += 1
            now = time.perf_counter()
            if not active or now > deadline:
                code, doc = request(conn, "GET", "/v1/jobs")
                if code != 200:
                    raise RuntimeError(f"GET /v1/jobs answered {code}: {doc}")
                last = {j["id"]: j for j in doc.get("jobs", []) if j.get("id") in want}
                pending = [i for i in want if last.get(i, {}).get("status") not in TERMINAL]
                if not pending:
                    return last, now, polls, None
                if now > deadline:
                    return last, now, polls, f"timed out after {timeout:.0f} s with {len(pending)} jobs not terminal"
            if sys.stderr.isatty():
                print(f"\r  waiting: {len(want) - len(active)}/{len(want)} terminal", end="",
                      file=sys.stderr, flush=True)
            time.sleep(poll)
    finally:
        conn.close()
        if sys.stderr.isatty():
            print("\r" + " " * 40 + "\r", end="", file=sys.stderr, flush=True)


def delete_jobs(sock_path, ids, concurrency):
    lock = threading.Lock()
    todo = list(ids)
    refused = collections.Counter()

    def worker():
        conn = UnixHTTPConnection(sock_path)
        while True:
            with lock:
                if not todo:
                    break
                i = todo.pop()
            try:
                code, _ = request(conn, "DELETE", "/v1/jobs/" + i)
            except (OSError, http.client.HTTPException) as ex:
                conn.close()
                code = type(ex).__name__
            if code not in (200, 204):
                with lock:
                    refused[str(code)] += 1
        conn.close()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, concurrency))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return refused



# ---- floors: the same number of /bin/true runs through plain isolation tools, N at a time

FLOORS = {
    "unshare": ["unshare", "-fp", "--mount-proc", "/bin/true"],
    "bwrap": ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "/bin/true"],
}


def floor_check(name):
    """None when the floor's command runs here, else why not."""
    argv = FLOORS[name]
    if shutil.which(argv[0]) is None:
        return f"{argv[0]} not found (Debian: {'bubblewrap' if argv[0] == 'bwrap' else 'util-linux'})"
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        return f"{' '.join(argv)} exited {r.returncode}: {r.stderr.strip()[:200]}"
    return None


def measure_floor(args, name):
    """Runs FLOORS[name] args.jobs times, args.concurrency at a time (xargs -P), and times it."""
    argv = FLOORS[name]
    feed = ("x\n" * args.jobs).encode()
    t0 = time.perf_counter()
    r = subprocess.run(["xargs", "-P", str(args.concurrency), "-I", "{}", *argv],
                       input=feed, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    s = time.perf_counter() - t0
    ok = r.returncode == 0
    print(f"{name:<8} {args.jobs} x {' '.join(argv)}, {args.concurrency} at a time: {s:.3f} s = "
          f"{args.jobs / s:.1f} jobs/s" + ("" if ok else f"  FAILED (xargs {r.returncode}: "
                                           f"{r.stderr.decode(errors='replace').strip()[:200]})"), flush=True)
    return {"floor": name, "argv": argv, "jobs": args.jobs, "concurrency": args.concurrency,
            "seconds": s, "jobs_per_s": args.jobs / s if ok else None, "ok": ok}


def parse_target(text):
    """--target NAME=SOCKET -> (name, socket path)."""
    name, eq, sock = text.partition("=")
    if not eq or not name or not sock:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=SOCKET")
    return name, sock


WORKLOADS = {}      # name -> function(args, sock) returning submit_all's tuple; see workload_single


def workload_single(args, sock):
    """--jobs separate POST /v1/jobs {"command": ...}, --concurrency at a time."""
    return submit_all(sock, args.jobs, args.concurrency, {"command": args.command, **json.loads(args.fields)})


WORKLOADS["single"] = workload_single


def workload_array(args, sock):
    """One POST /v1/jobs {"command": ..., "array": "0-(N-1)%C"}: --jobs tasks, at most --concurrency
    at once (as the floors run C at a time); its tasks are made by the daemon as they start."""
    body = {"command": args.command, "array": f"0-{args.jobs - 1}%{args.concurrency}", **json.loads(args.fields)}
    failures, examples = collections.Counter(), {}
    t0_wall, t0 = time.time(), time.perf_counter()
    code, doc = api(sock, "POST", "/v1/jobs", body)
    t1 = time.perf_counter()
    if code == 201 and isinstance(doc, dict) and doc.get("kind") == "array":
        return [doc["id"]], failures, examples, [t1 - t0], t0_wall, t0, t1
    err = (doc or {}).get("error", {}) if isinstance(doc, dict) else {}
    key = f"HTTP {code} {err.get('code', '')}".strip()
    failures[key] += 1
    examples[key] = err.get("message") or str(doc)[:200]
    return [], failures, examples, [t1 - t0], t0_wall, t0, t1


WORKLOADS["array"] = workload_array


def wait_array(sock_path, aid, poll, timeout):
    """wait_terminal for an array: polls the array until every task ended, then reads its tasks
    (GET /v1/jobs?expand=1). Returns (tasks by id, perf time seen, polls, error)."""
    conn = UnixHTTPConnection(sock_path, timeout=120)
    deadline = time.perf_counter() + timeout
    polls = 0
    try:
        while True:
            code, doc = request(conn, "GET", "/v1/jobs/" + aid)
            if code != 200:
                raise RuntimeError(f"GET /v1/jobs/{aid} answered {code}: {doc}")
            polls += 1
            now = time.perf_counter()
            if doc.get("status") in TERMINAL or now > deadline:
                code, lst = request(conn, "GET", "/v1/jobs?expand=1")
                if code != 200:
                    raise RuntimeError(f"GET /v1/jobs?expand=1 answered {code}: {lst}")
                tasks = {j["id"]: j for j in lst.get("jobs", [])
                         if j.get("kind") != "array" and (j.get("array") or {}).get("id") == aid}
                err = None if doc.get("status") in TERMINAL else f"timed out after {timeout:.0f} s: {doc.get('array')}"
                return tasks, now, polls, err
            time.sleep(poll)
    finally:
        conn.close()


def delete_array(sock_path, aid):
    """DELETE /v1/jobs/ID until the array is gone (its tasks go a slice per request)."""
    conn = UnixHTTPConnection(sock_path)
    try:
        while True:
            code, doc = request(conn, "DELETE", "/v1/jobs/" + aid)
            if code != 200 or not doc.get("more"):
                return collections.Counter() if code == 200 else collections.Counter({str(code): 1})
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--socket", default="/run/joblet/joblet.sock", help="joblet's unix socket")
    ap.add_argument("--jobs", type=int, default=1000, help="jobs to submit (default 1000)")
    ap.add_argument("--concurrency", type=int, default=8,
                    help="submitter threads, and how many floor commands run at once (default 8)")
    ap.add_argument("--command", default="/bin/true", help="the job's command (default /bin/true)")
    ap.add_argument("--fields", default="{}", help='extra job fields as JSON, e.g. \'{"network": "host"}\'')
    ap.add_argument("--workload", default="single",
                    help="how joblet is given the jobs: single (one POST per job), array (one POST of an array of "
                         "--jobs tasks, --concurrency at once), or both as single,array: each a row of the same "
                         "rounds (default single)")
    ap.add_argument("--floors", default="unshare,bwrap",
                    help="comma-separated floors measured in the same rounds (unshare, bwrap), or none "
                         "(default unshare,bwrap)")
    ap.add_argument("--poll", type=float, default=0.1, help="seconds between GET /v1/jobs polls (default 0.1)")
    ap.add_argument("--timeout", type=float, default=600, help="give up waiting after this many seconds")
    ap.add_argument("--settle", type=float, default=2.0,
                    help="seconds to let the daemon go idle before the 'after' RSS reading (default 2)")
    ap.add_argument("--cleanup", action="store_true", help="delete the submitted jobs afterwards")
    ap.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    ap.add_argument("--target", action="append", type=parse_target, metavar="NAME=SOCKET",
                    help="repeatable: measure these daemons instead of --socket, in turn, once per round")
    ap.add_argument("--rounds", type=int, default=1,
                    help="rounds, every target and floor once per round, the order rotated each round; "
                         "even balances it (default 1)")
    ap.add_argument("--kept", type=int, default=0, metavar="N",
                    help="first give every daemon N ended jobs to keep (N /bin/true jobs, run and waited "
                         "for, %d at a time): what a submission costs with many jobs kept (default 0)" % KEPT_BATCH)
    args = ap.parse_args()
    if args.kept < 0:
        ap.error("--kept must be 0 or more")
    for _, sock in args.target or [("joblet", args.socket)]:
        if args.kept and keep_ended(args, sock) < 0:
            return 1
    args.workloads = [w.strip() for w in args.workload.split(",") if w.strip()]
    for w in args.workloads:
        if w not in WORKLOADS:
            ap.error(f"--workload: {w!r} is not one of {', '.join(sorted(WORKLOADS))}")
    args.workload = args.workloads[0]
    if args.jobs < 1 or args.concurrency < 1 or args.rounds < 1:
        ap.error("--jobs, --concurrency and --rounds must be at least 1")
    args.floor_names = [] if args.floors.strip() in ("", "none") else [f.strip() for f in args.floors.split(",")]
    for f in args.floor_names:
        if f not in FLOORS:
            ap.error(f"--floors: {f!r} is not one of {', '.join(FLOORS)} or none")
    if not args.target:
        args.target = [("joblet", args.socket)]
        if not args.floor_names and args.rounds == 1 and len(args.workloads) == 1:  # the plain single run
            doc = measure(args, args.socket)
            if doc is None:
                return 1
            if args.json:
                write_json(args.json, doc)
            return 0 if doc["ok"] else 1
    names = [t[0] for t in args.target]
    if len(set(names)) != len(names) or set(names) & set(FLOORS):
        ap.error("--target: a name is used twice, or is a floor's name")
    return compare(args)


KEPT_BATCH = 2000


def keep_ended(args, sock):
    """--kept: N /bin/true jobs submitted and waited for (KEPT_BATCH at a time), left kept: the
    table the measured submissions then meet. Not deleted by --cleanup."""
    t0 = time.perf_counter()
    left = args.kept
    while left > 0:
        n = min(left, KEPT_BATCH)
        ids, failures, *_ = submit_all(sock, n, args.concurrency, {"command": "/bin/true"})
        if failures:
            print(f"throughput: --kept: {sum(failures.values())} submissions failed: {dict(failures)}", file=sys.stderr)
            return -1
        _, _, _, err = wait_terminal(sock, ids, 0.5, args.timeout)
        if err:
            print(f"throughput: --kept: {err}", file=sys.stderr)
            return -1
        left -= n
    print(f"kept           {args.kept} ended jobs given to {sock} in {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"wrote {path}")


def compare(args):
    """Every target and floor once per round, the order rotated each round; jobs/s per round, medians,
    and the ratios to the first target and to each floor."""
    targets = args.target
    floors = []
    for f in args.floor_names:
        why = floor_check(f)
        if why:
            print(f"floor {f} left out: {why}", file=sys.stderr)
        else:
            floors.append(f)
    # a row per target and workload ("joblet-array" when several workloads), and per floor
    several = len(args.workloads) > 1
    rows = [("joblet", f"{n}-{w}" if several else n, sock, w) for n, sock in targets for w in args.workloads]
    rows += [("floor", f, None, None) for f in floors]
    runs = {name: [] for _, name, _, _ in rows}
    failed = False
    for rnd in range(args.rounds):
        k = rnd % len(rows)
        for kind, name, sock, w in rows[k:] + rows[:k]:
            print(f"\n== round {rnd + 1}/{args.rounds}: {name}" + (f" ({sock})" if sock else ""), flush=True)
            if w:
                args.workload = w
            doc = measure(args, sock) if kind == "joblet" else measure_floor(args, name)
            if doc is None:
                return 1
            failed |= not doc["ok"]
            doc["round"] = rnd + 1
            runs[name].append(doc)

    def rate(d):
        return d["jobs_per_s"] if d["jobs_per_s"] is not None else float("nan")

    joblet_rows = [name for kind, name, _, _ in rows if kind == "joblet"]
    base = joblet_rows[0]
    medians = {n: statistics.median(rate(d) for d in ds) for n, ds in runs.items()}
    print(f"\njobs/s ({args.jobs} x {args.command}, joblet workload {','.join(args.workloads)}, {args.concurrency} submitters;"
          f" joblet: first submit -> last ended_at; floors: {args.concurrency} at a time, wall time)")
    w = max([8] + [len(n) for n in runs])
    cols = ([f"/{base}"] if len(joblet_rows) > 1 else []) + [f"/{f}" for f in floors]
    print(f"{'row':<{w}} " + " ".join(f"{'round ' + str(i + 1):>9}" for i in range(args.rounds))
          + f" {'median':>9} {'min-max':>13}" + "".join(f" {c:>9}" for c in cols) + f" {'daemon us/job':>14}")
    ratios = {}
    for n, ds in runs.items():
        rs = [rate(d) for d in ds]
        line = f"{n:<{w}} " + " ".join(f"{r:>9.1f}" for r in rs) + f" {medians[n]:>9.1f} {min(rs):>6.0f}-{max(rs):<6.0f}"
        if n in joblet_rows:
            ref = ([base] if len(joblet_rows) > 1 else []) + floors
            ratios[n] = {r: medians[n] / medians[r] for r in ref}
            line += "".join(f" {ratios[n][r]:>8.3f}x" for r in ref)
            cpu = [d["daemon_cpu_us_per_job"] for d in ds if d.get("daemon_cpu_us_per_job") is not None]
            if cpu:
                line += f" {statistics.median(cpu):>14.0f}"
        print(line)
    if args.json:
        write_json(args.json, {
            "benchmark": "throughput_compare",
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": {"cpus": os.cpu_count()},
            "jobs": args.jobs, "concurrency": args.concurrency, "command": args.command, "rounds": args.rounds,
            "workload": args.workloads,
            "targets": {n: s for n, s in targets},
            "floors": {f: FLOORS[f] for f in floors},
            "median_jobs_per_s": medians,
            "ratios": ratios,
            "runs": runs,
        })
    return 1 if failed else 0


def measure(args, sock):
    """One throughput run against the daemon at sock; prints it and returns the figures as a dict
    (None when the daemon cannot be reached)."""
    # ---- the daemon and its idle RSS
    try:
        code, ver = api(sock, "GET", "/v1/version", timeout=10)
    except (OSError, http.client.HTTPException) as ex:
        print(f"throughput: cannot reach joblet at {sock}: {ex} (is it running? --socket)", file=sys.stderr)
        return None
    if code != 200 or not isinstance(ver, dict):
        print(f"throughput: GET /v1/version answered {code}: {ver}", file=sys.stderr)
        return None
    pid = ver.get("pid")
    rss_note = None
    rss_before = hwm_before = None
    try:
        if not isinstance(pid, int):
            raise OSError("GET /v1/version has no pid")
        rss_before, hwm_before = read_rss(pid)
    except (OSError, ValueError) as ex:
        rss_note = f"daemon RSS unavailable: {ex}"
    sampler = None
    if rss_before is not None:
        sampler = RssSampler(pid, 0.05)
        sampler.start()

    print(f"joblet {ver.get('version', '?')} (pid {pid}, cgroups {ver.get('cgroup_layout', '?')}) at {sock}: "
          f"{args.jobs} x {args.command}, {args.concurrency} submitters, {os.cpu_count()} CPUs", flush=True)

    cpu_before = read_cpu_s(pid) if isinstance(pid, int) else None
    # ---- submit, then wait
    ids, failures, examples, lat, t0_wall, t0, t_submitted = WORKLOADS[args.workload](args, sock)
    submit_s = t_submitted - t0
    jobs, t_seen, polls, wait_err = ({}, t_submitted, 0, None)
    array = args.workload == "array"
    if ids:
        try:
            if array:
                jobs, t_seen, polls, wait_err = wait_array(sock, ids[0], args.poll, args.timeout)
            else:
                jobs, t_seen, polls, wait_err = wait_terminal(sock, ids, args.poll, args.timeout)
        except (OSError, http.client.HTTPException, RuntimeError) as ex:
            wait_err = f"polling failed: {ex}"
    if sampler:
        sampler.stop.set()
        sampler.join()
    cpu_after = read_cpu_s(pid) if cpu_before is not None else None
    njobs = len(jobs) if array else len(ids)   # an array: its tasks are the jobs
    daemon_cpu_us = ((cpu_after - cpu_before) * 1e6 / njobs) if cpu_after is not None and njobs else None

    rss_after = hwm_after = None
    if rss_before is not None:
        time.sleep(args.settle)
        try:
            rss_after, hwm_after = read_rss(pid)
        except (OSError, ValueError) as ex:
            rss_note = f"daemon RSS after the run unavailable: {ex}"

    # ---- figures
    statuses = collections.Counter(j.get("status") for j in jobs.values())
    reasons = collections.Counter(j.get("end_reason") for j in jobs.values() if j.get("status") in TERMINAL)
    missing = (args.jobs if array and ids else len(ids)) - len(jobs)
    ends = [parse_ts(j.get("ended_at")) for j in jobs.values() if j.get("status") in TERMINAL]
    ends = [e for e in ends if e is not None]
    last_end = max(ends) if ends else None
    seen_s = t_seen - t0
    ended_s = (last_end - t0_wall) if last_end is not None else None
    done = sum(n for s, n in statuses.items() if s in TERMINAL)
    lat_ms = sorted(x * 1000 for x in lat)

    print()
    print(f"submitted      {len(ids)}/{args.jobs} in {submit_s:.3f} s = {len(ids) / submit_s:.1f} submits/s"
          f"   POST latency median {statistics.median(lat_ms) if lat_ms else float('nan'):.2f} ms,"
          f" p95 {pctl(lat_ms, 95):.2f} ms")
    for k, n in failures.most_common():
        print(f"  refused      {n:5d} x {k}: {examples.get(k, '')}")
    if wait_err:
        print(f"WARNING: {wait_err}")
    if ended_s is not None and done:
        print(f"throughput     {done / ended_s:.1f} jobs/s   ({done} terminal jobs, first submit -> last ended_at "
              f"{ended_s:.3f} s)")
    print(f"observed       {done / seen_s if done else 0:.1f} jobs/s   (first submit -> poll that saw all terminal "
          f"{seen_s:.3f} s; {polls} polls every {args.poll} s)")
    print("final status   " + (", ".join(f"{s} {n}" for s, n in sorted(statuses.items())) or "none")
          + (f", not listed {missing}" if missing else ""))
    if reasons:
        print("end_reason     " + ", ".join(f"{r} {n}" for r, n in sorted(reasons.items(), key=lambda x: str(x[0]))))
    if daemon_cpu_us is not None:
        print(f"daemon CPU     {daemon_cpu_us:.0f} us per job (its loop thread, user + system, polls included)")
    if rss_before is not None:
        peak = sampler.peak if sampler else None
        growth = (rss_after - rss_before) if rss_after is not None else None
        per_job = f", {growth * 1024 / njobs:.0f} B per job kept" if growth is not None and njobs else ""
        print(f"daemon RSS     idle before {mib(rss_before)}, peak during {mib(peak)}, idle after {mib(rss_after)}"
              + (f" ({'+' if growth >= 0 else ''}{growth / 1024:.1f} MiB{per_job})" if growth is not None else "")
              + f"; VmHWM {mib(hwm_after or hwm_before)}")
    if rss_note:
        print(rss_note)

    rss_cleanup = None
    if args.cleanup and ids:
        refused = delete_array(sock, ids[0]) if array else delete_jobs(sock, ids, args.concurrency)
        print(f"cleanup        deleted {njobs - sum(refused.values())} jobs"
              + ("; refused: " + ", ".join(f"{k} x{n}" for k, n in refused.items()) if refused else ""))
        if rss_before is not None:
            time.sleep(args.settle)
            try:
                rss_cleanup, _ = read_rss(pid)
                print(f"daemon RSS     after cleanup {mib(rss_cleanup)}")
            except (OSError, ValueError):
                pass

    doc = {
        "benchmark": "throughput",
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": {"cpus": os.cpu_count()},
        "daemon": ver,
        "jobs": args.jobs, "concurrency": args.concurrency, "command": args.command,
        "submitted": len(ids), "submit_s": submit_s, "submits_per_s": len(ids) / submit_s,
        "post_latency_ms": {"median": statistics.median(lat_ms) if lat_ms else None,
                            "p95": pctl(lat_ms, 95) if lat_ms else None},
        "refused": dict(failures),
        "terminal": done,
        "to_last_ended_s": ended_s, "jobs_per_s": (done / ended_s) if ended_s and done else None,
        "to_observed_s": seen_s, "jobs_per_s_observed": done / seen_s if done else None,
        "daemon_cpu_us_per_job": daemon_cpu_us,
        "status": dict(statuses), "end_reason": {str(k): v for k, v in reasons.items()},
        "rss_kb": {"idle_before": rss_before, "peak_during": sampler.peak if sampler else None,
                   "idle_after": rss_after, "vmhwm": hwm_after or hwm_before,
                   "after_cleanup": rss_cleanup},
        "error": wait_err,
        "ok": not wait_err and not failures and done == args.jobs,
    }
    return doc


if __name__ == "__main__":
    sys.exit(main())
