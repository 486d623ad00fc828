"""GPU isolation without a GPU (DESIGN §7): as root, mknod 195:N test nodes in a scratch device
directory (gpu.dev_root). The kernel's device cgroup check comes before the driver, so inside a
job an allowed node opens with ENXIO (no driver) and a denied one fails with EPERM."""
import json
import os
import stat
import shutil
import subprocess
import sys

import pytest

import busybox_runtime

from conftest import BUILD
from gpu_nodes import FAKE_NVML, FIX, machine, make_nodes

MACHINES = ["dgx-h100", "dgx1-v100", "a100-pcie-4", "mixed"]  # a100-mig: test_mig_device_gets_only_its_capabilities

OPEN_HELPER = r"""
import errno, json, os, sys
procs, nodes = sys.argv[1], sys.argv[2:]
if procs != "-":
    with open(procs, "w") as f:
        f.write(str(os.getpid()))
res = {}
for n in nodes:
    try:
        os.close(os.open(n, os.O_RDWR))
        res[n] = "ok"
    except OSError as e:
        res[n] = errno.errorcode[e.errno]
print(json.dumps(res))
"""




@pytest.fixture
def gpu_machine(fresh_daemon, tmp_path):
    """A daemon on a fixture machine whose device nodes really exist (mknod) in tmp_path/dev."""
    def make(name, extra=""):
        dev = tmp_path / "dev"
        make_nodes(dev, name)
        m = machine(name)
        f = os.path.join(FIX, name)
        backend = "nvml" if os.path.exists(FAKE_NVML) else "proc"
        (tmp_path / "nocuda").mkdir()  # the host's own toolkits stay out of these tests
        d = fresh_daemon(f"gpu:\n  backends: [{backend}]\n  nvml_library: {FAKE_NVML}\n  proc_root: {f}/proc\n"
                         f"  sys_root: {f}/sys\n  dev_root: {dev}\n  cuda_search_root: {tmp_path}/nocuda\n{extra}",
                         env={"FAKE_NVML_FIXTURE": f"{f}/machine.json"})
        return d, str(dev), sorted(m["gpus"], key=lambda g: g["bus_id"])
    return make


