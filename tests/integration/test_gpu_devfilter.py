"""Both device-filter paths with a GPU job's rules, on the real kernel: the cgroup2 eBPF
program (used wherever a cgroup2 hierarchy exists, hybrid hosts included) and the v1 devices
controller (v1-only hosts). Each runs on a scratch cgroup of its own with mknod-made 195:N
nodes: the allowed GPU and nvidiactl open as far as the absent driver (ENXIO), the other GPU
fails with EPERM, /dev/null opens."""
import os
import stat
import subprocess
import uuid

import pytest

from conftest import BUILD, need_root

PROBE = os.path.join(BUILD, "tests", "probes", "devfilter_probe")


def hierarchy(mode):
    if mode == "v1":
        return "/sys/fs/cgroup/devices" if os.path.isfile("/sys/fs/cgroup/devices/devices.allow") else None
    for base in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        if os.path.isfile(os.path.join(base, "cgroup.procs")) and os.path.isfile(os.path.join(base, "cgroup.controllers")):
            return base
    return None


@pytest.mark.parametrize("mode", ["ebpf", "v1"])
def test_gpu_rules_through_each_filter_path(mode, tmp_path):
    need_root()
    base = hierarchy(mode)
    if not base:
        pytest.skip(f"this host has no {'cgroup2' if mode == 'ebpf' else 'v1 devices'} hierarchy to test the {mode} path")
    nodes = {"nvidia0": (195, 0), "nvidia1": (195, 1), "nvidiactl": (195, 255)}
    for name, (ma, mi) in nodes.items():
        os.mknod(tmp_path / name, 0o666 | stat.S_IFCHR, os.makedev(ma, mi))
        os.chmod(tmp_path / name, 0o666)
    cg = os.path.join(base, "joblet-devtest-" + uuid.uuid4().hex[:8])
    os.mkdir(cg)
    try:
        p = subprocess.run([PROBE, mode, cg, "195:0,195:255", *(str(tmp_path / n) for n in nodes), "/dev/null"],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        got = dict(line.split() for line in p.stdout.splitlines())
    finally:
        os.rmdir(cg)
    assert got == {str(tmp_path / "nvidia0"): "ENXIO", str(tmp_path / "nvidia1"): "EPERM",
                   str(tmp_path / "nvidiactl"): "ENXIO", "/dev/null": "ok"}, got
