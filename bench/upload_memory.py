#!/usr/bin/env python3
"""Upload memory: what a large --upload costs the daemon in memory, and how fast it goes.

Makes a file of --size bytes (random, or sparse with --sparse) in a temporary directory, starts
a joblet of its own (state directory beside the file: the same disk) and uploads the file with

  rnx job run --upload FILE true          (streamed: POST with the listing, PUT of the bytes)

while a thread samples the daemon's VmRSS every --interval ms from /proc/PID/status. Then, for
comparison, at --old-size (the old form holds the whole body, so it cannot go far):

  the same rnx command at --old-size       (streamed)
  POST /v1/jobs with the file as content_b64 inside the JSON body   (the old form, still taken)
  cp FILE DEST                             (the floor: one copy on the same disk, no daemon)

Each upload runs against a fresh daemon, so VmHWM (the peak RSS since the daemon started) is
the peak of that upload alone. Printed per row: the time, MB/s, the daemon's VmRSS before, the
highest VmRSS sampled, the growth, VmHWM and its growth over the RSS before, and the slowest
answer to GET /v1/version asked every 50 ms meanwhile (does the daemon go on serving others?). --json FILE also
writes the figures. The file stays in the page cache between rows (it was just written), so
every row reads it from memory; the job's copy goes to the page cache and is written back by
the kernel as usual.

  sudo python3 bench/upload_memory.py                        # 2 GiB streamed, 200 MiB old form
  sudo python3 bench/upload_memory.py --size 4G --dir /var/tmp --json up.json

Standard library only; needs root (the daemon does).
"""

import argparse
import base64
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1 << 20


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=600.0):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def api(sock, method, path, body=None, raw=None, timeout=600.0):
    c = UnixHTTPConnection(sock, timeout)
    try:
        headers = {"Accept": "application/json"}
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        text = r.read()
        return r.status, (json.loads(text) if text else None)
    finally:
        c.close()


def parse_size(s):
    s = s.strip().upper().rstrip("B").rstrip("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(s[-1:], 1)
    return int(float(s[:-1] if s[-1:] in "KMGT" else s) * mult)


def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {key} in /proc/{pid}/status")


class Sampler(threading.Thread):
    """VmRSS of pid every interval seconds until stopped; keeps the highest."""

    def __init__(self, pid, interval):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_kb, self.samples = 0, 0
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            try:
                kb = status_kb(self.pid, "VmRSS")
            except (OSError, RuntimeError):
                return
            self.peak_kb = max(self.peak_kb, kb)
            self.samples += 1
            self.halt.wait(self.interval)

    def stop(self):
        self.halt.set()
        self.join()


class Pinger(threading.Thread):
    """GET /v1/version every period seconds until stopped; keeps the slowest answer: whether the
    daemon goes on serving others while it writes an upload."""

    def __init__(self, sock, period=0.05):
        super().__init__(daemon=True)
        self.sock, self.period = sock, period
        self.worst_ms, self.count = 0.0, 0
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            t0 = time.perf_counter()
            try:
                api(self.sock, "GET", "/v1/version", timeout=30)
            except OSError:
                pass
            self.worst_ms = max(self.worst_ms, (time.perf_counter() - t0) * 1000)
            self.count += 1
            self.halt.wait(self.period)

    def stop(self):
        self.halt.set()
        self.join()


class Daemon:
    def __init__(self, build, base, config):
        self.dir = tempfile.mkdtemp(prefix="upload-bench-", dir=base)
        os.chmod(self.dir, 0o755)
        self.sock = os.path.join(self.dir, "joblet.sock")
        self.state = os.path.join(self.dir, "state")
        self.build = build
        cfg = os.path.join(self.dir, "joblet.yml")
        with open(cfg, "w") as f:
            f.write(f"cgroup:\n  root: upload-bench-{os.getpid()}\n" + config)
        self.log = open(os.path.join(self.dir, "joblet.log"), "w")
        self.proc = subprocess.Popen([os.path.join(build, "joblet"), "--config", cfg, "--state-dir", self.state,
                                      "--socket", self.sock], stdout=self.log, stderr=self.log)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                code, ver = api(self.sock, "GET", "/v1/version", timeout=2)
                if code == 200:
                    self.pid = ver["pid"]
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("joblet did not start; see " + self.log.name)

    def wait(self, jid, timeout=600):
        deadline = time.time() + timeout
        while time.time() < deadline:
            code, job = api(self.sock, "GET", f"/v1/jobs/{jid}")
            if job["status"] in ("COMPLETED", "FAILED", "STOPPED", "CANCELED"):
                return job
            time.sleep(0.05)
        raise RuntimeError(f"job {jid} did not end")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        # the daemon's cgroup root, in whichever hierarchies it made one; a job's shim may still
        # be removing its own cgroups for a moment after the job ended
        tops = [os.path.join(base, f"upload-bench-{os.getpid()}") for base in
                ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] +
                [f"/sys/fs/cgroup/{c}" for c in ("cpu", "cpuacct", "memory", "pids", "blkio", "cpuset", "devices")]]
        deadline = time.time() + 10
        while True:
            left = []
            for top in tops:
                for root, dirs, _ in os.walk(top, topdown=False):
                    try:
                        os.rmdir(root)
                    except OSError:
                        left.append(root)
            if not left or time.time() > deadline:
                break
            time.sleep(0.1)


