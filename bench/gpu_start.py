#!/usr/bin/env python3
"""Extra start latency of a GPU job: `rnx job run --follow /bin/true` with --gpu=8 against the
same without GPUs, on the DGX H100 fixture (8 GPUs, NVML through the fake library) with real
device nodes made by mknod in a scratch directory, so the GPU path does all its work: 11
device nodes checked and created, a per-job eBPF device filter loaded, the job's
/proc/driver/nvidia tmpfs written. Runs interleaved so load drifts hit both alike; prints
median and p95 in ms, and the difference. Target (issue 4): ≤ 5 ms extra. Needs root.
Usage: bench/gpu_start.py [--runs N] [--build DIR]"""
import argparse
import json
import os
import shutil
import signal
import stat
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "dgx-h100")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root")
    tmp = tempfile.mkdtemp(prefix="joblet-gpubench-")
    dev = os.path.join(tmp, "dev")
    os.mkdir(dev)
    with open(os.path.join(FIX, "machine.json")) as f:
        gpus = json.load(f)["gpus"]
    nodes = [(f"nvidia{g['minor']}", 195, g["minor"]) for g in gpus]
    nodes += [("nvidiactl", 195, 255), ("nvidia-uvm", 507, 0), ("nvidia-uvm-tools", 507, 1)]
    for name, ma, mi in nodes:
        os.mknod(os.path.join(dev, name), 0o666 | stat.S_IFCHR, os.makedev(ma, mi))
        os.chmod(os.path.join(dev, name), 0o666)
    cfg = os.path.join(tmp, "joblet.yml")
    with open(cfg, "w") as f:
        f.write(f"cgroup:\n  root: joblet-gpubench\ngpu:\n  backends: [nvml]\n"
                f"  nvml_library: {a.build}/tests/fakes/libnvidia-ml.so.1\n  proc_root: {FIX}/proc\n"
                f"  sys_root: {FIX}/sys\n  dev_root: {dev}\n  cuda_search_root: {tmp}\n")
    sock = os.path.join(tmp, "joblet.sock")
    log = open(os.path.join(tmp, "joblet.log"), "w")
    d = subprocess.Popen([os.path.join(a.build, "joblet"), "--config", cfg, "--state-dir", os.path.join(tmp, "state"),
                          "--socket", sock], stdout=log, stderr=log,
                         env={"PATH": "/usr/bin:/bin", "FAKE_NVML_FIXTURE": os.path.join(FIX, "machine.json")})
    try:
        rnx = [os.path.join(a.build, "rnx"), "--socket", sock]
        for _ in range(200):
            if subprocess.run(rnx + ["--version"], capture_output=True).returncode == 0:
                break
            time.sleep(0.05)
        cmds = {"cpu": rnx + ["job", "run", "--follow", "/bin/true"],
                "gpu=8": rnx + ["job", "run", "--gpu=8", "--follow", "/bin/true"]}
        for c in cmds.values():  # warm up, and check the GPU job really got its GPUs
            for _ in range(5):
                subprocess.run(c, check=True, capture_output=True)
        jobs = json.loads(subprocess.run(rnx + ["job", "list", "--json"], capture_output=True, check=True).stdout)
        assert len(jobs[-1]["gpus"]) == 8, jobs[-1]
        times = {k: [] for k in cmds}
        for _ in range(a.runs):
            for k, c in cmds.items():
                t0 = time.perf_counter()
                subprocess.run(c, check=True, capture_output=True)
                times[k].append((time.perf_counter() - t0) * 1000)
            subprocess.run(rnx + ["job", "delete-all"], capture_output=True)
        print(f"start latency, {a.runs} runs each, interleaved (ms): rnx job run --follow /bin/true")
        print(f"{'job':<8}{'median':>9}{'p95':>9}")
        for k, v in times.items():
            print(f"{k:<8}{statistics.median(v):>9.2f}{pct(v, 95):>9.2f}")
        extra = statistics.median(times["gpu=8"]) - statistics.median(times["cpu"])
        print(f"extra for --gpu=8 (median): {extra:.2f} ms  (target <= 5 ms)")
    finally:
        d.send_signal(signal.SIGTERM)
        d.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
