#!/usr/bin/env python3
"""Start latency of a job on a network (docs/performance.md, "Job networks"; issue 31): the wall
time to launch /bin/true and see it finish, three ways, interleaved round by round:

  none      rnx job run --follow /bin/true                      loopback only (the default)
  bridge    rnx job run --follow --network=bridge /bin/true     a veth on jb-bridge, an address, the hosts file
  isolated  rnx job run --follow --network=isolated /bin/true   a veth pair with a /31 of its own

The target (issue 31): bridge costs at most 5 ms more than none at the median. Each round runs
every row once, the order rotated (none and bridge come in either order equally often), so
bridge - none is also taken pair by pair, within a round, where the machine's drift cancels.

From the daemon's own timestamps (ms) it also splits each row in two: created_at -> started_at
(admission, the network's address, the shim, the namespaces, joblet-net job-up while the init
waits) and started_at -> ended_at (the command, the end, the address back, the hosts file).

Starts its own joblet (from --build, default ./build) with a scratch state directory and its
own network ranges, chosen among --cidrs so that no route of this host overlaps them; refuses
to run while links of another joblet's networks exist (the end runs `joblet-net down`, which
would take them). Needs root and nft. Standard library only; shares its runner and statistics
with start_latency.py and its daemon with runtime_start.py.

  bench/net_start.py --runs 200 [--json out.json]
"""

import argparse
import datetime
import gc
import ipaddress
import json
import os
import platform
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runtime_start as rs  # noqa: E402
import start_latency as sl  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRUE = "/bin/true"
TARGET_MS = 5.0
CIDRS = "10.246.0.0/24,10.247.0.0/24,10.248.0.0/24,10.249.0.0/24"


def host_routes():
    out = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True).stdout
    nets = []
    for line in out.splitlines():
        words = line.split()
        word = words[1] if words and words[0] in ("local", "broadcast", "unreachable", "blackhole",
                                                   "prohibit", "throw") and len(words) > 1 else (words or [""])[0]
        try:
            nets.append(ipaddress.ip_network(word, strict=False))
        except ValueError:
            pass                                          # default, and anything else not a network
    return nets


def joblet_links():
    return sorted(n for n in os.listdir("/sys/class/net") if n.startswith(("jb-", "jv")))


def ms_between(a, b):
    if not a or not b:
        return None
    t = [datetime.datetime.fromisoformat(x.replace("Z", "+00:00")) for x in (a, b)]
    return (t[1] - t[0]).total_seconds() * 1000


