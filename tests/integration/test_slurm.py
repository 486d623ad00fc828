"""joblet and Slurm on one node (docs/slurm.md): `rnx gpu gres-conf` prints gres.conf from
discovery, on machines simulated with the fake NVML (the fixtures' PCI trees, and a CPU
topology the test writes as Linux numbers x86 CPUs); and the GPUs' health drains and resumes
the Slurm node through slurm.scontrol, here a fake scontrol that keeps one node's state in a
file, logs its calls, and can be made slow, hung or broken."""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import ROOT
from gpu_nodes import FAKE_NVML, FIX, make_nodes
from sse import Stream

FAKE_SMI = os.path.join(ROOT, "tests", "fakes", "nvidia-smi")

pytestmark = pytest.mark.skipif(not os.path.exists(FAKE_NVML), reason="the fake NVML was not built")


def sim_sys(tmp, name, sockets, cores, threads):
    """A gpu.sys_root: the fixture's PCI devices, and devices/system/cpu for sockets x cores x
    threads CPUs numbered as Linux numbers them on x86 (first threads of every core, socket by
    socket, then the second threads)."""
    root = tmp / "sys"
    root.mkdir()
    os.symlink(os.path.join(FIX, name, "sys", "bus"), root / "bus")
    devices = root / "devices"
    devices.mkdir()
    for e in os.listdir(os.path.join(FIX, name, "sys", "devices")):
        os.symlink(os.path.join(FIX, name, "sys", "devices", e), devices / e)
    n = sockets * cores * threads
    for c in range(n):
        t = devices / "system" / "cpu" / f"cpu{c}" / "topology"
        t.mkdir(parents=True)
        (t / "physical_package_id").write_text(f"{c % (sockets * cores) // cores}\n")
        (t / "die_id").write_text("0\n")
        (t / "core_id").write_text(f"{c % cores}\n")
    return root


FAKE_SCONTROL = r'''#!/usr/bin/python3
# A fake scontrol for one node: its state in STATE (JSON), each call appended to CALLS.
# BEHAVE (a file, optional): "hang", "fail", "slow" (each call takes 0.3 s), or "nostate" (a show
# that prints no State=).
import json, os, sys, time
d = os.path.dirname(os.path.abspath(__file__))
behave = open(os.path.join(d, "behave")).read().strip() if os.path.exists(os.path.join(d, "behave")) else ""
lock = os.path.join(d, "running")
try:  # another call still running (one killed by joblet's timeout left its lock: not running)
    os.kill(int(open(lock).read()), 0)
    open(os.path.join(d, "overlap"), "a").write(json.dumps(sys.argv[1:]) + "\n")
except (OSError, ValueError):
    pass
open(lock, "w").write(str(os.getpid()))
try:
    with open(os.path.join(d, "calls"), "a") as f:
        f.write(json.dumps(sys.argv[1:]) + "\n")
    if behave == "hang":
        time.sleep(3600)
    if behave == "slow":
        time.sleep(0.3)
    if behave == "nostate":
        print("slurm_load_node: something else entirely"); sys.exit(0)
    if behave == "fail":
        print("slurm_load_node error: Unable to contact slurm controller (connect failure)", file=sys.stderr)
        sys.exit(1)
    st = json.load(open(os.path.join(d, "state")))
    a = sys.argv[1:]
    if a[:2] == ["show", "node"]:
        if a[2] != st["name"]:
            print("Node %s not found" % a[2]); sys.exit(1)
        print("NodeName=%s Arch=x86_64 CoresPerSocket=56 \n   CPUAlloc=0 CPUEfctv=224 CPUTot=224 CPULoad=0.01\n"
              "   State=%s ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n   Partitions=gpu " %
              (st["name"], st["state"]))
        if st["reason"]:
            print("   Reason=%s [%s@2026-11-28T15:00:00]" % (st["reason"], st.get("by", "root")))
        print()
    elif a[0] == "update":
        kv = dict(x.split("=", 1) for x in a[1:])
        assert kv["NodeName"] == st["name"]
        if kv["State"] == "DRAIN":
            st.update(state="IDLE+DRAIN", reason=kv["Reason"], by="root")
        elif kv["State"] == "RESUME":
            st.update(state="IDLE", reason="", by="")
        with open(os.path.join(d, "state.tmp"), "w") as f:  # whole or not at all: the test reads it meanwhile
            json.dump(st, f)
        os.rename(os.path.join(d, "state.tmp"), os.path.join(d, "state"))
    else:
        sys.exit(2)
finally:
    os.unlink(lock)  # not reached when killed
'''


