"""CDI (docs/sandbox.md, issue 17): `joblet cdi generate` writes a CDI specification of the
machine's GPUs from discovery, and a real consumer reads it: Debian's podman runs a static
busybox rootfs with --device nvidia.com/gpu=N against the spec, on device nodes made with
mknod for a fixture machine (fake NVML), and the container sees exactly that GPU's nodes."""
import glob
import json
import os
import shutil
import subprocess
import uuid

import pytest

import busybox_runtime
from conftest import BUILD, need_root
from gpu_nodes import FAKE_NVML, FIX, machine, make_nodes

PODMAN = shutil.which("podman")


def generate(tmp_path, name, *extra):
    dev = tmp_path / "dev"
    make_nodes(dev, name)
    f = os.path.join(FIX, name)
    backend = "nvml" if os.path.exists(FAKE_NVML) else "proc"
    (tmp_path / "nocuda").mkdir()
    cfg = tmp_path / "joblet.yml"
    cfg.write_text(f"gpu:\n  backends: [{backend}]\n  nvml_library: {FAKE_NVML}\n  proc_root: {f}/proc\n"
                   f"  sys_root: {f}/sys\n  dev_root: {dev}\n  cuda_search_root: {tmp_path}/nocuda\n")
    p = subprocess.run([os.path.join(BUILD, "joblet"), "--config", str(cfg), "cdi", "generate", *extra],
                       capture_output=True, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "FAKE_NVML_FIXTURE": f"{f}/machine.json"})
    assert p.returncode == 0, p.stderr
    return p, str(dev)


def test_generated_spec_has_every_gpu_by_index_uuid_and_all(tmp_path):
    need_root()
    p, dev = generate(tmp_path, "dgx-h100")
    spec = json.loads(p.stdout)
    assert spec["kind"] == "nvidia.com/gpu" and spec["cdiVersion"] == "0.5.0"
    gpus = machine("dgx-h100")["gpus"]
    names = [d["name"] for d in spec["devices"]]
    for g in gpus:
        assert str(g["index"]) in names and g["uuid"] in names
    assert names[-1] == "all"
    by = {d["name"]: d["containerEdits"]["deviceNodes"] for d in spec["devices"]}
    g1 = next(g for g in gpus if g["index"] == 1)
    assert by["1"] == [{"path": f"/dev/nvidia{g1['minor']}", "hostPath": f"{dev}/nvidia{g1['minor']}", "type": "c",
                        "major": 195, "minor": g1["minor"], "permissions": "rw"}]
    assert by[g1["uuid"]] == by["1"]
    assert sorted(n["minor"] for n in by["all"]) == sorted(g["minor"] for g in gpus)
    common = [n["path"] for n in spec["containerEdits"]["deviceNodes"]]
    assert common == ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    assert "NVIDIA_VISIBLE_DEVICES=void" in spec["containerEdits"]["env"]
    # --output writes the same, atomically
    out = tmp_path / "nvidia.json"
    shutil.rmtree(tmp_path / "dev")
    shutil.rmtree(tmp_path / "nocuda")
    generate(tmp_path, "dgx-h100", "--output", str(out))
    assert json.loads(out.read_text())["kind"] == "nvidia.com/gpu"