def p90(xs):
    return sl.pctl(sorted(xs), 90)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=200, help="timed runs per row (default 200)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed runs per row first (default 10)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="joblet's build directory")
    ap.add_argument("--cidrs", default=CIDRS,
                    help="candidate /24s for network.bridge_cidr and isolated_cidr, the first two that no "
                         "route of this host overlaps (default %(default)s)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures and raw samples to FILE")
    args = ap.parse_args()
    if os.geteuid() != 0:
        ap.error("needs root (joblet's namespaces and joblet-net)")
    if args.runs < 1 or args.warmup < 0:
        ap.error("--runs must be at least 1 and --warmup at least 0")
    left = joblet_links()
    if left:
        sys.exit(f"links of another joblet's networks exist ({', '.join(left)}): stop it first, or "
                 f"`joblet-net down` when they are leftovers")
    routes = host_routes()
    free = [c for c in args.cidrs.split(",")
            if not any(ipaddress.ip_network(c).overlaps(r) for r in routes)]
    if len(free) < 2:
        sys.exit(f"--cidrs: fewer than two of {args.cidrs} are free of this host's routes")
    bridge_cidr, isolated_cidr = free[:2]
    net = os.path.join(args.build, "joblet-net")
    own = rs.OwnDaemon(args.build, config=f"network:\n  bridge_cidr: {bridge_cidr}\n"
                                          f"  isolated_cidr: {isolated_cidr}\n")
    try:
        rnx = os.path.join(args.build, "rnx")
        base = [rnx, "--socket", own.sock, "job", "run", "--follow"]
        rows = [sl.Runner("none", base + [TRUE], "loopback only (the default)"),
                sl.Runner("bridge", base + ["--network=bridge", TRUE], f"bridge network, {bridge_cidr}"),
                sl.Runner("isolated", base + ["--network=isolated", TRUE], f"isolated /31s from {isolated_cidr}")]
        for r in rows:
            try:
                for w in range(max(1, args.warmup)):
                    r.run_once(f"w{w}")
            except RuntimeError as ex:
                sys.exit(f"{r.display()} failed: {ex}")
        before = set(sl.job_ids(own.sock))
        print(f"start latency of {TRUE}: {args.runs} runs each after {args.warmup} warm-ups, interleaved; "
              f"{os.cpu_count()} CPUs, kernel {platform.release()}", flush=True)
        pairs = []                                    # (none, bridge) of one round, ms
        gc.disable()
        try:
            for i in range(args.runs):
                k = i % len(rows)
                got = {}
                for r in rows[k:] + rows[:k]:
                    try:
                        ns = r.run_once(i)
                    except RuntimeError as ex:
                        sys.exit(f"{r.name}: run {i} failed: {ex}")
                    r.samples_ns.append(ns)
                    got[r.name] = ns / 1e6
                pairs.append((got["none"], got["bridge"]))
        finally:
            gc.enable()
        # the daemon's view of the same jobs
        split = {r.name: {"start": [], "run": []} for r in rows}
        for jid, j in sl.job_ids(own.sock).items():
            if jid in before:
                continue
            s = split.get(j.get("network") or "none")
            if s is None:
                continue
            a, b = ms_between(j.get("created_at"), j.get("started_at")), ms_between(j.get("started_at"),
                                                                                   j.get("ended_at"))
            if a is not None and b is not None:
                s["start"].append(a)
                s["run"].append(b)

        stats = {}
        print()
        hdr = (f"{'row':<9} {'runs':>5} {'median ms':>10} {'p90 ms':>8} {'min ms':>8} {'max ms':>8}  "
               f"{'created->started':>16} {'started->ended':>14}  what")
        print(hdr)
        print("-" * len(hdr))
        for r in rows:
            ms = sorted(x / 1e6 for x in r.samples_ns)
            s = split[r.name]
            stats[r.name] = {"n": len(ms), "median_ms": statistics.median(ms), "p90_ms": p90(ms),
                             "min_ms": ms[0], "max_ms": ms[-1],
                             "created_to_started_mean_ms": statistics.fmean(s["start"]) if s["start"] else None,
                             "started_to_ended_mean_ms": statistics.fmean(s["run"]) if s["run"] else None}
            st = stats[r.name]
            fmt = lambda v: f"{v:.2f}" if v is not None else "-"  # noqa: E731
            print(f"{r.name:<9} {st['n']:>5} {st['median_ms']:>10.2f} {st['p90_ms']:>8.2f} {st['min_ms']:>8.2f} "
                  f"{st['max_ms']:>8.2f}  {fmt(st['created_to_started_mean_ms']):>16} "
                  f"{fmt(st['started_to_ended_mean_ms']):>14}  {r.isolation}")
        print("(created->started and started->ended: means of the daemon's own timestamps, ms)")
        diff = [b - a for a, b in pairs]
        dm = stats["bridge"]["median_ms"] - stats["none"]["median_ms"]
        dp = stats["bridge"]["p90_ms"] - stats["none"]["p90_ms"]
        pm = statistics.median(diff)
        di = stats["isolated"]["median_ms"] - stats["none"]["median_ms"]
        met = dm <= TARGET_MS and pm <= TARGET_MS
        verdict = {"median_delta_ms": dm, "p90_delta_ms": dp, "pairwise_median_delta_ms": pm,
                   "pairwise_p90_delta_ms": p90(diff), "isolated_median_delta_ms": di,
                   "target_ms": TARGET_MS, "met": met}
        print(f"\nbridge - none: median {dm:+.2f} ms, p90 {dp:+.2f} ms; pair by pair: median {pm:+.2f} ms, "
              f"p90 {p90(diff):+.2f} ms")
        print(f"isolated - none: median {di:+.2f} ms")
        print(f"target: bridge <= none + {TARGET_MS:.0f} ms at the median: {'met' if met else 'NOT met'}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"runs": args.runs, "bridge_cidr": bridge_cidr, "isolated_cidr": isolated_cidr,
                           "stats": stats, "verdict": verdict,
                           "samples_ms": {r.name: [x / 1e6 for x in r.samples_ns] for r in rows},
                           "split_ms": split}, f, indent=1)
    finally:
        own.close()
        p = subprocess.run([net, "down"], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"joblet-net down: {sl.tail(p.stderr)}", file=sys.stderr)
        left = joblet_links()
        if left:
            print(f"links left: {', '.join(left)}", file=sys.stderr)


if __name__ == "__main__":
    main()