class Node:
    """The fake scontrol's directory: its node's state and the calls it got."""

    def __init__(self, d):
        self.d = d
        self.set("IDLE", "")

    def set(self, state, reason, by="root"):
        (self.d / "state.set").write_text(json.dumps({"name": "n1", "state": state, "reason": reason, "by": by}))
        os.rename(self.d / "state.set", self.d / "state")

    def state(self):
        return json.loads((self.d / "state").read_text())

    def behave(self, how):
        (self.d / "behave").write_text(how)

    def calls(self):
        p = self.d / "calls"
        return [json.loads(l) for l in p.read_text().splitlines()] if p.exists() else []

    def updates(self):
        return [c for c in self.calls() if c[0] == "update"]

    def wait(self, cond, what, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if cond():
                return
            time.sleep(0.05)
        raise AssertionError(f"{what}: never happened; node {self.state()}, calls {self.calls()}")


@pytest.fixture
def sim(fresh_daemon, tmp_path):
    """A daemon on a simulated machine (the fake NVML) with a CPU topology of its own."""
    def make(name="dgx-h100", topo=(2, 56, 2), extra="", env=None):
        dev = tmp_path / "dev"
        make_nodes(dev, name)
        (tmp_path / "nocuda").mkdir()
        sysroot = sim_sys(tmp_path, name, *topo)
        f = os.path.join(FIX, name)
        d = fresh_daemon(f"gpu:\n  backends: [nvml]\n  nvml_library: {FAKE_NVML}\n  proc_root: {f}/proc\n"
                            f"  sys_root: {sysroot}\n  dev_root: {dev}\n  cuda_search_root: {tmp_path}/nocuda\n"
                            f"  nvidia_smi: {FAKE_SMI}\n  scrub: 0\n" + extra,
                            env={"FAKE_NVML_FIXTURE": f"{f}/machine.json", "FAKE_SMI_DIR": f"{f}/smi",
                                 "FAKE_SMI_RESET_LOG": str(tmp_path / "resets"), **(env or {})})
        d.dev = str(dev)   # gpu.dev_root: gres-conf's File= is there
        return d
    return make


# ---- gres.conf from discovery -------------------------------------------------------------

def test_gres_conf_dgx_h100(sim):
    d = sim("dgx-h100", (2, 56, 2), "slurm:\n  node_name: dgx01\n  drain: false\n")
    out = d.rnx("gpu", "gres-conf", check=True).stdout
    lines = out.splitlines()
    assert lines[0] == "# gres.conf for dgx01 from joblet's GPU discovery (backend nvml); GPUs in PCI bus order"
    # CPUs 0-55 and their siblings 112-167 are NUMA node 0: Slurm's cores 0-55
    assert lines[1:] == [
        f"NodeName=dgx01 Name=gpu Type=nvidia_h100_80gb_hbm3 File={d.dev}/nvidia{i} Cores={'0-55' if i < 4 else '56-111'} "
        f"Links={','.join('-1' if j == i else '18' for j in range(8))}" for i in range(8)], out
    # the node name on the command line wins; slurm.conf's Gres=
    out = d.rnx("gpu", "gres-conf", "--node-name=gpu-a1", "--format=slurm.conf", check=True).stdout
    assert out == "NodeName=gpu-a1 Gres=gpu:nvidia_h100_80gb_hbm3:8\n"
    # what the API gives it
    code, g = d.api("GET", "/v1/gpus")
    assert code == 200 and g["slurm"] == {"node_name": "dgx01", "drains_node": False}
    assert g["gpus"][4]["local_cpus"] == "56-111,168-223" and g["gpus"][4]["local_cores"] == "56-111"


def test_gres_conf_pcie_minors_out_of_bus_order(sim):
    """a100-pcie-4: the last two cards' minors are 3 then 2 in bus order; NVLink bridges in
    pairs, the pairs on plain PCIe between them (0)."""
    d = sim("a100-pcie-4", (2, 32, 2))
    out = d.rnx("gpu", "gres-conf", "--node-name", "n1", check=True).stdout.splitlines()
    assert out[1:] == [
        f"NodeName=n1 Name=gpu Type=nvidia_a100-pcie-40gb File={d.dev}/nvidia0 Cores=0-31 Links=-1,12,0,0",
        f"NodeName=n1 Name=gpu Type=nvidia_a100-pcie-40gb File={d.dev}/nvidia1 Cores=0-31 Links=12,-1,0,0",
        f"NodeName=n1 Name=gpu Type=nvidia_a100-pcie-40gb File={d.dev}/nvidia3 Cores=32-63 Links=0,0,-1,12",
        f"NodeName=n1 Name=gpu Type=nvidia_a100-pcie-40gb File={d.dev}/nvidia2 Cores=32-63 Links=0,0,12,-1"], out


def cores_of(cpus, ncores):
    """Slurm's core ids of a Linux CPU list ("0-55,112-167") on the synthetic topology sim_sys
    makes: CPU k and k + ncores are the two threads of core k."""
    out = set()
    for part in cpus.split(","):
        a, _, b = part.partition("-")
        out.update(c % ncores for c in range(int(a), int(b or a) + 1))
    return out


@pytest.mark.parametrize("name,topo", [("dgx-h100", (2, 56, 2)), ("dgx1-v100", (2, 20, 2)),
                                       ("a100-pcie-4", (2, 32, 2))])
def test_gres_conf_agrees_with_rnx_gpu_topo(sim, name, topo):
    """Every GPU of `rnx gpu topo` has its line: File= its minor, Links= its NVLink row of the
    topo matrix in the lines' order (-1 for itself), Cores= the cores of its CPU affinity."""
    d = sim(name, topo)
    lines = re.findall(r"^NodeName=n Name=gpu Type=\S+ File=\S+/nvidia(\d+) Cores=(\S+) Links=(\S+)$",
                       d.rnx("gpu", "gres-conf", "--node-name=n", check=True).stdout, re.M)
    t = json.loads(d.rnx("--json", "gpu", "topo", check=True).stdout)
    minors = [g["minor"] for g in d.api("GET", "/v1/gpus")[1]["gpus"]]
    assert len(lines) == len(minors) == len(t["nvlink"]), lines
    order = [minors.index(int(m)) for m, _, _ in lines]     # each line's GPU, as topo numbers it
    assert sorted(order) == list(range(len(minors))), order
    ncores = topo[0] * topo[1]
    for (minor, cores, links), i in zip(lines, order):
        row = [-1 if j == i else (t["nvlink"][i][j] or 0) for j in order]
        assert [int(x) for x in links.split(",")] == row, (name, i, links, row)
        assert cores_of(cores, 10**9) == cores_of(t["affinity"][i]["local_cpus"], ncores), (name, i, cores)


def test_gres_conf_bad_input_and_unknown_cores(sim):
    # a topology without the fixture's CPUs: no Cores=, and the file says why
    d = sim("mixed", (1, 4, 1))
    out = d.rnx("gpu", "gres-conf", "--node-name=n2", check=True).stdout
    assert "# GPU 2: no Cores=: its CPUs' cores are unknown on this machine\n" \
           f"NodeName=n2 Name=gpu Type=tesla_t4 File={d.dev}/nvidia2 Links=0,0,-1,0\n" in out, out
    p = d.rnx("gpu", "gres-conf", "--format=yaml")
    assert p.returncode == 2 and "--format: 'yaml' is not a format; accepted: gres.conf, slurm.conf" in p.stderr
    p = d.rnx("gpu", "gres-conf", "--node-name=a b")
    assert p.returncode == 2 and "--node-name: 'a b' is not a Slurm node name" in p.stderr
    p = d.rnx("gpu", "gres-conf", "extra")
    assert p.returncode == 2 and "takes no arguments" in p.stderr


SLURMD = shutil.which("slurmd") or "/usr/sbin/slurmd"


def slurmd_gres(tmp, node, gres_conf, slurm_gres, topo, minors):
    """What `slurmd -G` (Slurm's own parser: it prints the node's GRES and exits) makes of
    gres_conf on a node of topo (sockets, cores, threads): hwloc is given that topology
    (HWLOC_SYNTHETIC, its CPUs numbered as Linux numbers x86 ones), and the device nodes exist
    in a private /dev (a tmpfs in a mount namespace of its own, gone when it exits)."""
    sockets, cores, threads = topo
    d = tmp / "slurm"
    (d / "spool").mkdir(parents=True)
    (d / "gres.conf").write_text(gres_conf)
    (d / "slurm.conf").write_text(
        f"ClusterName=joblet-test\nSlurmctldHost=localhost\nGresTypes=gpu\nSlurmdSpoolDir={d}/spool\n"
        f"SlurmdPidFile={d}/slurmd.pid\nStateSaveLocation={d}/state\n"
        f"NodeName={node} CPUs={sockets * cores * threads} Sockets={sockets} CoresPerSocket={cores} "
        f"ThreadsPerCore={threads} {slurm_gres}\nPartitionName=p Nodes={node} Default=YES\n")
    n = sockets * cores
    idx = ",".join(str(t * n + p * cores + c) for p in range(sockets) for c in range(cores) for t in range(threads))
    mk = " && ".join(f"mknod /dev/nvidia{m} c 195 {m}" for m in minors)
    script = (f"mount -t tmpfs joblet-test /dev && mknod -m 666 /dev/null c 1 3 && {mk} && "
              f"exec {SLURMD} -f {d}/slurm.conf -N {node} -G -D")
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], capture_output=True,
                       text=True, timeout=120,
                       env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                            "HWLOC_SYNTHETIC": f"pack:{sockets} core:{cores} pu:{threads}(indexes={idx})"})
    return p.returncode, p.stdout + p.stderr


