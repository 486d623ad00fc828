"""Fixture machines with real device nodes, for the tests that run jobs on the fake NVML
(test_gpu_isolation.py, test_gpu_health.py): as root, mknod 195:N test nodes in a scratch
directory that becomes the daemon's gpu.dev_root."""
import json
import os
import stat

from conftest import BUILD, ROOT

FIX = os.path.join(ROOT, "tests", "fixtures")
FAKE_NVML = os.path.join(BUILD, "tests", "fakes", "libnvidia-ml.so.1")


def machine(name):
    with open(os.path.join(FIX, name, "machine.json")) as f:
        return json.load(f)


def uvm_major(name):
    with open(os.path.join(FIX, name, "proc", "devices")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2 and parts[1] == "nvidia-uvm":
                return int(parts[0])
    raise AssertionError("fixture lacks nvidia-uvm in proc/devices")


def make_nodes(dev, name):
    """The nodes the driver would make for this machine: one per GPU, nvidiactl, UVM."""
    dev.mkdir()
    for g in machine(name)["gpus"]:
        os.mknod(dev / f"nvidia{g['minor']}", 0o666 | stat.S_IFCHR, os.makedev(195, g["minor"]))
    os.mknod(dev / "nvidiactl", 0o666 | stat.S_IFCHR, os.makedev(195, 255))
    u = uvm_major(name)
    os.mknod(dev / "nvidia-uvm", 0o666 | stat.S_IFCHR, os.makedev(u, 0))
    os.mknod(dev / "nvidia-uvm-tools", 0o666 | stat.S_IFCHR, os.makedev(u, 1))
    for n in os.listdir(dev):  # as the driver makes them (mknod obeys the umask)
        os.chmod(dev / n, 0o666)
