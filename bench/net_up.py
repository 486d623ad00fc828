#!/usr/bin/env python3
"""How long `joblet-net job-up` takes: the whole command (exec, veth pair with its peer made in
the job's namespace, addresses, routes, links up, exit), as the shim runs it at every job
start with networking. Issue 31's target: well under 5 ms.

Runs in a network namespace of its own that plays the host (this process enters it), so the
machine's links and firewall are untouched; applies one bridge network and the isolated pool,
then times N job-ups per mode, each into a fresh namespace made beforehand (not timed), and
deletes the pair after each (not timed). Prints median and 90th percentile per mode.

    sudo python3 bench/net_up.py [--build build] [--runs 50]

Standard library only.
"""
import argparse
import ctypes
import json
import os
import secrets
import statistics
import subprocess
import time

CLONE_NEWNET = 0x40000000


def setns(path):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns " + path)
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    net = os.path.abspath(os.path.join(args.build, "joblet-net"))
    tag = secrets.token_hex(3)
    host = "joblet-bench-%s-host" % tag
    made = []
    subprocess.run(["ip", "netns", "add", host], check=True)
    made.append(host)
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        setns("/run/netns/" + host)
        subprocess.run([net, "apply"], check=True, capture_output=True, text=True, input=json.dumps({
            "networks": [{"name": "bridge", "bridge": "jb-bench", "cidr": "10.217.0.0/16", "gateway": "10.217.0.1"}],
            "isolated_cidr": "10.216.0.0/16", "keep_veths": [], "prune_veths": False}))
        modes = {
            "bridge": lambda i: ["--addr", "10.217.1.%d/16" % (i + 2), "--gateway", "10.217.0.1", "--bridge", "jb-bench"],
            "isolated": lambda i: ["--addr", "10.216.0.%d/31" % (2 * i + 1), "--gateway", "10.216.0.%d" % (2 * i),
                                   "--host-addr", "10.216.0.%d/31" % (2 * i)],
            "bridge+max-bps": lambda i: ["--addr", "10.217.2.%d/16" % (i + 2), "--gateway", "10.217.0.1",
                                         "--bridge", "jb-bench", "--max-bps", "12500000"],
        }
        for mode, extra in modes.items():
            times = []
            for i in range(args.runs):
                ns = "joblet-bench-%s-%d" % (tag, i)
                subprocess.run(["ip", "netns", "add", ns], check=True)
                made.append(ns)
                cmd = [net, "job-up", "--netns", "/run/netns/" + ns, "--host-if", "jvbench%d" % i] + extra(i)
                t0 = time.perf_counter()
                r = subprocess.run(cmd, capture_output=True, text=True)
                t1 = time.perf_counter()
                if r.returncode != 0:
                    raise SystemExit("job-up failed: " + r.stderr)
                times.append((t1 - t0) * 1000)
                subprocess.run(["ip", "link", "del", "jvbench%d" % i], check=True)
                subprocess.run(["ip", "netns", "del", ns], check=True)
                made.remove(ns)
            times.sort()
            print("%-15s n=%d  median %.2f ms  p90 %.2f ms  min %.2f ms  max %.2f ms" % (
                mode, len(times), statistics.median(times), times[int(len(times) * 0.9) - 1], times[0], times[-1]))
    finally:
        os.setns(own, CLONE_NEWNET) if hasattr(os, "setns") else ctypes.CDLL(None).setns(own, CLONE_NEWNET)
        for ns in reversed(made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


if __name__ == "__main__":
    main()