@pytest.mark.skipif(not os.path.exists(SLURMD), reason="slurmd (Slurm) is not installed")
@pytest.mark.parametrize("name,topo,node", [("dgx-h100", (2, 56, 2), "dgx01"), ("dgx1-v100", (2, 20, 2), "dgx1"),
                                            ("a100-pcie-4", (2, 32, 2), "a100n")])
def test_slurmd_accepts_the_gres_conf(sim, tmp_path, name, topo, node):
    """Slurm 22.05's slurmd reads the lines for each machine as they are: every GPU, its File=,
    Cores= and Links= as printed, and no error (a Cores= of CPU ids instead of core ids, or a
    File= that does not exist, is one: checked below, so that this test can fail)."""
    d = sim(name, topo)
    conf = d.rnx("gpu", "gres-conf", f"--node-name={node}", check=True).stdout
    gres = d.rnx("gpu", "gres-conf", f"--node-name={node}", "--format=slurm.conf", check=True).stdout.split()[1]
    code, g = d.api("GET", "/v1/gpus")
    minors = [x["minor"] for x in g["gpus"]]
    rc, out = slurmd_gres(tmp_path, node, conf, gres, topo, minors)
    assert rc == 0 and "error" not in out and "fatal" not in out, out
    got = re.findall(r"Gres Name=gpu Type=(\S+) Count=1 Index=\d+ ID=\d+ File=(\S+) Cores=(\S+) CoreCnt=\d+ "
                     r"Links=(\S+)", out)
    want = re.findall(r"^NodeName=\S+ Name=gpu Type=(\S+) File=(\S+) Cores=(\S+) Links=(\S+)$", conf, re.M)
    assert len(want) == len(minors) and got == want, out
    # the check has teeth: CPU ids where core ids belong are refused
    cpus = re.sub(r"Cores=\S+", "Cores=" + g["gpus"][-1]["local_cpus"], conf)
    shutil.rmtree(tmp_path / "slurm")
    rc, out = slurmd_gres(tmp_path, node, cpus, gres, topo, minors)
    assert "Invalid GRES data for gpu, Cores=" in out, out


