#!/usr/bin/env python3
"""Exec start latency (issue 29): a new process in a running job, to its end, against the floors.

Starts a joblet of its own (root; --build DIR holds joblet and rnx) with one job running `sleep`,
and a runc container running `sleep` from a minimal bundle (as bench/start_latency.py builds
one), then times, interleaved round by round (the order rotating) so that drifts in load hit
every path alike:

  rnx-exec     `rnx job exec ID /bin/true`: rnx, the API (POST .../exec, 101), joblet-exec
               (the job's spec from its shim, its cgroups, namespaces, uid, seccomp), the exit
               code back through the framing
  nsenter      `nsenter -t PID -m -u -i -n -p -C /bin/true` into the same job's init: the same
               namespaces entered, no cgroup, no uid change, no seccomp (the floor)
  runc-exec    `runc exec CID /bin/true` into the runc container

Target (issue 29): rnx-exec median <= 2x nsenter's. Standard library only.

With --gvisor the job runs under gVisor (isolation gvisor) and the paths are:

  rnx-exec     `rnx job exec ID /bin/true`: as above, joblet-exec going through runsc exec
  runsc-exec   `runsc --root=<joblet's> exec --user UID:GID ID /bin/true` into the same sandbox
               directly (the floor: what runsc itself costs)

  sudo python3 bench/exec.py --build build --runs 200
  sudo python3 bench/exec.py --build build --runs 50 --gvisor
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from start_latency import TRUE, build_runc_bundle  # noqa: E402
from terminal import Daemon  # noqa: E402

SLEEP = shutil.which("sleep") or "/bin/sleep"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def timed(argv, env=None):
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, env=env, timeout=60)
    dt = (time.perf_counter() - t) * 1000
    if p.returncode != 0:
        sys.exit(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.decode(errors='replace')[-300:]}")
    return dt


def runc_container(tmp, cid):
    """A detached runc container running sleep; its state directory. None (and why) when runc cannot."""
    if not shutil.which("runc"):
        return None, "runc not found on PATH"
    bundle = build_runc_bundle(tmp)
    rootfs = os.path.join(bundle, "rootfs")
    dest = os.path.join(rootfs, SLEEP.lstrip("/"))
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copy2(os.path.realpath(SLEEP), dest)   # the same libc as true's, already there
    cfg_path = os.path.join(bundle, "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    cfg["process"]["args"] = [SLEEP, "600"]
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    state = os.path.join(tmp, "runc-state")
    # (the container keeps the descriptors it is given: none of ours, or run would never end)
    with open(os.path.join(tmp, "runc.err"), "w+") as err:
        p = subprocess.run(["runc", "--root", state, "run", "-d", "--bundle", bundle, cid], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=err, timeout=60)
        err.seek(0)
        why = err.read().strip()[-200:]
    if p.returncode != 0:
        return None, f"runc run -d: {why}"
    return state, None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--warm", type=int, default=10)
    ap.add_argument("--gvisor", action="store_true", help="a gVisor job; rnx job exec beside runsc exec")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("exec.py: run as root (it starts joblet and runc)")
    rnx = os.path.join(os.path.abspath(a.build), "rnx")
    d = Daemon(a.build)
    tmp = tempfile.mkdtemp(prefix="joblet-bench-exec-")
    cid = f"jbench-exec-{os.getpid()}"
    state, jid = None, None
    try:
        body = {"command": SLEEP, "args": ["600"]}
        if a.gvisor:
            body["isolation"] = "gvisor"
        job = d.api("POST", "/v1/jobs", body)
        jid = job["id"]
        pid = None
        for _ in range(200):
            j = d.api("GET", f"/v1/jobs/{jid}")
            if j.get("status") == "RUNNING" and j.get("pid"):
                pid = j["pid"]
                break
            time.sleep(0.05)
        if not pid:
            sys.exit(f"the job did not start: {j}")
        env = dict(os.environ, JOBLET_SOCKET=d.sock)
        if a.gvisor:
            runsc = j.get("runsc") or shutil.which("runsc") or "/usr/bin/runsc"
            paths = [("rnx-exec", [rnx, "job", "exec", jid, TRUE], env),
                     ("runsc-exec", [runsc, f"--root={os.path.join(d.dir, 'state', 'runsc')}", "exec", "--user",
                                     f"{j['uid']}:{j['gid']}", jid, TRUE], None)]
        else:
            state, why = runc_container(tmp, cid)
            paths = [("rnx-exec", [rnx, "job", "exec", jid, TRUE], env),
                     ("nsenter", ["nsenter", "-t", str(pid), "-m", "-u", "-i", "-n", "-p", "-C", TRUE], None)]
        if state:
            paths.append(("runc-exec", ["runc", "--root", state, "exec", cid, TRUE], None))
        out = {name: [] for name, _, _ in paths}
        for i in range(a.warm + a.runs):
            k = i % len(paths)
            for name, argv, e in paths[k:] + paths[:k]:
                dt = timed(argv, e)
                if i >= a.warm:
                    out[name].append(dt)
        print(f"joblet {a.build}, {os.cpu_count()} CPUs; {a.runs} rounds; a "
              + ("gVisor " if a.gvisor else "") + f"job running sleep (init pid {pid})"
              + ("" if state or a.gvisor else f"; runc-exec skipped: {why}") + "\n")
        ref = "runsc-exec" if a.gvisor else "nsenter"
        floor = statistics.median(out[ref])
        print(f"{'path':<12} {'median ms':>10} {'p95 ms':>10} {'/' + ref:>12}")
        for name, xs in out.items():
            m = statistics.median(xs)
            print(f"{name:<12} {m:>10.2f} {pct(xs, 95):>10.2f} {m / floor:>11.2f}x")
        if not a.gvisor:
            print("\ntarget: rnx-exec median <= 2x nsenter's")
    finally:
        if state:
            subprocess.run(["runc", "--root", state, "delete", "-f", cid], capture_output=True)
        if jid:   # jobs outlive joblet's stop (they are adopted at its next start): kill it first
            d.api("POST", f"/v1/jobs/{jid}/kill")
            for _ in range(200):
                if d.api("GET", f"/v1/jobs/{jid}").get("status") in ("STOPPED", "FAILED", "COMPLETED", "CANCELED"):
                    break
                time.sleep(0.05)
        d.close()
        shutil.rmtree(tmp, ignore_errors=True)
        # the daemon's cgroup levels in the v1 hierarchies and in cgroup2 (terminal.Daemon's close
        # removes the first cgroup2 mount's only)
        for base in ["/sys/fs/cgroup/unified"] + [f"/sys/fs/cgroup/{c}" for c in (
                "cpu", "cpuacct", "memory", "pids", "blkio", "cpuset", "devices", "freezer")]:
            top = os.path.join(base, "joblet-bench-term")
            for sub, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
                try:
                    os.rmdir(sub)
                except OSError:
                    pass


if __name__ == "__main__":
    main()
