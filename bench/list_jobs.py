#!/usr/bin/env python3
"""`rnx job list` of many jobs, rnx's builds side by side, beside the floor.

On a state built by bench/start_bigdb.py (--keep; 162,000 jobs by default), one joblet (of
--daemon, default build) is started, then for each --build's rnx, interleaved (A B B A ...,
--runs rounds): `rnx job list --json`, `rnx job list` and `--json` through a terminal
(`script -qc`), each to /dev/null: the wall time, rnx's CPU and peak memory (from wait4 of time(1),
so that this Python's own peak is not counted), joblet's CPU. The floor: the same answers read
with a plain HTTP client and thrown away (whole jobs for --json, the table's keys for the table),
which is what joblet's side costs.

  sudo python3 bench/start_bigdb.py --dir /tmp/big --keep --starts 0
  sudo python3 bench/list_jobs.py --dir /tmp/big --build OLD --build build

Standard library only; needs root (joblet does).
"""

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from start_bigdb import Daemon  # noqa: E402
from throughput import UnixHTTPConnection  # noqa: E402

TABLE_FIELDS = ("id,kind,number,name,status,owner_uid,command,args,created_at,started_at,ended_at,exit_code,"
                "array,gpus,gpu_request")


def floor(sock, path):
    """Seconds and bytes of one GET read whole and thrown away."""
    t = time.perf_counter()
    c = UnixHTTPConnection(sock, timeout=600)
    c.request("GET", path)
    r = c.getresponse()
    n = 0
    while True:
        b = r.read(1 << 20)
        if not b:
            break
        n += len(b)
    c.close()
    return time.perf_counter() - t, n


def timed(d, argv):
    """wall s, rnx CPU s, rnx peak KiB, joblet CPU s of one command to /dev/null."""
    hwm = f"/tmp/list_jobs.{os.getpid()}.time"
    c0 = d.cpu_s()
    t = time.perf_counter()
    with open(os.devnull, "w") as null:
        subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", hwm, *argv], stdout=null, check=True,
                       env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock, "TERM": "xterm"}, timeout=900)
    wall = time.perf_counter() - t
    with open(hwm) as f:
        _, u, s, m = f.read().split()[-4:]
    os.unlink(hwm)
    return wall, float(u) + float(s), int(m), d.cpu_s() - c0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, help="a state kept by start_bigdb.py --keep")
    ap.add_argument("--build", action="append", help="rnx's build directory (repeatable; default build)")
    ap.add_argument("--daemon", default="build", help="joblet's build directory")
    ap.add_argument("--runs", type=int, default=2, help="rounds, the builds interleaved")
    a = ap.parse_args()
    builds = a.build or ["build"]
    d = Daemon(a.daemon, a.dir, "list_jobs")
    print(f"joblet started in {d.start():.1f} s")
    try:
        for r in range(a.runs):
            for what, path in (("--json", "/v1/jobs"), ("table", "/v1/jobs?fields=" + TABLE_FIELDS)):
                c0 = d.cpu_s()
                s, n = floor(d.sock, path)
                print(f"floor {what}: GET {path[:20]}... {n / 1e6:.1f} MB in {s:.2f} s, joblet CPU {d.cpu_s() - c0:.2f} s")
            for b in (builds if r % 2 == 0 else builds[::-1]):
                rnx = os.path.join(b, "rnx")
                for what, argv in (("--json", [rnx, "job", "list", "--json"]), ("table", [rnx, "job", "list"]),
                                   ("--json in a terminal", ["script", "-qec", f"{rnx} job list --json", "/dev/null"]),
                                   ("table in a terminal", ["script", "-qec", f"{rnx} job list", "/dev/null"])):
                    wall, cpu, kib, dcpu = timed(d, argv)
                    mem = f", rnx peak {kib / 1024:.0f} MiB" if "terminal" not in what else ""
                    who = "script+rnx" if "terminal" in what else "rnx"
                    print(f"[{b}] {what}: {wall:.2f} s, {who} CPU {cpu:.2f} s{mem}, joblet CPU {dcpu:.2f} s")
                sys.stdout.flush()
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