# ---- GPU health drains the Slurm node -----------------------------------------------------

@pytest.fixture
def slurm_node(sim, tmp_path):
    def make(timeout_s=10, retry_s=30, xids=False):
        sc = tmp_path / "scontrol"
        sc.mkdir()
        (sc / "scontrol").write_text(FAKE_SCONTROL)
        os.chmod(sc / "scontrol", 0o755)
        node = Node(sc)
        (tmp_path / "events").write_text("")
        d = sim("a100-pcie-4", (2, 32, 2),
                ("  health_interval_ms: 100\n" if xids else "") +
                f"slurm:\n  node_name: n1\n  scontrol: {sc}/scontrol\n  timeout_s: {timeout_s}\n  retry_s: {retry_s}\n",
                env={"FAKE_NVML_EVENTS": str(tmp_path / "events")})
        # at start it looks once (the node is not drained: nothing to do)
        node.wait(lambda: node.calls() == [["show", "node", "n1"]], "the first look")
        return d, node
    return make


def test_drain_and_resume_with_joblets_reason(slurm_node):
    d, node = slurm_node()
    events = Stream(d.sock)
    assert events.next()[0] == "hello"
    d.rnx("gpu", "drain", "2", check=True)
    node.wait(lambda: node.state()["state"] == "IDLE+DRAIN", "drained")
    ev = events.until(lambda k, v: k == "slurm")[-1][1]
    assert ev == {"node": "n1", "action": "drain", "ok": True,
                  "detail": "drained: joblet: GPU 2 draining: drained by uid 0"}, ev
    events.s.close()
    assert node.updates() == [["update", "NodeName=n1", "State=DRAIN", "Reason=joblet: GPU 2 draining: drained by uid 0"]]
    # a second GPU: the reason names both
    d.rnx("gpu", "offline", "1", check=True)
    both = "joblet: GPU 1 offline: taken offline by uid 0; GPU 2 draining: drained by uid 0"
    node.wait(lambda: node.state()["reason"] == both, "the reason naming both GPUs")
    # one back: still drained, for the other
    d.rnx("gpu", "online", "2", check=True)
    node.wait(lambda: node.state()["reason"] == "joblet: GPU 1 offline: taken offline by uid 0", "the reason for GPU 1")
    assert node.state()["state"] == "IDLE+DRAIN"
    # every GPU back: resumed
    d.rnx("gpu", "online", "1", check=True)
    node.wait(lambda: node.state()["state"] == "IDLE", "resumed")
    assert node.updates()[-1] == ["update", "NodeName=n1", "State=RESUME"]
    assert not (node.d / "overlap").exists()
    # recorded: the log, the audit trail
    # (the fake changes its state before it exits; joblet records the outcome once it has)
    node.wait(lambda: "slurm node n1: resumed: every GPU is back in service" in d.log(), "the resume logged")
    assert "slurm node n1: drained: joblet: GPU 2 draining: drained by uid 0" in d.log()
    code, a = d.api("GET", "/v1/audit")
    details = [r["detail"] for r in a["records"] if r["action"] == "slurm"]
    assert "slurm node n1: resumed: every GPU is back in service" in details, details
    code, g = d.api("GET", "/v1/gpus")
    assert g["slurm"] == {"node_name": "n1", "drains_node": True}