def in_cgroup(procs, nodes):
    p = subprocess.run([sys.executable, "-c", OPEN_HELPER, procs, *nodes], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def unified_procs(d, jid):
    base = "/sys/fs/cgroup" if os.path.isfile("/sys/fs/cgroup/cgroup.procs") else "/sys/fs/cgroup/unified"
    path = os.path.join(base, d.cgroup_root, d.job_cgroup(jid), "cgroup.procs")
    assert os.path.exists(path), f"job {jid} has no cgroup2 cgroup for its device filter"
    return path


@pytest.mark.parametrize("name", MACHINES)
def test_job_gets_exactly_its_gpus(gpu_machine, name):
    d, dev, gpus = gpu_machine(name)
    want = min(2, len(gpus))
    probe = ("import json, os, errno\n"
             "nodes = sorted(n for n in os.listdir('/dev') if n.startswith('nvidia'))\n"
             "res = {}\n"
             "for n in nodes:\n"
             "    try: os.close(os.open('/dev/' + n, os.O_RDWR)); res[n] = 'ok'\n"
             "    except OSError as e: res[n] = errno.errorcode[e.errno]\n"
             "print(json.dumps({'open': res, 'gpus': sorted(os.listdir('/proc/driver/nvidia/gpus')),\n"
             "  'params': open('/proc/driver/nvidia/params').read(), 'cvd': os.environ['CUDA_VISIBLE_DEVICES']}))")
    jid = d.submit("python3", "-c", probe, gpu_count=want)
    job = d.wait(jid)
    assert job["status"] == "COMPLETED", (job, d.output(jid, "stderr"))
    r = json.loads(d.output(jid))
    granted = [g["minor"] for g in job["gpus"]]
    assert len(granted) == want
    # exactly its GPUs' nodes (by minor, which need not be the index), the control node and UVM;
    # each opens as far as the driver (ENXIO: none here), so the device filter let it through
    expected = {f"nvidia{m}" for m in granted} | {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"}
    assert r["open"] == {n: "ENXIO" for n in expected}, r["open"]
    assert r["gpus"] == sorted(g["bus_id"] for g in job["gpus"])
    assert "ModifyDeviceFiles: 0" in r["params"] and "ModifyDeviceFiles: 1" not in r["params"]
    assert r["cvd"] == ",".join(str(i) for i in range(want))


@pytest.mark.parametrize("name", ["dgx-h100", "a100-pcie-4"])
def test_other_gpus_are_denied_in_the_jobs_cgroup(gpu_machine, name):
    d, dev, gpus = gpu_machine(name)
    all_nodes = [os.path.join(dev, f"nvidia{g['minor']}") for g in gpus]
    control = in_cgroup("-", all_nodes)
    assert set(control.values()) == {"ENXIO"}, control  # outside any job: as far as the (absent) driver
    jid = d.submit("sleep", "60", gpu_count=2)
    plain = d.submit("sleep", "60")
    try:
        d.wait_status(jid, "RUNNING")
        d.wait_status(plain, "RUNNING")
        mine = {os.path.join(dev, f"nvidia{g['minor']}") for g in d.job(jid)["gpus"]}
        r = in_cgroup(unified_procs(d, jid), all_nodes + [os.path.join(dev, "nvidiactl"), "/dev/null"])
        for n in all_nodes:
            assert r[n] == ("ENXIO" if n in mine else "EPERM"), (n, r)
        assert r[os.path.join(dev, "nvidiactl")] == "ENXIO" and r["/dev/null"] == "ok"
        # a job without --gpu may open none of them
        r = in_cgroup(unified_procs(d, plain), all_nodes + [os.path.join(dev, "nvidiactl")])
        assert set(r.values()) == {"EPERM"}, r
    finally:
        for j in (jid, plain):
            d.api("POST", f"/v1/jobs/{j}/stop")
            d.wait(j)


def test_host_node_with_wrong_numbers_fails_the_job(gpu_machine):
    d, dev, gpus = gpu_machine("dgx-h100")
    os.unlink(os.path.join(dev, "nvidia0"))
    os.mknod(os.path.join(dev, "nvidia0"), 0o666 | stat.S_IFCHR, os.makedev(195, 99))
    job = d.wait(d.submit("true", gpu_count=1))
    assert job["status"] == "FAILED" and job["end_reason"] == "start_failed"
    assert "nvidia0 on the host is character device 195:99, expected character device 195:0" in job["error"]


def test_cuda_toolkit_mounted_read_only_and_paths_extended(gpu_machine, tmp_path):
    tk = tmp_path / "cuda-12.2"
    (tk / "bin").mkdir(parents=True)
    (tk / "lib64").mkdir()
    (tk / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.2.140"}}))
    (tk / "bin" / "nvcc").write_text("#!/bin/sh\necho fake nvcc 12.2\n")
    os.chmod(tk / "bin" / "nvcc", 0o755)
    too_new = tmp_path / "cuda-13.0"
    too_new.mkdir()
    (too_new / "version.json").write_text(json.dumps({"cuda": {"version": "13.0.0"}}))
    d, dev, gpus = gpu_machine("dgx-h100", extra=f"  cuda_paths: [{tk}, {too_new}]\n")
    inv = json.loads(d.rnx("gpu", "list", "--json", check=True).stdout)
    compat = {c["path"]: c["compatibility"] for c in inv["cuda_installations"]}
    assert compat == {str(tk): "ok", str(too_new): "too-new"}
    p = d.rnx("job", "run", "--gpu=1", "-e", "PATH=/usr/bin:/bin", "--follow", "sh", "-c",
              f"echo $CUDA_HOME; echo $PATH; echo $LD_LIBRARY_PATH; nvcc; touch {tk}/x 2>&1; ls {too_new} 2>&1; true",
              check=True)
    lines = p.stdout.splitlines()
    assert lines[0] == str(tk)
    assert lines[1] == f"/usr/bin:/bin:{tk}/bin"  # the job's own PATH, extended
    assert lines[2] == f"{tk}/lib64"
    assert lines[3] == "fake nvcc 12.2"
    assert "Read-only file system" in lines[4]
    assert "No such file or directory" in lines[5]  # only the toolkit it was given
    # a secret PATH and LD_LIBRARY_PATH are extended as plain ones are: the command check counts
    # the toolkit's programs as found, so `nvcc` itself, as the command, must run
    p = d.rnx("job", "run", "--gpu=1", "-e", "PATH=/usr/bin:/bin", "--follow", "nvcc", check=True)
    assert p.stdout == "fake nvcc 12.2\n"
    p = d.rnx("job", "run", "--gpu=1", "-s", "PATH=/usr/bin:/bin", "-s", "LD_LIBRARY_PATH=/opt/l", "--follow",
              "nvcc", check=True)
    assert p.stdout == "fake nvcc 12.2\n"
    p = d.rnx("job", "run", "--gpu=1", "-s", "PATH=/usr/bin:/bin", "-s", "LD_LIBRARY_PATH=/opt/l", "--follow",
              "sh", "-c", "echo $PATH; echo $LD_LIBRARY_PATH", check=True)
    assert p.stdout.splitlines() == [f"/usr/bin:/bin:{tk}/bin", f"/opt/l:{tk}/lib64"]
    # a job without GPUs gets no toolkit and the default PATH
    p = d.rnx("job", "run", "--follow", "sh", "-c", "echo ${CUDA_HOME:-none} $PATH", check=True)
    assert p.stdout.split() == ["none", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]


@pytest.mark.skipif(not os.path.exists(busybox_runtime.BUSYBOX), reason="busybox-static is not installed")
def test_gpu_job_in_a_runtime_gets_devices_and_the_toolkit(gpu_machine, tmp_path):
    """A runtime's /usr is not the host's: the toolkit is mounted on a directory of the job's own
    (/opt/nvidia/cuda, CUDA_HOME), and the device nodes are there as for any GPU job."""
    tk = tmp_path / "cuda-12.2"
    (tk / "bin").mkdir(parents=True)
    (tk / "lib64").mkdir()
    (tk / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.2.140"}}))
    (tk / "bin" / "nvcc").write_text("#!/bin/sh\necho fake nvcc 12.2\n")
    os.chmod(tk / "bin" / "nvcc", 0o755)
    d, dev, gpus = gpu_machine("dgx-h100", extra=f"  cuda_paths: [{tk}]\n")
    busybox_runtime.make(os.path.join(d.state, "runtimes"))
    p = d.rnx("job", "run", "--gpu=1", "--runtime=busybox", "--follow", "sh", "-c",
              "cat /etc/marker; echo $CUDA_HOME; nvcc; ls /dev | grep -c '^nvidia[0-9]'; touch /opt/nvidia/cuda/x 2>&1;"
              " true", check=True)
    lines = p.stdout.splitlines()
    assert lines[0] == "busybox runtime"
    assert lines[1] == "/opt/nvidia/cuda"
    assert lines[2] == "fake nvcc 12.2"
    assert lines[3] == "1"                       # its one GPU's node, no other
    assert "Read-only file system" in lines[4]


def test_mig_device_gets_only_its_capabilities(gpu_machine):
    d, dev, gpus = gpu_machine("a100-mig")
    g = gpus[0]
    caps_major = next(int(l.split()[0]) for l in open(os.path.join(FIX, "a100-mig", "proc", "devices"))
                      if l.split()[1:] == ["nvidia-caps"])
    os.mkdir(os.path.join(dev, "nvidia-caps"))
    caps = {}
    for m in g["mig"]:
        gi_cap = 3 + 135 * g["minor"] + 9 * m["gi"]
        for cap in (gi_cap, gi_cap + 1 + m["ci"]):
            p = os.path.join(dev, "nvidia-caps", f"nvidia-cap{cap}")
            os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(caps_major, cap))
            os.chmod(p, 0o666)
            caps.setdefault(m["profile"], []).append(p)
    # a GPU in MIG mode is not handed out whole
    p = d.rnx("job", "run", "--gpu=1", "true")
    assert p.returncode == 1 and "this machine has 0 usable GPUs" in p.stderr
    p = d.rnx("job", "run", "--gpu-mig=7g.80gb", "true")
    assert p.returncode == 1 and "no MIG device with profile '7g.80gb'" in p.stderr and "1g.10gb" in p.stderr
    probe = ("import json, os, errno\n"
             "res = {}\n"
             "for n in sorted(os.listdir('/dev/nvidia-caps')) + [n for n in os.listdir('/dev') if n.startswith('nvidia')]:\n"
             "    p = '/dev/nvidia-caps/' + n if n.startswith('nvidia-cap') and n != 'nvidia-caps' else '/dev/' + n\n"
             "    if os.path.isdir(p): continue\n"
             "    try: os.close(os.open(p, os.O_RDWR)); res[n] = 'ok'\n"
             "    except OSError as e: res[n] = errno.errorcode[e.errno]\n"
             "print(json.dumps({'open': res, 'cvd': os.environ['CUDA_VISIBLE_DEVICES'],\n"
             "  'caps': sorted(os.listdir('/proc/driver/nvidia/capabilities/gpu%d/mig' % " + str(g["minor"]) + "))}))")
    jid = d.submit("python3", "-c", probe, gpu_mig="2g.20gb")
    job = d.wait(jid)
    assert job["status"] == "COMPLETED", (job, d.output(jid, "stderr"))
    r = json.loads(d.output(jid))
    mine = next(m for m in g["mig"] if m["profile"] == "2g.20gb")
    assert r["cvd"] == mine["uuid"]
    gi_cap = 3 + 135 * g["minor"] + 9 * mine["gi"]
    assert r["open"] == {f"nvidia-cap{gi_cap}": "ENXIO", f"nvidia-cap{gi_cap + 1 + mine['ci']}": "ENXIO",
                         f"nvidia{g['minor']}": "ENXIO", "nvidiactl": "ENXIO", "nvidia-uvm": "ENXIO",
                         "nvidia-uvm-tools": "ENXIO"}
    assert r["caps"] == [f"gi{mine['gi']}"]
    assert job["gpus"][0]["mig"]["profile"] == "2g.20gb" and job["gpus"][0]["parent_uuid"] == g["uuid"]
    # while it runs, another job's cgroup may not open that instance's capabilities
    a = d.submit("sleep", "60", gpu_mig="1g.10gb")
    try:
        d.wait_status(a, "RUNNING")
        r = in_cgroup(unified_procs(d, a), caps["2g.20gb"] + caps["1g.10gb"])
        assert [r[p] for p in caps["2g.20gb"]] == ["EPERM", "EPERM"]
        assert [r[p] for p in caps["1g.10gb"]] == ["ENXIO", "ENXIO"]
        b = d.submit("true", gpu_mig="1g.10gb")  # the only 1g.10gb device is taken: it waits
        assert d.job(b)["status"] == "QUEUED"
    finally:
        d.api("POST", f"/v1/jobs/{a}/stop")
        d.wait(a)
    assert d.wait(b)["status"] == "COMPLETED"


def build_driver(tmp_path, version):
    """Real ELF libraries named as a driver ships them, with their sonames."""
    d = tmp_path / f"driver-{version}"
    d.mkdir()
    src = tmp_path / "empty.c"
    src.write_text("int joblet_fake_driver_symbol(void) { return 42; }\n")
    for lib in ("libcuda", "libnvidia-ml", "libnvidia-ptxjitcompiler"):
        if lib == "libnvidia-ptxjitcompiler" and version != "535.129.03":
            continue
        subprocess.run(["cc", "-shared", "-fPIC", f"-Wl,-soname,{lib}.so.1", "-o", str(d / f"{lib}.so.{version}"),
                        str(src)], check=True)
    return d


def test_driver_libraries_of_the_running_version_only(gpu_machine, tmp_path):
    if not shutil.which("cc") or not shutil.which("ldconfig"):
        pytest.skip("needs cc and ldconfig to make a test loader cache")
    old, new = build_driver(tmp_path, "470.57.02"), build_driver(tmp_path, "535.129.03")
    conf = tmp_path / "ld.so.conf"
    conf.write_text(f"{old}\n{new}\n")  # the old driver's directory first: it must still lose
    cache = tmp_path / "ld.so.cache"
    subprocess.run(["ldconfig", "-C", str(cache), "-f", str(conf)], check=True)
    d, dev, gpus = gpu_machine("dgx-h100", extra=f"  ldcache: {cache}\n")
    log = d.log()
    assert "3 driver 535.129.03 libraries found" in log
    assert "libraries of other driver versions ignored" in log
    assert "not found for driver 535.129.03" in log and "libnvidia-cfg.so" in log  # a warning, not a failure
    probe = ("import ctypes, json, os\n"
             "d = '/opt/nvidia/lib'\n"
             "ents = {n: (os.readlink(d + '/' + n) if os.path.islink(d + '/' + n) else 'file') for n in os.listdir(d)}\n"
             "lib = ctypes.CDLL('libcuda.so.1')\n"
             "w = [l.split()[5].split(',')[0] for l in open('/proc/self/mountinfo')\n"
             "     if l.split()[4] == d + '/libcuda.so.535.129.03']\n"
             "print(json.dumps({'ents': ents, 'sym': lib.joblet_fake_driver_symbol(), 'w': w,\n"
             "                  'ld': os.environ['LD_LIBRARY_PATH']}))")
    jid = d.submit("python3", "-c", probe, gpu_count=1)
    job = d.wait(jid)
    assert job["status"] == "COMPLETED", (job, d.output(jid, "stderr"))
    r = json.loads(d.output(jid))
    assert r["ents"] == {
        "libcuda.so.535.129.03": "file", "libcuda.so.1": "libcuda.so.535.129.03", "libcuda.so": "libcuda.so.1",
        "libnvidia-ml.so.535.129.03": "file", "libnvidia-ml.so.1": "libnvidia-ml.so.535.129.03",
        "libnvidia-ml.so": "libnvidia-ml.so.1",
        "libnvidia-ptxjitcompiler.so.535.129.03": "file",
        "libnvidia-ptxjitcompiler.so.1": "libnvidia-ptxjitcompiler.so.535.129.03",
        "libnvidia-ptxjitcompiler.so": "libnvidia-ptxjitcompiler.so.1"}
    assert r["sym"] == 42  # the loader finds and loads the mounted library
    assert r["w"] == ["ro"]  # mounted, read-only
    assert r["ld"].split(":")[0] == "/opt/nvidia/lib"
    # utility only: no compute library
    jid = d.submit("sh", "-c", "ls /opt/nvidia/lib", gpu_count=1, gpu_caps="utility")
    assert d.wait(jid)["status"] == "COMPLETED"
    assert sorted(d.output(jid).split()) == ["libnvidia-ml.so", "libnvidia-ml.so.1", "libnvidia-ml.so.535.129.03"]


FAKE_CUDA = os.path.join(BUILD, "tests", "fakes", "libcuda.so.1")


def test_released_gpus_are_scrubbed_before_reuse(fresh_daemon, tmp_path):
    f = os.path.join(FIX, "dgx-h100")
    gpus = sorted(machine("dgx-h100")["gpus"], key=lambda g: g["bus_id"])
    dev = tmp_path / "dev"
    dev.mkdir()
    for g in gpus:
        os.mknod(dev / f"nvidia{g['minor']}", 0o666 | stat.S_IFCHR, os.makedev(195, g["minor"]))
    os.mknod(dev / "nvidiactl", 0o666 | stat.S_IFCHR, os.makedev(195, 255))
    cuda_log = tmp_path / "cuda.log"
    bad = gpus[1]["uuid"]
    d = fresh_daemon(f"gpu:\n  backends: [nvml]\n  nvml_library: {FAKE_NVML}\n  proc_root: {f}/proc\n"
                     f"  sys_root: {f}/sys\n  dev_root: {dev}\n  scrub: 1\n  libcuda: {FAKE_CUDA}\n",
                     env={"FAKE_NVML_FIXTURE": f"{f}/machine.json", "FAKE_CUDA_LOG": str(cuda_log),
                          "FAKE_CUDA_FAIL": f"cuMemsetD8_v2@{bad}=CUDA_ERROR_LAUNCH_FAILED"})
    job = d.wait(d.submit("true", gpu_ids=["0", "1"]))
    assert job["status"] == "COMPLETED", job
    deadline = __import__("time").time() + 20
    while True:
        gl = json.loads(d.rnx("gpu", "list", "--json", check=True).stdout)["gpus"]
        if gl[0]["state"] != "scrubbing" and gl[1]["state"] != "scrubbing":
            break
        assert __import__("time").time() < deadline, gl[:2]
        __import__("time").sleep(0.05)
    # GPU 0 was zeroed and is available again; GPU 1's scrub failed: DEGRADED, with the reason
    log = cuda_log.read_text()
    assert f"memset {gpus[0]['uuid']}" in log and f"ctx {gpus[0]['uuid']}" in log
    assert gl[0]["state"] == "available"
    assert gl[1]["state"] == "degraded" and "cuMemsetD8_v2" in gl[1]["problem"] and bad in gl[1]["problem"]
    assert all(g["state"] == "available" for g in gl[2:])
    assert gpus[2]["uuid"] not in log  # only what was released is scrubbed
    # a degraded GPU is never handed out again: asked by id it is refused, and 8 are no longer possible
    p = d.rnx("job", "run", "--gpu-ids=1", "true")
    assert p.returncode == 1 and "--gpu-ids: GPU 1 is degraded since " in p.stderr and \
        "(memory scrub failed: " in p.stderr and "until an admin runs 'rnx gpu online 1'" in p.stderr, p.stderr
    p = d.rnx("job", "run", "--gpu=8", "true")
    assert p.returncode == 1 and "this machine has 7 usable GPUs" in p.stderr
    j = d.wait(d.submit("true", gpu_count=7))
    assert 1 not in [g["index"] for g in j["gpus"]]


def test_graphics_capability_adds_the_modeset_node(gpu_machine):
    d, dev, gpus = gpu_machine("mixed")
    os.mknod(os.path.join(dev, "nvidia-modeset"), 0o666 | stat.S_IFCHR, os.makedev(195, 254))
    os.chmod(os.path.join(dev, "nvidia-modeset"), 0o666)
    probe = ("import errno, os\n"
             "try: os.open('/dev/nvidia-modeset', os.O_RDWR)\n"
             "except OSError as e: print(errno.errorcode[e.errno])")
    job, out, _ = d.run("python3", "-c", probe, gpu_count=1, gpu_caps="compute,graphics")
    assert job["status"] == "COMPLETED" and out.strip() == "ENXIO"  # present and allowed
    job, out, _ = d.run("python3", "-c", probe, gpu_count=1)
    assert job["status"] == "COMPLETED" and out.strip() == "ENOENT"  # compute,utility: not given


def test_gpu_job_runs_on_its_gpus_numa_cpus(fresh_daemon, tmp_path):
    online = open("/sys/devices/system/cpu/online").read().strip()
    if online in ("0",):
        pytest.skip("one CPU: nothing to pin")
    # the mixed machine, with its first GPU local to CPU 1 of this host
    m = machine("mixed")
    first = min(m["gpus"], key=lambda g: g["bus_id"])
    first["local_cpus"], first["numa_node"] = "1", 0
    fx = tmp_path / "machine.json"
    fx.write_text(json.dumps(m))
    f = os.path.join(FIX, "mixed")
    dev = tmp_path / "dev"
    dev.mkdir()
    for g in m["gpus"]:
        os.mknod(dev / f"nvidia{g['minor']}", 0o666 | stat.S_IFCHR, os.makedev(195, g["minor"]))
    os.mknod(dev / "nvidiactl", 0o666 | stat.S_IFCHR, os.makedev(195, 255))
    d = fresh_daemon(f"gpu:\n  backends: [nvml]\n  nvml_library: {FAKE_NVML}\n  proc_root: {f}/proc\n"
                     f"  sys_root: {f}/sys\n  dev_root: {dev}\n", env={"FAKE_NVML_FIXTURE": str(fx)})
    probe = "import re; print(re.search(r'Cpus_allowed_list:\\s+(\\S+)', open('/proc/self/status').read())[1])"
    job, out, err = d.run("python3", "-c", probe, gpu_ids=["0"])
    assert job["status"] == "COMPLETED", (job, err)
    assert out.strip() == "1"  # the CPUs of its GPU's NUMA node
    job, out, _ = d.run("python3", "-c", probe, gpu_ids=["0"], cpu_cores="0")
    assert out.strip() == "0"  # --cpu-cores wins
