#!/usr/bin/env python3
"""Log throughput: how fast a job's output reaches a follower and replays, beside the disk.

Starts a joblet of its own (from --build, state under --dir), then, with --size bytes of
100-byte lines (`yes` of a 99-character line, cut by `head -c`), times, in one run:

  floor      the job writing its output to a file in its own /work (timed inside the job:
             what its disk takes, with no log path at all)
  job only   the job writing to stdout, nobody following (the shim storing it)
  follow     rnx job run --follow, output to /dev/null (the job writing while rnx streams it)
  replay     rnx job log ID > /dev/null, once the job has ended (the framed form; this and the
             next three rows: the median of --rounds, interleaved)
  replay -t  the same with --timestamps (a time before every line: rnx's work per line)
  ndjson     rnx job log --json ID > /dev/null (one JSON record per line, for scripts)
  cat        cat of the stored .data file to /dev/null (page cache: the upper bound of a read)

and prints each row's seconds, MB/s, its share of the floor's rate, and rnx's CPU time (user +
system) per GB. Then the latency of one line, job write to follower output: a job prints its
clock (ns) every 20 ms for --lines lines; the follower, through `rnx job log -f`, stamps each
line as it reads it from rnx's stdout; median and p99.

  sudo python3 bench/log_throughput.py                         # 1 GB
  sudo python3 bench/log_throughput.py --size 256M --json logs.json
  sudo python3 bench/log_throughput.py --build OLD/build       # an older build (rows its rnx lacks are left out)

Standard library only; needs root (the daemon does).
"""

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import http.client
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINE = "x" * 99


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=600.0):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def api(sock, method, path, timeout=600.0):
    c = UnixHTTPConnection(sock, timeout)
    try:
        c.request(method, path, headers={"Accept": "application/json"})
        r = c.getresponse()
        text = r.read()
        return r.status, (json.loads(text) if text else None)
    finally:
        c.close()