def test_an_xid_drains_the_node(slurm_node, tmp_path):
    """XID 79 takes GPU 2 offline (the XID policy, docs/health.md): the node is drained with
    the XID's meaning; the admin's 'rnx gpu online' resumes it."""
    d, node = slurm_node(xids=True)
    with open(tmp_path / "events", "a") as f:
        f.write("xid 2 79\n")
    node.wait(lambda: node.state()["state"] == "IDLE+DRAIN", "drained")
    assert node.state()["reason"] == "joblet: GPU 2 offline: XID 79: GPU has fallen off the bus"
    d.rnx("gpu", "online", "2", check=True)
    node.wait(lambda: node.state()["state"] == "IDLE", "resumed")


def test_an_admins_drain_is_left_alone(slurm_node):
    d, node = slurm_node()
    node.set("MIXED+DRAIN", "bad fan, case 12", by="alice")
    d.rnx("gpu", "offline", "0", check=True)
    node.wait(lambda: "already drained for another reason" in d.log(), "the admin's drain seen")
    d.rnx("gpu", "online", "0", check=True)
    node.wait(lambda: "the node stays drained: its reason" in d.log(), "the admin's drain kept")
    assert node.updates() == [] and node.state()["reason"] == "bad fan, case 12"
    # the admin resumes it; a GPU out of service drains it for joblet again
    node.set("IDLE", "")
    d.rnx("gpu", "drain", "3", check=True)
    node.wait(lambda: node.state()["reason"] == "joblet: GPU 3 draining: drained by uid 0", "drained by joblet")


