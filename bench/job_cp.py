#!/usr/bin/env python3
"""rnx job cp at the guide's scale: how fast a directory comes out of a running job and goes into
it, beside the floor, and what it costs the daemon in memory.

Starts a joblet of its own (bench/upload_memory.py's Daemon: state beside --dir, the same disk),
runs a job that writes --size bytes in 16 files under /work/g and sleeps, then, one after the
other:

  rnx job cp ID:/work/g OUT           out of the running job (helper, pipe, socket, rnx's tar)
  tar -C WORK -cf - g | tar -C OUT2 -xf -   the floor: the same files, the same disk, no daemon
  rnx job cp OUT/g ID:/work/back      into the running job
  tar -C OUT -cf - g | tar -C WORK/back2 -xf -   its floor

while a thread samples the daemon's VmRSS every 20 ms. Printed per row: seconds, MB/s, the ratio
to its floor, the daemon's VmRSS before and its highest sample. Each copy's files are dropped
from the page cache first (echo 1 > drop_caches after sync), so every row reads from the disk.

  sudo python3 bench/job_cp.py                  # 1 GiB
  sudo python3 bench/job_cp.py --size 4G --dir /var/tmp

Standard library only; needs root (the daemon does).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from upload_memory import Daemon, Sampler, api, parse_size, status_kb  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1 << 20


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("1\n")


def timed(cmd, **kw):
    drop_caches()
    t = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    dt = time.monotonic() - t
    if p.returncode != 0:
        raise RuntimeError(f"{cmd}: {p.stderr}")
    return dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="1G", help="bytes in the job's directory (16 files)")
    ap.add_argument("--dir", default="/var/tmp", help="where the daemon's state and the copies go")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    size = parse_size(a.size)
    piece = size // 16
    d = Daemon(a.build, a.dir, "jobs:\n  work_quota: %dMB\n  max_upload_bytes: %dMB\n" %
               (3 * size // MiB + 512, 2 * size // MiB))
    out = tempfile.mkdtemp(prefix="job-cp-bench-", dir=a.dir)
    rnx = os.path.join(a.build, "rnx")
    env = dict(os.environ, JOBLET_SOCKET=d.sock)
    try:
        script = (f"mkdir -p /work/g && for i in $(seq 1 16); do head -c {piece} /dev/urandom > /work/g/f$i; done "
                  "&& touch /work/.ready && exec sleep 3600")
        code, job = api(d.sock, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", script]})
        assert code == 201, job
        jid = job["id"]
        while api(d.sock, "GET", f"/v1/jobs/{jid}/archive?path=/work/.ready&stat=1")[0] != 200:
            time.sleep(0.2)
        work = os.path.join(d.state, "work", "0", jid)
        rows = []

        def row(name, cmd, floor_cmd, total):
            s = Sampler(d.pid, 0.02)
            before = status_kb(d.pid, "VmRSS") * 1024
            s.start()
            dt = timed(cmd, env=env)
            s.stop()
            ft = timed(floor_cmd, shell=True)
            rows.append({"copy": name, "seconds": dt, "mb_s": total / MiB / dt, "floor_seconds": ft,
                         "floor_mb_s": total / MiB / ft, "ratio": dt / ft, "rss_before_mb": before / MiB,
                         "rss_peak_mb": s.peak_kb / 1024})

        os.makedirs(os.path.join(out, "floor"))
        row("out of the job", [rnx, "job", "cp", "-q", f"{jid}:/work/g", out],
            f"tar -C {work} -cf - g | tar -C {out}/floor -xf -", size)
        os.makedirs(os.path.join(work, "back2"))
        row("into the job", [rnx, "job", "cp", "-q", os.path.join(out, "g"), f"{jid}:/work/back"],
            f"tar -C {out} -cf - g | tar -C {work}/back2 -xf -", size)
        api(d.sock, "POST", f"/v1/jobs/{jid}/kill")
        print(f"rnx job cp of {size / MiB:.0f} MiB in 16 files; the floor is tar | tar on the same disk, no daemon")
        print(f"{'copy':<16} {'s':>7} {'MB/s':>8} {'floor s':>8} {'floor MB/s':>10} {'ratio':>6} "
              f"{'RSS before':>10} {'RSS peak':>9}")
        for r in rows:
            print(f"{r['copy']:<16} {r['seconds']:7.2f} {r['mb_s']:8.0f} {r['floor_seconds']:8.2f} "
                  f"{r['floor_mb_s']:10.0f} {r['ratio']:6.2f} {r['rss_before_mb']:8.1f}MB {r['rss_peak_mb']:7.1f}MB")
        print(json.dumps(rows))
    finally:
        shutil.rmtree(out, ignore_errors=True)
        d.stop()


if __name__ == "__main__":
    main()