def measure(name, size, daemon, action, interval):
    """Runs action() against daemon while sampling its RSS; returns one row."""
    rss0 = status_kb(daemon.pid, "VmRSS")
    sampler = Sampler(daemon.pid, interval)
    pinger = Pinger(daemon.sock)
    sampler.start()
    pinger.start()
    t0 = time.perf_counter()
    detail = action()
    secs = time.perf_counter() - t0
    sampler.stop()
    pinger.stop()
    hwm = status_kb(daemon.pid, "VmHWM")
    peak = max(sampler.peak_kb, rss0)
    return {"row": name, "bytes": size, "seconds": round(secs, 3), "mb_s": round(size / MiB / secs, 1),
            "rss_before_kib": rss0, "rss_peak_kib": peak, "rss_growth_kib": peak - rss0,
            "vmhwm_kib": hwm, "vmhwm_growth_kib": hwm - rss0, "samples": sampler.samples,
            "other_request_worst_ms": round(pinger.worst_ms, 1), "other_requests": pinger.count, "detail": detail}


def rnx_upload(build, daemon, path):
    def run():
        env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": daemon.sock}
        p = subprocess.run([os.path.join(build, "rnx"), "job", "run", "--upload", path, "true"],
                           capture_output=True, text=True, env=env, timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(f"rnx job run --upload failed ({p.returncode}): {p.stderr.strip()}")
        jid = p.stdout.strip()
        job = daemon.wait(jid)
        listed = {u["path"]: u["size"] for u in job["uploads"]}
        want = os.path.getsize(path)
        if listed.get(os.path.basename(path)) != want:
            raise RuntimeError(f"the job lists {listed}, expected {want} bytes")
        return jid
    return run


def old_upload(daemon, path):
    def run():
        with open(path, "rb") as f:
            b64 = base64.b64encode(f.read()).decode()
        body = json.dumps({"command": "true", "uploads": [
            {"path": os.path.basename(path), "type": "file", "mode": 0o644, "content_b64": b64}]}).encode()
        del b64
        code, job = api(daemon.sock, "POST", "/v1/jobs", raw=body)
        if code != 201:
            raise RuntimeError(f"POST /v1/jobs answered {code}: {job}")
        return job["id"]
    return run


def make_file(path, size, sparse):
    with open(path, "wb") as f:
        if sparse:
            f.truncate(size)
            return
        chunk = os.urandom(8 * MiB)
        left = size
        while left:
            n = min(left, len(chunk))
            f.write(chunk[:n])
            left -= n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="directory holding joblet and rnx")
    ap.add_argument("--size", default="2G", help="the streamed upload's size (default 2G)")
    ap.add_argument("--old-size", default="200M", help="size for the old form and its comparisons (default 200M)")
    ap.add_argument("--dir", default="/var/tmp", help="where the file and the daemons' state go (one disk)")
    ap.add_argument("--sparse", action="store_true", help="a sparse file instead of random bytes")
    ap.add_argument("--interval", type=float, default=10, help="RSS sampling period in ms (default 10)")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("upload_memory: needs root (joblet does)")
    size, old_size = parse_size(args.size), parse_size(args.old_size)
    interval = args.interval / 1000
    work = tempfile.mkdtemp(prefix="upload-bench-", dir=args.dir)
    big, small = os.path.join(work, "big.bin"), os.path.join(work, "small.bin")
    # the old form holds the body, its base64 and the decoded bytes: allow it what it needs
    config = (f"server:\n  max_body_bytes: {old_size * 4 // 3 + 4 * MiB}\n"
              f"jobs:\n  max_upload_bytes: {max(size, old_size) + MiB}\n")
    rows = []
    try:
        print(f"making {human(size)} and {human(old_size)} {'sparse' if args.sparse else 'random'} files in {work} ...",
              file=sys.stderr)
        make_file(big, size, args.sparse)
        make_file(small, old_size, args.sparse)
        plan = [
            ("streamed (rnx --upload)", size, lambda d: rnx_upload(args.build, d, big)),
            ("streamed (rnx --upload)", old_size, lambda d: rnx_upload(args.build, d, small)),
            ("old JSON + base64 (POST)", old_size, lambda d: old_upload(d, small)),
        ]
        for name, n, make in plan:
            d = Daemon(args.build, args.dir, config)
            try:
                time.sleep(0.2)  # let the start settle
                rows.append(measure(name, n, d, make(d), interval))
            finally:
                d.stop()
            print(f"  {name} {human(n)}: done", file=sys.stderr)
        # cp's own peak through GNU time (a child's ru_maxrss would include the forking Python's)
        dest = os.path.join(work, "copy.bin")
        t0 = time.perf_counter()
        timer = ["/usr/bin/time", "-f", "%M"] if os.access("/usr/bin/time", os.X_OK) else []
        cp = subprocess.run(timer + ["cp", big, dest], capture_output=True, text=True)
        secs = time.perf_counter() - t0
        if cp.returncode:
            raise RuntimeError(f"cp exited {cp.returncode}: {cp.stderr}")
        os.unlink(dest)
        maxrss = int(cp.stderr.split()[-1]) if timer else None
        rows.append({"row": "cp (floor)", "bytes": size, "seconds": round(secs, 3),
                     "mb_s": round(size / MiB / secs, 1), "cp_maxrss_kib": maxrss})
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"\njoblet upload, {'sparse' if args.sparse else 'random'} data, state on the same disk as the file "
          f"(RSS sampled every {args.interval:g} ms)\n")
    hdr = f"{'path':<26} {'size':>9} {'time':>8} {'MB/s':>7} {'RSS before':>11} {'RSS peak':>10} {'growth':>9} " \
          f"{'VmHWM':>9} {'HWM growth':>11} {'GET worst':>10}"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        if "rss_before_kib" in r:
            print(f"{r['row']:<26} {human(r['bytes']):>9} {r['seconds']:>7.2f}s {r['mb_s']:>7.0f} "
                  f"{r['rss_before_kib'] / 1024:>8.1f} MiB {r['rss_peak_kib'] / 1024:>6.1f} MiB "
                  f"{r['rss_growth_kib'] / 1024:>5.1f} MiB {r['vmhwm_kib'] / 1024:>5.1f} MiB "
                  f"{r['vmhwm_growth_kib'] / 1024:>7.1f} MiB {r['other_request_worst_ms']:>7.0f} ms")
        else:
            rss = f"{r['cp_maxrss_kib'] / 1024:.1f} MiB" if r["cp_maxrss_kib"] else "unknown: no /usr/bin/time"
            print(f"{r['row']:<26} {human(r['bytes']):>9} {r['seconds']:>7.2f}s {r['mb_s']:>7.0f}   "
                  f"(cp's own max RSS {rss})")
    streamed = rows[0]
    ok = streamed["vmhwm_growth_kib"] < 32 * 1024
    print(f"\ntarget: the daemon's RSS grows < 32 MiB during the {human(size)} upload: "
          f"{'met' if ok else 'NOT met'} ({streamed['vmhwm_growth_kib'] / 1024:.1f} MiB by VmHWM)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "sparse": args.sparse, "target_met": ok}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