def parse_size(s):
    s = s.strip().upper().rstrip("B").rstrip("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:], 1)
    return int(float(s[:-1] if s[-1:] in "KMG" else s) * mult)


class Daemon:
    def __init__(self, build, where, size):
        self.build = build
        self.dir = tempfile.mkdtemp(prefix="log-bench-", dir=where)
        self.state = os.path.join(self.dir, "state")
        self.sock = os.path.join(self.dir, "joblet.sock")
        cfg = os.path.join(self.dir, "joblet.yml")
        with open(cfg, "w") as f:
            # room for the whole output in the logs, and for the floor's file in /work
            f.write(f"jobs:\n  max_log_bytes: {size * 2 + (64 << 20)}\n  work_quota: {size * 3 + (1 << 30)}\n")
        self.log = open(os.path.join(self.dir, "joblet.log"), "w")
        self.proc = subprocess.Popen([os.path.join(build, "joblet"), "--config", cfg, "--state-dir", self.state,
                                      "--socket", self.sock], stdout=self.log, stderr=self.log)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if api(self.sock, "GET", "/v1/version", timeout=2)[0] == 200:
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("joblet did not start; see " + self.log.name)

    def rnx(self, *args, stdout=subprocess.DEVNULL, check=True):
        """Runs rnx; returns (seconds, its CPU seconds, the CompletedProcess)."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run([os.path.join(self.build, "rnx"), "--socket", self.sock, *args], stdout=stdout,
                           stderr=subprocess.PIPE, text=stdout is subprocess.PIPE)
        t = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if check and p.returncode != 0:
            raise RuntimeError(f"rnx {' '.join(args)}: exit {p.returncode}: {p.stderr}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return t, cpu, p

    def wait(self, jid, timeout=1200):
        deadline = time.time() + timeout
        while time.time() < deadline:
            job = api(self.sock, "GET", f"/v1/jobs/{jid}")[1]
            if job["status"] in ("COMPLETED", "FAILED", "STOPPED", "CANCELED"):
                return job
            time.sleep(0.02)
        raise RuntimeError(f"job {jid} did not end")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self.log.close()


def gen(size):
    return f"yes {LINE} | head -c {size}"


def latency(d, lines):
    """Job write to follower output, per line, in ms."""
    script = f"i=0; while [ $i -lt {lines} ]; do date +%s%N; i=$((i+1)); sleep 0.02; done"
    p = subprocess.Popen([os.path.join(d.build, "rnx"), "--socket", d.sock, "job", "run", "--follow", "sh", "-c",
                          script], stdout=subprocess.PIPE, bufsize=0)
    samples = []
    buf = b""
    while True:
        chunk = p.stdout.read1(65536) if hasattr(p.stdout, "read1") else os.read(p.stdout.fileno(), 65536)
        now = time.time_ns()
        if not chunk:
            break
        buf += chunk
        *done, buf = buf.split(b"\n")
        for line in done:
            if line.strip().isdigit():
                samples.append((now - int(line)) / 1e6)
    p.wait()
    samples.sort()
    if not samples:
        return None
    return {"n": len(samples), "median_ms": samples[len(samples) // 2],
            "p99_ms": samples[min(len(samples) - 1, int(len(samples) * 0.99))], "max_ms": samples[-1]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="directory holding joblet and rnx")
    ap.add_argument("--size", default="1G", help="output size (default 1G = 10.7 million lines of 100 bytes)")
    ap.add_argument("--dir", default="/var/tmp", help="where the daemon's state goes")
    ap.add_argument("--lines", type=int, default=300, help="lines for the latency measure (default 300)")
    ap.add_argument("--rounds", type=int, default=3, help="replays of each kind; the median is shown (default 3)")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("log_throughput: needs root (joblet does)")
    size = parse_size(args.size)
    d = Daemon(args.build, args.dir, size)
    rows = {}
    try:
        # the floor: the job's own disk, timed inside the job
        t, _, p = d.rnx("job", "run", "--follow", "sh", "-c",
                        f"s=$(date +%s%N); {gen(size)} > /work/out; sync -f /work/out 2>/dev/null; "
                        f"e=$(date +%s%N); echo $((e - s))", stdout=subprocess.PIPE)
        rows["floor"] = {"s": int(p.stdout.strip()) / 1e9, "cpu": None}
        # the shim storing it, nobody following
        t0 = time.perf_counter()
        _, _, p = d.rnx("job", "run", "sh", "-c", gen(size), stdout=subprocess.PIPE)
        jid = p.stdout.strip()
        d.wait(jid)
        rows["job only"] = {"s": time.perf_counter() - t0, "cpu": None}
        # following while the job writes
        t, cpu, _ = d.rnx("job", "run", "--follow", "sh", "-c", gen(size))
        rows["follow"] = {"s": t, "cpu": cpu}
        # replays of the stored output: each the median of --rounds, the rows interleaved so
        # that the page cache and the machine's load treat them alike
        data = os.path.join(d.state, "jobs", jid, "stdout.data")
        if not os.path.exists(data):
            data = os.path.join(d.state, "jobs", jid, "stdout.log")   # an older joblet's file
        plan = [("replay", ["job", "log", jid]), ("replay -t", ["job", "log", "--timestamps", jid]),
                ("ndjson", ["job", "log", "--json", jid]), ("cat", None)]
        got = {name: [] for name, _ in plan}
        for _ in range(args.rounds):
            for name, argv in plan:
                if argv is None:
                    t0 = time.perf_counter()
                    subprocess.run(["cat", data], stdout=subprocess.DEVNULL, check=True)
                    got[name].append((time.perf_counter() - t0, None))
                    continue
                t, cpu, p = d.rnx(*argv, check=False)
                if p.returncode != 0:
                    got[name] = None   # this build's rnx has no such flag
                    plan = [x for x in plan if x[0] != name]
                    break
                got[name].append((t, cpu))
        for name, samples in got.items():
            if samples:
                samples.sort()
                t, cpu = samples[len(samples) // 2]
                rows[name] = {"s": t, "cpu": cpu}
        lat = latency(d, args.lines)
    finally:
        d.stop()
        shutil.rmtree(d.dir, ignore_errors=True)

    gb = size / 1e9
    floor = rows["floor"]["s"]
    print(f"{size / 1e6:.0f} MB of 100-byte lines; {os.cpu_count()} CPUs; kernel {os.uname().release}")
    print(f"{'row':<10} {'seconds':>8} {'MB/s':>8} {'of floor':>9} {'rnx CPU s/GB':>13}")
    for name, r in rows.items():
        r["mb_s"] = size / 1e6 / r["s"]
        r["of_floor"] = floor / r["s"]
        cpu = f"{r['cpu'] / gb:13.2f}" if r["cpu"] is not None else f"{'-':>13}"
        print(f"{name:<10} {r['s']:8.2f} {r['mb_s']:8.0f} {r['of_floor'] * 100:8.0f}% {cpu}")
    if lat:
        print(f"one line, job write to follower: median {lat['median_ms']:.2f} ms, p99 {lat['p99_ms']:.2f} ms, "
              f"max {lat['max_ms']:.2f} ms ({lat['n']} lines)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"size": size, "rows": rows, "latency": lat, "cpus": os.cpu_count(),
                       "kernel": os.uname().release}, f, indent=2)


if __name__ == "__main__":
    main()