def test_a_drain_left_from_before_a_restart_is_resumed(slurm_node):
    """joblet drained the node, stopped; its GPUs came back meanwhile (here: the GPU was put
    back before the stop; the node stayed drained because scontrol failed): at start it looks
    and resumes its own drain."""
    d, node = slurm_node()
    d.rnx("gpu", "drain", "0", check=True)
    node.wait(lambda: node.state()["state"] == "IDLE+DRAIN", "drained")
    node.behave("fail")
    d.rnx("gpu", "online", "0", check=True)
    node.wait(lambda: "Unable to contact slurm controller" in d.log(), "the failure recorded")
    d.stop()
    node.behave("")
    d.start()
    node.wait(lambda: node.state()["state"] == "IDLE", "resumed at start")


def test_timeout_retry_and_one_at_a_time(slurm_node):
    d, node = slurm_node(timeout_s=1, retry_s=1)
    # a hung scontrol is killed at slurm.timeout_s; the change is carried out on a retry
    node.behave("hang")
    d.rnx("gpu", "drain", "1", check=True)
    node.wait(lambda: "ran past slurm.timeout_s (1 s) and was killed" in d.log(), "the hung scontrol killed")
    node.behave("slow")
    node.wait(lambda: node.state()["state"] == "IDLE+DRAIN", "drained on a retry")
    # changes while one runs are coalesced: only the latest wanted state is carried out
    n0 = len(node.calls())
    for i in (0, 2, 3):
        d.rnx("gpu", "drain", str(i), check=True)
    for i in (0, 1, 2, 3):
        d.rnx("gpu", "online", str(i), check=True)
    node.wait(lambda: node.state()["state"] == "IDLE", "resumed after the burst")
    time.sleep(1)  # anything still coming would come now
    later = node.calls()[n0:]
    assert len(later) < 2 * 7, later  # fewer than one show + one update per change
    assert node.updates()[-1] == ["update", "NodeName=n1", "State=RESUME"]
    assert not (node.d / "overlap").exists(), (node.d / "overlap").read_text()
    # the GPUs' own state never waited for Slurm
    code, g = d.api("GET", "/v1/gpus")
    assert [x["state"] for x in g["gpus"]] == ["available"] * 4


