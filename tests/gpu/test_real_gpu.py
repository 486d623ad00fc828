"""Real-hardware checks: discovery on this machine agrees with nvidia-smi. Skips, saying why,
where there is no NVIDIA GPU. Run: /usr/bin/python3 -m pytest -v tests/gpu"""
import json
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("JOBLET_BUILD", os.path.join(ROOT, "build"))
SMI = shutil.which("nvidia-smi")

pytestmark = pytest.mark.skipif(
    not SMI or not os.path.exists("/dev/nvidiactl"),
    reason="no NVIDIA GPU here (nvidia-smi or /dev/nvidiactl missing); run on a GPU machine")


def smi(*args):
    return subprocess.run([SMI, *args], capture_output=True, text=True, check=True, timeout=60).stdout


def probe(backend, tmp_path):
    cfg = tmp_path / "joblet.yml"
    cfg.write_text(f"gpu:\n  nvidia_smi: {SMI}\n")
    p = subprocess.run([os.path.join(BUILD, "joblet"), "--config", str(cfg), f"--probe-gpus={backend}"],
                       capture_output=True, text=True, timeout=120)
    print(p.stderr)
    inv = json.loads(p.stdout)
    assert p.returncode == 0, inv["attempts"]
    return inv


def truth():
    rows = smi("--query-gpu=index,uuid,pci.bus_id,name,memory.total,compute_cap,driver_version",
               "--format=csv,noheader,nounits").strip().splitlines()
    q = smi("-q")
    minors = dict(re.findall(r"^GPU ([0-9A-Fa-f:.]+)\n(?:.*\n)*?\s+Minor Number\s+: (\d+)", q, re.M))
    cuda = re.search(r"CUDA Version\s+: ([\d.]+)", q).group(1)
    out = []
    for r in rows:
        idx, uuid, bus, name, mem, cc, drv = [c.strip() for c in r.split(",")]
        short = bus.lower()[4:] if len(bus.split(":")[0]) == 8 else bus.lower()
        minor = next((int(v) for k, v in minors.items() if k.lower().endswith(short[5:])), None)
        out.append(dict(index=int(idx), uuid=uuid, bus_id=short, name=name, memory_total_mb=int(mem),
                        compute_capability=cc, minor=minor, driver=drv, cuda=cuda))
    return out


@pytest.mark.parametrize("backend", ["nvml", "proc", "smi"])
def test_discovery_agrees_with_nvidia_smi(backend, tmp_path):
    inv = probe(backend, tmp_path)
    want = truth()
    assert inv["simulated"] is False and inv["backend"] == backend
    assert len(inv["gpus"]) == len(want)
    assert inv["driver_version"] == want[0]["driver"]
    assert inv["cuda_driver_version"] == want[0]["cuda"]
    for g, w in zip(inv["gpus"], want):
        for k in ("index", "uuid", "bus_id", "name", "minor", "compute_capability"):
            assert g[k] == w[k], (backend, k, g[k], w[k])
        if g["memory_total_mb"] is not None:
            assert g["memory_total_mb"] == w["memory_total_mb"]
        print(backend, g["index"], g["uuid"], g["bus_id"], g["name"], g["memory_total_mb"], "MiB numa",
              g["numa_node"], "cpus", g["local_cpus"], "nvlink", g["nvlink_peers"], "pcie", g["pcie_levels"])


def test_nvml_discovery_time(tmp_path):
    inv = probe("nvml", tmp_path)
    print(f"NVML discovery of {len(inv['gpus'])} GPU(s): {inv['discovery_ms']:.1f} ms")
