#!/usr/bin/env python3
"""Start latency of a gVisor job (docs/performance.md, "gVisor"; issue 17): the wall time to
launch /bin/true and see it finish, four ways, interleaved so that drifts in machine load hit
each alike:

  native     rnx job run --follow /bin/true                      joblet's own namespaces
  gvisor     rnx job run --follow --isolation=gvisor /bin/true   joblet's shim running runsc
  runsc-run  runsc run on a bundle like the one joblet writes    runsc's own cost for that bundle
  runsc-do   runsc do /bin/true                                  runsc's simplest path

The target: a gVisor job starts within 1.2x of runsc run on the same kind of bundle (median).
The bundle for runsc-run is the config.json of a warm-up gVisor job (as its job directory keeps
it), with /work pointed at a scratch directory: the same root, mounts, user and namespaces, so the rows differ only by what
joblet adds (the request, the shim, the cgroup, the logs, the database).

Starts its own joblet (from --build, default ./build) with a scratch state directory. Needs
root and runsc. Standard library only; shares its runner and statistics with start_latency.py.

  bench/gvisor_start.py --runs 100 [--json out.json]
"""

import argparse
import gc
import json
import os
import platform
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runtime_start as rs  # noqa: E402
import start_latency as sl  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRUE = "/bin/true"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100, help="timed runs per row (default 100)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed runs per row first (default 5)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="joblet's build directory")
    ap.add_argument("--json", metavar="FILE", help="also write the figures and raw samples to FILE")
    args = ap.parse_args()
    if os.geteuid() != 0:
        ap.error("needs root (joblet and runsc)")
    runsc = shutil.which("runsc") or "/usr/bin/runsc"
    if not os.access(runsc, os.X_OK):
        sys.exit("runsc is not installed (apt-get install runsc)")
    own = rs.OwnDaemon(args.build, os.path.join(tempfile.gettempdir(), "joblet-bench-gv-cache"))
    rnx = os.path.join(args.build, "rnx")
    tmp = tempfile.mkdtemp(prefix="joblet-bench-gv-")
    try:
        base = [rnx, "--socket", own.sock, "job", "run", "--follow"]
        # one gVisor job first: its bundle is the model for runsc-run
        before = set(sl.job_ids(own.sock))
        p = sl.subprocess.run(base + ["--isolation=gvisor", TRUE], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"a gVisor job failed: {sl.tail(p.stderr)}")
        jid = (set(sl.job_ids(own.sock)) - before).pop()
        # the config as the job's directory keeps it (the environment's names only: the bundle
        # itself, with the values, lived on joblet's tmpfs and went with the job)
        with open(os.path.join(own.state, "jobs", jid, "bundle-config.json")) as f:
            cfg = json.load(f)
        cfg["process"]["env"] = ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/work"]
        bundle = os.path.join(tmp, "bundle")
        rootfs = os.path.join(bundle, "rootfs")
        for m in cfg["mounts"]:
            os.makedirs(rootfs + m["destination"], exist_ok=True)
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(top) and not os.path.lexists(rootfs + top):
                os.symlink(os.readlink(top), rootfs + top)
        os.makedirs(os.path.join(rootfs, "dev"), exist_ok=True)
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        os.chmod(work, 0o777)
        cfg["root"]["path"] = os.path.join(bundle, "rootfs")
        for m in cfg["mounts"]:
            if m["destination"] == "/work":
                m["source"] = work
        cfg["process"]["args"] = [TRUE]
        with open(os.path.join(bundle, "config.json"), "w") as f:
            json.dump(cfg, f)
        state = os.path.join(tmp, "runsc-state")
        code, version = sl.api(own.sock, "GET", "/v1/version")
        gv = next(m for m in version["isolation"]["modes"] if m["name"] == "gvisor")
        platform_flag = f"--platform={gv.get('platform', 'ptrace')}"
        rows = [sl.Runner("native", base + [TRUE], "joblet's namespaces"),
                sl.Runner("gvisor", base + ["--isolation=gvisor", TRUE], "joblet's shim + runsc run"),
                sl.Runner("runsc-run", lambda i: [runsc, f"--root={state}", platform_flag, "--network=none",
                                                  "--ignore-cgroups", "run", "--bundle", bundle,
                                                  f"jgv-{os.getpid()}-{i}"], "runsc run, the same bundle"),
                sl.Runner("runsc-do", [runsc, f"--root={state}", platform_flag, "--network=none", "do", TRUE],
                          "runsc do (the host's root, an overlay)")]
        for r in rows:
            try:
                for w in range(max(1, args.warmup)):
                    r.run_once(f"w{w}")
            except RuntimeError as ex:
                r.skipped = f"{r.display()} failed: {ex}"
        live = [r for r in rows if not r.skipped]
        print(f"start latency of {TRUE}: {args.runs} runs each after {args.warmup} warm-ups, interleaved; runsc "
              f"{gv.get('version')} ({platform_flag}); {os.cpu_count()} CPUs, kernel {platform.release()}", flush=True)
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
        hdr = f"{'row':<10} {'runs':>5} {'median ms':>10} {'p95 ms':>9} {'min ms':>8} {'max ms':>8}  what"
        print(hdr)
        print("-" * len(hdr))
        for r in rows:
            s = stats.get(r.name)
            if not s:
                print(f"{r.name:<10} {'-':>5}  skipped: {r.skipped}")
                continue
            print(f"{r.name:<10} {s['n']:>5} {s['median_ms']:>10.2f} {s['p95_ms']:>9.2f} {s['min_ms']:>8.2f} "
                  f"{s['max_ms']:>8.2f}  {r.isolation}")
        verdict = None
        if "gvisor" in stats and "runsc-run" in stats:
            ratio = stats["gvisor"]["median_ms"] / stats["runsc-run"]["median_ms"]
            verdict = {"ratio": ratio, "target": 1.2, "met": ratio <= 1.2}
            print(f"\ngvisor / runsc-run: {ratio:.2f}x at the median; target <= 1.2x: "
                  f"{'met' if ratio <= 1.2 else 'NOT met'}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"runs": args.runs, "runsc": gv.get("version"), "stats": stats, "verdict": verdict,
                           "skipped": {r.name: r.skipped for r in rows if r.skipped},
                           "samples_ms": {r.name: [x / 1e6 for x in r.samples_ns] for r in rows}}, f, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        # joblet's tmpfs for runsc's state and the bundles outlives joblet, as it must for its
        # jobs: the benchmark's own goes with its scratch directory
        sl.subprocess.run(["umount", "-l", os.path.join(own.state, "runsc")], capture_output=True)
        own.close()


if __name__ == "__main__":
    main()