def test_scontrol_that_says_no_state_or_cannot_start_is_recorded_and_retried(slurm_node):
    """A `show node` with no State= in it, and an scontrol that cannot be started, are each
    recorded (the log, the audit trail) with what went wrong, and tried again at slurm.retry_s:
    the node is drained, then resumed, once scontrol works again. A drain that is there already,
    with joblet's reason (after a restart), is left as it is: no update."""
    d, node = slurm_node(retry_s=1)
    node.behave("nostate")
    d.rnx("gpu", "offline", "0", check=True)
    node.wait(lambda: "slurm node n1: scontrol show node said no State= (\"slurm_load_node: something else entirely"
              in d.log(), "the answer without State= recorded")
    assert "tried again in 1 s" in d.log() and node.updates() == []
    node.behave("")
    node.wait(lambda: node.state()["state"] == "IDLE+DRAIN", "drained on a retry")
    reason = node.state()["reason"]
    assert reason == "joblet: GPU 0 offline: taken offline by uid 0", reason
    # restarted: the GPU is still offline, the node drained with joblet's very reason
    n = len(node.updates())
    d.stop()
    d.start()
    node.wait(lambda: "slurm node n1: already drained with joblet's reason" in d.log(), "the drain found as it is")
    assert len(node.updates()) == n and node.state()["reason"] == reason
    sc = node.d / "scontrol"
    os.chmod(sc, 0o644)
    try:
        d.rnx("gpu", "online", "0", check=True)
        node.wait(lambda: f"slurm node n1: {sc} could not start: Permission denied; tried again in 1 s" in d.log(),
                  "the failed start recorded")
        assert node.state()["state"] == "IDLE+DRAIN"
    finally:
        os.chmod(sc, 0o755)
    node.wait(lambda: node.state()["state"] == "IDLE", "resumed on a retry")
    code, a = d.api("GET", "/v1/audit")
    details = [r["detail"] for r in a["records"] if r["action"] == "slurm"]
    assert any("could not start" in x for x in details) and any("said no State=" in x for x in details), details


def test_bad_slurm_configuration_names_the_key(fresh_daemon):
    for text, msg in [("slurm:\n  node_name: \"a b\"\n", "slurm.node_name: 'a b' must be a Slurm node name"),
                      ("slurm:\n  drain: maybe\n", "slurm.drain: 'maybe' must be auto, true or false"),
                      ("slurm:\n  timeout_s: 0\n", "slurm.timeout_s: '0' must be a whole number from 1 to 600")]:
        d = fresh_daemon(text, start=False)
        with pytest.raises(RuntimeError) as e:
            d.start()
        assert msg in str(e.value), str(e.value)


def test_real_slurm_node_drained_and_resumed(sim, tmp_path):
    """The same against Slurm 22.05 itself (tests/integration/slurm_cluster.py: munged,
    slurmctld, slurmd node1 and node2 on this host): joblet on node1's simulated GPUs drains
    node1 through the real scontrol with its reason, resumes it, and leaves an admin's drain
    as it is."""
    from slurm_cluster import SlurmCluster, which
    with SlurmCluster() as c:
        sc = tmp_path / "scontrol-real"
        sc.write_text(f"#!/bin/sh\nSLURM_CONF={c.conf} exec {which('scontrol')} \"$@\"\n")
        os.chmod(sc, 0o755)
        d = sim("a100-pcie-4", (2, 32, 2), f"slurm:\n  node_name: node1\n  scontrol: {sc}\n")

        def node1():
            out = c.run(["scontrol", "show", "node", "node1"], check=True).stdout
            state = re.search(r"\bState=(\S+)", out).group(1)
            reason = re.search(r"^\s*Reason=(.*?)(?: \[[^]]*\])?$", out, re.M)
            return state, reason.group(1) if reason else ""

        def wait(cond, what):
            deadline = time.time() + 30
            while time.time() < deadline and not cond(node1()):
                time.sleep(0.1)
            assert cond(node1()), f"{what}: node1 is {node1()}\n{d.log()[-2000:]}"

        try:
            d.rnx("gpu", "drain", "3", check=True)
            wait(lambda n: "DRAIN" in n[0] and n[1] == "joblet: GPU 3 draining: drained by uid 0", "drained")
            assert "DRAIN" not in c.run(["scontrol", "show", "node", "node2"], check=True).stdout
            d.rnx("gpu", "online", "3", check=True)
            wait(lambda n: "DRAIN" not in n[0], "resumed")
            # an admin's drain stays, whatever the GPUs do
            c.run(["scontrol", "update", "NodeName=node1", "State=DRAIN", "Reason=new PSU"], check=True)
            for cmd, said in (("offline", 'already drained for another reason ("new PSU")'),
                              ("online", 'the node stays drained: its reason ("new PSU") is not joblet\'s')):
                d.rnx("gpu", cmd, "1", check=True)
                deadline = time.time() + 30
                while time.time() < deadline and said not in d.log():
                    time.sleep(0.1)
                assert said in d.log(), d.log()[-2000:]
                state, reason = node1()
                assert "DRAIN" in state and reason == "new PSU", node1()
        finally:
            d.stop()  # before the cluster goes


