#!/usr/bin/env python3
"""GPU discovery time, per backend, per fixture machine.

For each fixture under tests/fixtures and each backend (nvml through the fake
libnvidia-ml.so.1, proc over the fixture's /proc and sysfs trees, smi through the fake
nvidia-smi, fixture from machine.json), runs `joblet --probe-gpus=BACKEND` N times and prints
the median and p95 of the discovery time joblet measures itself (the backend's work, without
process start-up), plus the whole process's wall time. On a machine with real GPUs it also
measures the real backends and, side by side, `nvidia-smi --query-gpu` as the peer.

Targets (issue 3, the platform design): ≤ 50 ms for 8 GPUs through NVML; < 1 s for any scan.
Standard library only. Usage: bench/discovery.py [--runs N] [--build DIR]
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures")
MACHINES = ["dgx-h100", "dgx1-v100", "a100-pcie-4", "a100-mig", "mixed", "broken-driver", "no-gpu"]
BACKENDS = ["nvml", "proc", "smi", "fixture"]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def probe(build, cfg, backend, env):
    t0 = time.perf_counter()
    p = subprocess.run([os.path.join(build, "joblet"), "--config", cfg, f"--probe-gpus={backend}"],
                       capture_output=True, text=True, env=env)
    wall = (time.perf_counter() - t0) * 1000
    inv = json.loads(p.stdout)
    return p.returncode, inv, wall


def row(name, backend, gpus, disc, wall, note=""):
    if disc:
        print(f"{name:<14}{backend:<9}{gpus:>5}{statistics.median(disc):>11.2f}{pct(disc, 95):>10.2f}"
              f"{statistics.median(wall):>11.1f}  {note}")
    else:
        print(f"{name:<14}{backend:<9}{gpus:>5}{'-':>11}{'-':>10}{statistics.median(wall):>11.1f}  {note}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    lib = os.path.join(a.build, "tests", "fakes", "libnvidia-ml.so.1")
    if not os.path.exists(lib):
        sys.exit(f"build first: {lib} is missing")
    tmp = tempfile.mkdtemp()
    print(f"GPU discovery, {a.runs} runs each; discovery = joblet's own measure of the backend's work (ms),"
          " wall = the whole joblet --probe-gpus process (ms)")
    print(f"{'machine':<14}{'backend':<9}{'gpus':>5}{'disc p50':>11}{'disc p95':>10}{'wall p50':>11}")
    for m in MACHINES:
        d = os.path.join(FIX, m)
        cfg = os.path.join(tmp, f"{m}.yml")
        with open(cfg, "w") as f:
            f.write(f"gpu:\n  nvml_library: {lib}\n  nvidia_smi: {ROOT}/tests/fakes/nvidia-smi\n"
                    f"  proc_root: {d}/proc\n  sys_root: {d}/sys\n  fixture: {d}/machine.json\n"
                    f"  cuda_search_root: {tmp}\n")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "FAKE_NVML_FIXTURE": f"{d}/machine.json",
               "FAKE_SMI_DIR": f"{d}/smi"}
        for b in BACKENDS:
            disc, wall, gpus, note = [], [], 0, ""
            for _ in range(a.runs):
                rc, inv, w = probe(a.build, cfg, b, env)
                wall.append(w)
                if rc == 0:
                    disc.append(inv["discovery_ms"])
                    gpus = len(inv["gpus"])
                else:
                    note = "fails: " + (inv["attempts"][-1]["error"] or "")[:60]
            if b == "smi" and disc:
                note = "(fake nvidia-smi is a Python script: 5 interpreter starts dominate)"
            row(m, b, gpus, disc, wall, note)
    if shutil.which("nvidia-smi") and os.path.exists("/dev/nvidiactl"):
        print("\nThis machine's real GPUs:")
        cfg = os.path.join(tmp, "real.yml")
        with open(cfg, "w") as f:
            f.write(f"gpu:\n  nvidia_smi: {shutil.which('nvidia-smi')}\n")
        for b in ["nvml", "proc", "smi"]:
            disc, wall, gpus = [], [], 0
            for _ in range(a.runs):
                rc, inv, w = probe(a.build, cfg, b, dict(os.environ))
                wall.append(w)
                if rc == 0:
                    disc.append(inv["discovery_ms"])
                    gpus = len(inv["gpus"])
            row("real", b, gpus, disc, wall)
        peer = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            subprocess.run(["nvidia-smi", "--query-gpu=index,uuid,pci.bus_id,name,memory.total",
                            "--format=csv,noheader"], capture_output=True, check=True)
            peer.append((time.perf_counter() - t0) * 1000)
        row("real", "peer", gpus, [], peer, "nvidia-smi --query-gpu (one command; no topology)")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
