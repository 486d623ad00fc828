#!/usr/bin/env python3
"""Task start overhead of joblet's SPANK plugin: `srun -N1 -n1 true` against `srun -N1 -n1
--joblet true` on the test Slurm cluster of tests/integration/slurm_cluster.py (two slurmd on
this host, cgroup/v1) with build/joblet.so in its plugstack.conf, pointed at a joblet daemon
started here (no GPUs: the GPU path is bench/gpu_start.py's). srun runs as root; rounds are
interleaved so load drifts hit both alike; prints median and p95 in ms, and the difference.
Target (issue 30): <= +15 ms median. Needs root, Slurm and munge.
Usage: bench/slurm_srun.py [--runs N] [--build DIR]"""
import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    os.environ["JOBLET_BUILD"] = os.path.abspath(a.build)
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    from conftest import Daemon
    from slurm_cluster import SlurmCluster

    plugin = os.path.join(os.path.abspath(a.build), "joblet.so")
    d = Daemon().start()
    try:
        with SlurmCluster(plugstack=f"required {plugin} socket={d.sock}\n") as c:
            times = {"plain": [], "joblet": []}
            for i in range(a.runs + 2):
                for kind, extra in (("plain", []), ("joblet", ["--joblet"])):
                    t0 = time.monotonic()
                    p = c.run(["srun", "-N1", "-n1", "-w", "node1", *extra, "true"])
                    dt = (time.monotonic() - t0) * 1000
                    if p.returncode != 0:
                        sys.exit(f"srun {' '.join(extra)} failed: {p.stderr}")
                    if i >= 2:  # the first two rounds warm the caches
                        times[kind].append(dt)
            for kind, xs in times.items():
                print(f"{kind:7s} median {statistics.median(xs):7.1f} ms  p95 {pct(xs, 95):7.1f} ms  (n={len(xs)})")
            print(f"extra   median {statistics.median(times['joblet']) - statistics.median(times['plain']):+7.1f} ms")
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