@pytest.mark.parametrize("name,topo", [("dgx-h100", (2, 56, 2)), ("dgx1-v100", (2, 20, 2)),
                                       ("a100-pcie-4", (2, 32, 2))])
def test_the_test_cluster_starts_with_the_gres_conf(sim, name, topo):
    """The test Slurm cluster (slurm_cluster.py) starts with `rnx gpu gres-conf`'s lines as
    node1's whole gres.conf and `--format=slurm.conf`'s Gres= in its slurm.conf: node1's slurmd
    (hwloc shown the fixture's topology, HWLOC_SYNTHETIC) registers with every GPU, and a step
    on node1 gets the GPUs by Type and File= order."""
    from slurm_cluster import NODE_MEM_MB, SlurmCluster, cannot_run
    why = cannot_run()
    if why:
        pytest.skip(why)
    d = sim(name, topo)
    conf = d.rnx("gpu", "gres-conf", "--node-name=node1", check=True).stdout
    gres = d.rnx("gpu", "gres-conf", "--node-name=node1", "--format=slurm.conf", check=True).stdout.split()[1]
    sockets, cores, threads = topo
    n = sockets * cores
    idx = ",".join(str(t * n + p * cores + c) for p in range(sockets) for c in range(cores) for t in range(threads))
    ngpus = len(re.findall(r"^NodeName=node1 Name=gpu ", conf, re.M))
    with SlurmCluster(gres_conf=conf,
                      node_conf={"node1": f"CPUs={n * threads} Sockets={sockets} CoresPerSocket={cores} "
                                          f"ThreadsPerCore={threads} RealMemory={NODE_MEM_MB} {gres}",
                                 "node2": f"CPUs=2 RealMemory={NODE_MEM_MB}"},
                      slurmd_env={"node1": {"HWLOC_SYNTHETIC": f"pack:{sockets} core:{cores} pu:{threads}"
                                                               f"(indexes={idx})"}}) as c:
        shown = c.run(["scontrol", "show", "node", "node1"], check=True).stdout
        # registered IDLE with every GPU, bound to the sockets of their cores (S:...)
        assert re.search(rf"\bGres={re.escape(gres.split('=', 1)[1])}\(S:[0-9,-]+\)", shown), (gres, shown)
        assert re.search(r"\bState=IDLE\b", shown) and f":{ngpus}(" in shown, shown
        typ = re.search(r"Type=(\S+)", conf).group(1)
        p = c.run(["srun", "-w", "node1", "-n1", f"--gres=gpu:{typ}:2", "printenv", "SLURM_STEP_GPUS"])
        assert p.returncode == 0, (p.stdout, p.stderr)
        a, b = (int(x) for x in p.stdout.split(","))
        # Slurm read Links=: the two GPUs it gave are as well connected as any pair with the first
        # (DGX-1: 0 and 3, two NVLinks; a plain 0,1 would have one)
        links = [[int(x) for x in row.split(",")] for row in re.findall(r"Links=(\S+)", conf)]
        assert links[a][b] == max(links[a]), (a, b, links[a])
