#!/usr/bin/env python3
"""Start latency in a runtime: the wall time to launch /bin/true and see it finish, three ways,
interleaved so that drifts in machine load hit each alike (docs/performance.md, "Runtimes"):

  plain     rnx job run --follow /bin/true                      the host's /usr, /etc, /bin, /lib
  runtime   rnx job run --follow --runtime=python-3.11 /bin/true  the runtime's tree instead
  runc      runc run on a bundle whose root is that same tree (read-only), runc's defaults

The target (issue 13): the runtime costs at most 3 ms more than plain at the median; the tree is
prepared once and bound read-only, never copied per job.

By default the benchmark starts its own joblet (from --build, default ./build) with a scratch
state directory and installs the runtime from joblet's build cache (--cache, default the tests'
/var/cache/joblet-test-runtimes; built from the mirror when the cache has no archive of the
recipe). --socket uses a running joblet that has the runtime instead. Needs root.

  bench/runtime_start.py --runs 300 [--json out.json]

Standard library only; shares its runner and statistics with start_latency.py.
"""

import argparse
import gc
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import start_latency as sl  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRUE = "/bin/true"


class OwnDaemon:
    """A joblet of the benchmark's own, torn down with its jobs."""

    def __init__(self, build, cache=None, config=""):
        """cache: runtimes.cache_dir (None: joblet's default); config: more of joblet.yml, whole
        sections (network: ...)."""
        self.dir = tempfile.mkdtemp(prefix="joblet-bench-rt-")
        os.chmod(self.dir, 0o755)
        self.sock = os.path.join(self.dir, "joblet.sock")
        self.state = os.path.join(self.dir, "state")
        self.cgroot = f"joblet-bench-{os.getpid()}"
        cfg = os.path.join(self.dir, "joblet.yml")
        with open(cfg, "w") as f:
            f.write(f"cgroup:\n  root: {self.cgroot}\n")
            if cache:
                f.write(f"runtimes:\n  cache_dir: {cache}\n  cache_keep: 8\n")
            f.write(config)
        if cache:
            os.makedirs(cache, mode=0o700, exist_ok=True)
        self.log = open(os.path.join(self.dir, "joblet.log"), "w")
        self.proc = subprocess.Popen([os.path.join(build, "joblet"), "--config", cfg, "--state-dir", self.state,
                                      "--socket", self.sock], stdout=self.log, stderr=self.log,
                                     env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if sl.api(self.sock, "GET", "/v1/version")[0] == 200:
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("joblet did not start; see " + self.log.name)

    def close(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified") + tuple(
                f"/sys/fs/cgroup/{c}" for c in ("cpu", "cpuacct", "memory", "pids", "blkio", "cpuset", "devices")):
            path = os.path.join(base, self.cgroot)
            if os.path.isdir(path):
                for sub in os.listdir(path):
                    try:
                        os.rmdir(os.path.join(path, sub))
                    except OSError:
                        pass
                try:
                    os.rmdir(path)
                except OSError:
                    pass
        shutil.rmtree(self.dir, ignore_errors=True)


def runc_bundle(tmp, rootfs):
    """config.json from `runc spec`, its root the runtime's tree, read-only."""
    bundle = os.path.join(tmp, "bundle")
    os.makedirs(bundle)
    p = subprocess.run(["runc", "spec", "--bundle", bundle], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"runc spec: {sl.tail(p.stderr)}")
    path = os.path.join(bundle, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg["process"]["args"] = [TRUE]
    cfg["process"]["terminal"] = False
    cfg["root"] = {"path": rootfs, "readonly": True}
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)
    return bundle


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=200, help="timed runs per row (default 200)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed runs per row first (default 10)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="joblet's build directory (own daemon)")
    ap.add_argument("--cache", default=os.environ.get("JOBLET_TEST_RUNTIME_CACHE", "/var/cache/joblet-test-runtimes"),
                    help="runtimes.cache_dir of the own daemon")
    ap.add_argument("--socket", help="use this running joblet instead of starting one")
    ap.add_argument("--runtime", default="python-3.11", help="the runtime (default python-3.11)")
    ap.add_argument("--recipe", help="its recipe, built when the joblet lacks it (default runtimes/RUNTIME.yml)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures and raw samples to FILE")
    args = ap.parse_args()
    if os.geteuid() != 0:
        ap.error("needs root (joblet and runc)")
    own = None if args.socket else OwnDaemon(args.build, args.cache)
    sock = args.socket or own.sock
    rnx = os.path.join(args.build, "rnx")
    tmp = tempfile.mkdtemp(prefix="joblet-bench-rtc-")
    try:
        code, rt = sl.api(sock, "GET", f"/v1/runtimes/{args.runtime}")
        if code == 404:
            recipe = args.recipe or os.path.join(ROOT, "runtimes", args.runtime + ".yml")
            t0 = time.time()
            p = subprocess.run([rnx, "--socket", sock, "runtime", "build", recipe], capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"building {args.runtime} failed: {sl.tail(p.stderr, 2000)}")
            print(f"{args.runtime}: {p.stdout.strip().splitlines()[-1]} ({time.time() - t0:.1f} s)")
            code, rt = sl.api(sock, "GET", f"/v1/runtimes/{args.runtime}")
        if code != 200:
            sys.exit(f"GET /v1/runtimes/{args.runtime} answered {code}: {rt}")
        rootfs = os.path.join(rt["path"], "rootfs")
        base = [rnx, "--socket", sock, "job", "run", "--follow"]
        rows = [sl.Runner("plain", base + [TRUE], "the host's system directories"),
                sl.Runner("runtime", base + [f"--runtime={args.runtime}", TRUE], f"{args.runtime}'s tree"),
                sl.Runner("runc", lambda i: ["runc", "--root", os.path.join(tmp, "runc-state"), "run", "--bundle",
                                             os.path.join(tmp, "bundle"), f"jrt-{os.getpid()}-{i}"],
                          "runc run, root = the same tree, read-only")]
        if not shutil.which("runc"):
            rows[2].skipped = "runc is not installed (apt-get install runc)"
        else:
            try:
                runc_bundle(tmp, rootfs)
            except (OSError, RuntimeError) as ex:
                rows[2].skipped = f"cannot build the bundle: {ex}"
        for r in rows:
            if r.skipped:
                continue
            try:
                for w in range(max(1, args.warmup)):
                    r.run_once(f"w{w}")
            except RuntimeError as ex:
                r.skipped = f"{r.display()} failed: {ex}"
        live = [r for r in rows if not r.skipped]
        print(f"start latency of {TRUE}: {args.runs} runs each after {args.warmup} warm-ups, interleaved; "
              f"{os.cpu_count()} CPUs, kernel {platform.release()}", flush=True)
        gc.disable()
        try:
            for i in range(args.runs):
                k = i % len(live) if live else 0
                for r in live[k:] + live[:k]:
                    if not r.skipped:
                        try:
                            r.samples_ns.append(r.run_once(i))
                        except RuntimeError as ex:
                            r.skipped = f"run {i} failed: {ex}"
        finally:
            gc.enable()
        stats = {r.name: sl.summarize(r) for r in rows if not r.skipped and r.samples_ns}
        print()
        hdr = f"{'row':<8} {'runs':>5} {'median ms':>10} {'p95 ms':>9} {'min ms':>8} {'max ms':>8}  what"
        print(hdr)
        print("-" * len(hdr))
        for r in rows:
            s = stats.get(r.name)
            if not s:
                print(f"{r.name:<8} {'-':>5}  skipped: {r.skipped}")
                continue
            print(f"{r.name:<8} {s['n']:>5} {s['median_ms']:>10.2f} {s['p95_ms']:>9.2f} {s['min_ms']:>8.2f} "
                  f"{s['max_ms']:>8.2f}  {r.isolation}")
        verdict = None
        if "plain" in stats and "runtime" in stats:
            dm = stats["runtime"]["median_ms"] - stats["plain"]["median_ms"]
            dp = stats["runtime"]["p95_ms"] - stats["plain"]["p95_ms"]
            verdict = {"median_delta_ms": dm, "p95_delta_ms": dp, "target_ms": 3.0, "met": dm <= 3.0}
            print(f"\nruntime - plain: median {dm:+.2f} ms, p95 {dp:+.2f} ms; target <= +3 ms at the median: "
                  f"{'met' if dm <= 3.0 else 'NOT met'}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"runtime": args.runtime, "runs": args.runs, "stats": stats, "verdict": verdict,
                           "skipped": {r.name: r.skipped for r in rows if r.skipped},
                           "samples_ms": {r.name: [x / 1e6 for x in r.samples_ns] for r in rows}}, f, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if own:
            own.close()


if __name__ == "__main__":
    main()
