"""Real-hardware checks: discovery on this machine agrees with nvidia-smi. Skips, saying why,
where there is no NVIDIA GPU. Run: /usr/bin/python3 -m pytest -v tests/gpu"""
import json
import os
import re
import shutil
import subprocess
import time

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


# -- jobs on the real GPUs (issue 4, acceptance 6) ----------------------------------------------

import sys  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from conftest import Daemon  # noqa: E402


@pytest.fixture(scope="module")
def gpu_daemon():
    if os.geteuid() != 0:
        pytest.skip("needs root: joblet creates namespaces, cgroups and device nodes")
    d = Daemon().start()
    yield d
    d.cleanup()


def test_nvidia_smi_in_a_one_gpu_job_lists_one_gpu(gpu_daemon):
    job, out, err = gpu_daemon.run("nvidia-smi", "-L", gpu_count=1, timeout=120)
    print(out, err)
    assert job["status"] == "COMPLETED", (job, err)
    lines = [l for l in out.splitlines() if l.startswith("GPU ")]
    assert len(lines) == 1 and job["gpus"][0]["uuid"] in lines[0]


CUDA_PROGRAM = r"""
#include <cstdio>
__global__ void add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
int main() {
    const int n = 1 << 20;
    float *a, *b, *c;
    cudaMallocManaged(&a, n * sizeof(float)); cudaMallocManaged(&b, n * sizeof(float));
    cudaMallocManaged(&c, n * sizeof(float));
    for (int i = 0; i < n; i++) { a[i] = i; b[i] = 2 * i; }
    add<<<(n + 255) / 256, 256>>>(a, b, c, n);
    if (cudaDeviceSynchronize() != cudaSuccess) { printf("launch failed\n"); return 1; }
    int count = 0; cudaGetDeviceCount(&count);
    for (int i = 0; i < n; i++) if (c[i] != 3.0f * i) { printf("wrong at %d\n", i); return 1; }
    printf("ok devices=%d\n", count);
    return 0;
}
"""


def test_cuda_program_computes_inside_the_job(gpu_daemon, tmp_path):
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    if nvcc:
        src = tmp_path / "add.cu"
        src.write_text(CUDA_PROGRAM)
        subprocess.run([nvcc, "-o", str(tmp_path / "add"), str(src)], check=True, timeout=300)
        job, out, err = gpu_daemon.run("./add", gpu_count=1, timeout=120,
                                       uploads=[{"path": "add", "type": "file", "mode": 0o755,
                                                 "content_b64": __import__("base64").b64encode(
                                                     (tmp_path / "add").read_bytes()).decode()}])
        print(out, err)
        assert job["status"] == "COMPLETED" and out.strip() == "ok devices=1", (job, out, err)
        return
    probe = "import torch; x = torch.ones(1 << 20, device='cuda'); print(int((x * 3).sum()), torch.cuda.device_count())"
    if subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode != 0:
        pytest.skip("neither nvcc nor PyTorch is installed to build or run CUDA work")
    job, out, err = gpu_daemon.run("python3", "-c", probe, gpu_count=1, timeout=300)
    assert job["status"] == "COMPLETED" and out.split() == [str(3 << 20), "1"], (job, out, err)


def test_job_without_gpu_cannot_open_any_nvidia_device(gpu_daemon):
    nodes = sorted(n for n in os.listdir("/dev") if n.startswith("nvidia") and not os.path.isdir("/dev/" + n))
    # a job without --gpu has no such nodes; the same nodes made by hand are still refused
    probe = ("import os, errno, json\n"
             f"nodes = {nodes!r}\n"
             "print(json.dumps(sorted(n for n in os.listdir('/dev') if n.startswith('nvidia'))))")
    job, out, err = gpu_daemon.run("python3", "-c", probe, timeout=60)
    assert job["status"] == "COMPLETED" and json.loads(out) == [], (out, err)
    jid = gpu_daemon.submit("sleep", "30")
    try:
        gpu_daemon.wait_status(jid, "RUNNING")
        base = "/sys/fs/cgroup" if os.path.isfile("/sys/fs/cgroup/cgroup.procs") else "/sys/fs/cgroup/unified"
        procs = os.path.join(base, gpu_daemon.cgroup_root, gpu_daemon.job_cgroup(jid), "cgroup.procs")
        helper = ("import errno, json, os, sys\n"
                  "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
                  "res = {}\n"
                  "for n in sys.argv[2:]:\n"
                  "    try: os.close(os.open(n, os.O_RDWR)); res[n] = 'ok'\n"
                  "    except OSError as e: res[n] = errno.errorcode[e.errno]\n"
                  "print(json.dumps(res))")
        p = subprocess.run([sys.executable, "-c", helper, procs, *("/dev/" + n for n in nodes)], capture_output=True,
                           text=True, timeout=30)
        res = json.loads(p.stdout)
        print(res)
        assert res and set(res.values()) == {"EPERM"}, res
    finally:
        gpu_daemon.api("POST", f"/v1/jobs/{jid}/stop")
        gpu_daemon.wait(jid)


MPS_PROGRAM = r"""
#include <cstdio>
#include <unistd.h>
int main(int argc, char **argv) {
    float *p;
    if (cudaMalloc(&p, 1 << 20) != cudaSuccess) { printf("cuda init failed\n"); return 1; }
    printf("up\n");
    fflush(stdout);
    sleep(atoi(argv[1]));   /* holds its context (an MPS client) meanwhile */
    cudaFree(p);
    return 0;
}
"""


def test_two_shared_jobs_of_one_user_are_mps_clients_at_once(tmp_path):
    """docs/gpu.md "One uid per shared GPU": NVIDIA MPS serves one uid at a time, a client of another
    uid waiting in its CUDA start until the running server's clients are gone. root's shared jobs
    run as one uid, so the second job's CUDA start comes while the first still holds its context
    (before: each of root's jobs had a uid of its own, and the second said "up" only after the first
    ended). Needs nvcc and the driver's nvidia-cuda-mps-control."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    if not nvcc or not os.access("/usr/bin/nvidia-cuda-mps-control", os.X_OK):
        pytest.skip("needs nvcc and /usr/bin/nvidia-cuda-mps-control")
    src = tmp_path / "hold.cu"
    src.write_text(MPS_PROGRAM.replace("#include <unistd.h>", "#include <unistd.h>\n#include <cstdlib>"))
    subprocess.run([nvcc, "-o", str(tmp_path / "hold"), str(src)], check=True, timeout=300)
    import base64
    up = [{"path": "hold", "type": "file", "mode": 0o755,
           "content_b64": base64.b64encode((tmp_path / "hold").read_bytes()).decode()}]
    d = Daemon().start()
    try:
        first = d.submit("./hold", "40", gpu_ids=["0"], gpu_share=True, gpu_memory_mb=1024, uploads=up)
        deadline = time.time() + 120
        while time.time() < deadline and "up" not in d.output(first):
            time.sleep(0.2)
        assert "up" in d.output(first), d.job(first)
        second = d.submit("./hold", "1", gpu_ids=["0"], gpu_share=True, gpu_memory_mb=1024, uploads=up)
        job = d.wait(second, 120)
        assert d.job(first)["status"] == "RUNNING", d.job(first)  # the second's CUDA start came meanwhile
        assert job["status"] == "COMPLETED" and d.output(second).strip() == "up", (job, d.output(second))
        assert d.job(first)["uid"] == job["uid"]
        d.api("POST", f"/v1/jobs/{first}/stop")
        d.wait(first, 120)
    finally:
        d.cleanup()