def test_no_gpu_no_spec(tmp_path):
    cfg = tmp_path / "joblet.yml"
    cfg.write_text(f"gpu:\n  backends: [proc]\n  proc_root: {FIX}/no-gpu/proc\n  sys_root: {FIX}/no-gpu/sys\n")
    p = subprocess.run([os.path.join(BUILD, "joblet"), "--config", str(cfg), "cdi", "generate"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 1 and "no GPU found" in p.stderr, p.stderr


@pytest.mark.skipif(PODMAN is None, reason="podman is not installed (scripts/install-deps.sh installs it)")
def test_podman_reads_the_spec_and_sees_exactly_that_gpu(tmp_path):
    need_root()
    spec_file = f"/etc/cdi/joblet-test-{uuid.uuid4().hex[:8]}.json"
    _, dev = generate(tmp_path, "dgx-h100", "--output", str(tmp_path / "spec.json"))
    rootfs = busybox_runtime.make(str(tmp_path / "rt"))
    gpus = {g["index"]: g for g in machine("dgx-h100")["gpus"]}
    os.makedirs("/etc/cdi", exist_ok=True)
    # a run killed before its finally left its spec: two specs naming nvidia.com/gpu=1 make it
    # "unresolvable" to podman (a local CI run stopped by hand did)
    for old in glob.glob("/etc/cdi/joblet-test-*.json"):
        os.unlink(old)
    shutil.copy(tmp_path / "spec.json", spec_file)
    try:
        def podman(device):
            p = subprocess.run([PODMAN, "run", "--rm", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096",
                                "--network=none", "--device", device, "--rootfs", rootfs, "/bin/sh", "-c",
                                "ls /dev; env"], capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, p.stderr
            return sorted(n for n in p.stdout.split() if n.startswith("nvidia") and n[6:].isdigit()), p.stdout

        seen, out = podman("nvidia.com/gpu=1")
        assert seen == [f"nvidia{gpus[1]['minor']}"], out
        assert "nvidiactl" in out.split() and "nvidia-uvm" in out.split()
        assert "NVIDIA_VISIBLE_DEVICES=void" in out
        seen, out = podman(f"nvidia.com/gpu={gpus[5]['uuid']}")
        assert seen == [f"nvidia{gpus[5]['minor']}"], out
        seen, out = podman("nvidia.com/gpu=all")
        assert seen == sorted(f"nvidia{g['minor']}" for g in gpus.values()), out
    finally:
        os.unlink(spec_file)


def test_mig_devices_get_their_parent_and_capability_nodes(tmp_path):
    need_root()
    import stat
    name = "a100-mig"
    g = machine(name)["gpus"][0]
    caps_major = next(int(l.split()[0]) for l in open(os.path.join(FIX, name, "proc", "devices"))
                      if l.split()[1:] == ["nvidia-caps"])
    # the nodes the driver would make (gpu_nodes.make_nodes makes the rest)
    dev = tmp_path / "dev"
    make_nodes(dev, name)
    os.mkdir(dev / "nvidia-caps")
    want = {}
    for m in g["mig"]:
        gi_cap = 3 + 135 * g["minor"] + 9 * m["gi"]
        want[m["uuid"]] = [gi_cap, gi_cap + 1 + m["ci"]]
        for cap in want[m["uuid"]]:
            p = dev / "nvidia-caps" / f"nvidia-cap{cap}"
            os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(caps_major, cap))
    f = os.path.join(FIX, name)
    backend = "nvml" if os.path.exists(FAKE_NVML) else "proc"
    (tmp_path / "nocuda").mkdir()
    cfg = tmp_path / "joblet.yml"
    cfg.write_text(f"gpu:\n  backends: [{backend}]\n  nvml_library: {FAKE_NVML}\n  proc_root: {f}/proc\n"
                   f"  sys_root: {f}/sys\n  dev_root: {dev}\n  cuda_search_root: {tmp_path}/nocuda\n")
    p = subprocess.run([os.path.join(BUILD, "joblet"), "--config", str(cfg), "cdi", "generate"],
                       capture_output=True, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "FAKE_NVML_FIXTURE": f"{f}/machine.json"})
    assert p.returncode == 0, p.stderr
    spec = json.loads(p.stdout)
    by = {d["name"]: d["containerEdits"]["deviceNodes"] for d in spec["devices"]}
    for k, m in enumerate(g["mig"]):
        nodes = by[f"{g['index']}:{k}"]
        assert by[m["uuid"]] == nodes
        assert nodes[0]["path"] == f"/dev/nvidia{g['minor']}"
        assert [n["minor"] for n in nodes[1:]] == want[m["uuid"]], nodes
        assert all(n["major"] == caps_major and n["path"].startswith("/dev/nvidia-caps/") for n in nodes[1:])
