"""The GPU machine fixtures (tests/fixtures/*) and the fake nvidia-smi (tests/fakes/nvidia-smi).

Checks that the committed proc/ sys/ smi/ trees are what gen.py makes of machine.json, that each
machine.json is self-consistent (README.md's contract), that the generated views agree with the
README's PCIe and NVLink rules, and that the fake nvidia-smi answers exactly its commands.
Needs neither root nor the daemon.
"""
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
GEN = os.path.join(FIXTURES, "gen.py")
FAKE_SMI = os.path.join(ROOT, "tests", "fakes", "nvidia-smi")

ALL = ["dgx-h100", "dgx1-v100", "a100-pcie-4", "a100-mig", "mixed", "no-gpu", "broken-driver"]
FAILING = ["no-gpu", "broken-driver"]
WORKING = [n for n in ALL if n not in FAILING]

QUERY_FIELDS = ("index,pci.bus_id,uuid,name,memory.total,memory.used,utilization.gpu,"
                "temperature.gpu,power.draw,compute_cap,driver_version,mig.mode.current,"
                "ecc.mode.current,vbios_version")
SMI_FAIL = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.")

# nvidia-smi topo -m of a DGX-1 (Volta): hybrid cube-mesh, '.' = no NVLink
DGX1_MATRIX = """
     0   1   2   3   4   5   6   7
0    X  NV1 NV1 NV2 NV2  .   .   .
1   NV1  X  NV2 NV1  .  NV2  .   .
2   NV1 NV2  X  NV2  .   .  NV1  .
3   NV2 NV1 NV2  X   .   .   .  NV1
4   NV2  .   .   .   X  NV1 NV1 NV2
5    .  NV2  .   .  NV1  X  NV2 NV1
6    .   .  NV1  .  NV1 NV2  X  NV2
7    .   .   .  NV1 NV2 NV1 NV2  X
"""

UUID_RE = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
MIG_UUID_RE = re.compile(r"^MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
BDF_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def machine(name):
    with open(os.path.join(FIXTURES, name, "machine.json"), encoding="utf-8") as f:
        return json.load(f)


def read(name, rel):
    with open(os.path.join(FIXTURES, name, rel), encoding="utf-8") as f:
        return f.read()


def bdf_key(bdf):
    dom, bus, rest = bdf.split(":")
    dev, fn = rest.split(".")
    return (int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16))


# -- the README's rules, written out again independently of gen.py --------------------------

def hostbridge(g):
    dom, bus, _ = g["pci_path"][0].split(":")
    return f"pci{dom}:{bus}"


def pcie_level(a, b):
    if a is b:
        return "X"
    if hostbridge(a) != hostbridge(b):
        return "NODE" if a["numa_node"] == b["numa_node"] and a["numa_node"] >= 0 else "SYS"
    k = 0
    for x, y in zip(a["pci_path"], b["pci_path"]):
        if x != y:
            break
        k += 1
    if k == 0:
        return "PHB"
    return "PIX" if max(len(a["pci_path"]), len(b["pci_path"])) - k <= 1 else "PXB"


def gpu_links(a, b):
    return sum(1 for l in a["nvlinks"]
               if l["active"] and l["remote_type"] == "gpu" and l["remote_bus"] == b["bus_id"])


def nvlink(a, b):
    if a is b:
        return 0
    n = gpu_links(a, b)
    if n:
        return n
    sa = sum(1 for l in a["nvlinks"] if l["active"] and l["remote_type"] == "switch")
    sb = sum(1 for l in b["nvlinks"] if l["active"] and l["remote_type"] == "switch")
    return min(sa, sb) if sa and sb else 0


def parse_topo(text):
    """nvidia-smi topo -m text -> (header columns, {row name: [cells]})."""
    lines = text.split("\n")
    header = lines[0].split("\t")
    assert header[0] == "", "topo header starts with a tab"
    rows = {}
    for line in lines[1:]:
        if not line:
            break
        cells = line.split("\t")
        rows[cells[0]] = cells[1:]
    return header[1:], rows


def run_smi(name, *args, env_dir=True):
    env = {k: v for k, v in os.environ.items() if k != "FAKE_SMI_DIR"}
    if env_dir:
        env["FAKE_SMI_DIR"] = os.path.join(FIXTURES, name, "smi")
    return subprocess.run([FAKE_SMI, *args], env=env, capture_output=True, timeout=30)


# -- gen.py ----------------------------------------------------------------------------------

def test_generated_tree_is_up_to_date():
    r = subprocess.run([sys.executable, GEN, "--check"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_fixture_is_present():
    have = sorted(d for d in os.listdir(FIXTURES) if os.path.isfile(os.path.join(FIXTURES, d, "machine.json")))
    assert have == sorted(ALL)


def test_check_notices_drift(tmp_path):
    """--check must fail on an edited generated file; run against a copy of one fixture."""
    import shutil
    work = tmp_path / "fixtures"
    work.mkdir()
    shutil.copy(GEN, work / "gen.py")
    shutil.copytree(os.path.join(FIXTURES, "a100-mig"), work / "a100-mig", symlinks=True)
    ok = subprocess.run([sys.executable, str(work / "gen.py"), "--check"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    (work / "a100-mig" / "smi" / "L.txt").write_text("GPU 0: edited\n")
    link = work / "a100-mig" / "sys" / "bus" / "pci" / "devices" / "0000:41:00.0"
    link.unlink()
    link.symlink_to("../../../devices/elsewhere")
    (work / "a100-mig" / "proc" / "stray").write_text("x\n")
    bad = subprocess.run([sys.executable, str(work / "gen.py"), "--check"], capture_output=True, text=True)
    assert bad.returncode == 1
    assert "smi/L.txt" in bad.stderr
    assert "0000:41:00.0" in bad.stderr and "elsewhere" in bad.stderr
    assert "proc/stray" in bad.stderr


# -- machine.json ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_machine_json_well_formed(name):
    m = machine(name)
    assert isinstance(m["description"], str) and m["description"]
    gpus = m["gpus"]
    if m["driver_version"] is None:
        assert m["cuda_driver_version"] is None
    else:
        assert re.match(r"^\d+\.\d+(\.\d+)?$", m["driver_version"])
        assert isinstance(m["cuda_driver_version"], int) and m["cuda_driver_version"] % 10 == 0
    assert [g["index"] for g in gpus] == list(range(len(gpus)))
    assert [g["bus_id"] for g in gpus] == sorted((g["bus_id"] for g in gpus), key=bdf_key), \
        "NVML index order must be bus order"
    for key in ("bus_id", "uuid", "minor"):
        vals = [g[key] for g in gpus]
        assert len(set(vals)) == len(vals), f"duplicate {key}"
    for g in gpus:
        assert UUID_RE.match(g["uuid"]), g["uuid"]
        assert BDF_RE.match(g["bus_id"])
        assert g["pci_path"] and all(BDF_RE.match(b) for b in g["pci_path"])
        assert g["bus_id"] not in g["pci_path"]
        assert re.match(r"^0x[0-9a-f]{4}10de$", g["pci_device_id"])
        assert re.match(r"^\d+\.\d$", g["compute_capability"])
        assert 0 <= g["memory_used_mb"] <= g["memory_total_mb"]
        assert 0 <= g["utilization_pct"] <= 100
        assert isinstance(g["numa_node"], int) and g["numa_node"] >= -1
        assert re.match(r"^\d+(-\d+)?(,\d+(-\d+)?)*$", g["local_cpus"])
        assert g["mig_enabled"] in (True, False, None)
        if not g["mig_enabled"]:
            assert g["mig"] == []
        for d in g["mig"]:
            assert MIG_UUID_RE.match(d["uuid"])
            assert 0 <= d["gi"] <= 14 and 0 <= d["ci"] <= 7
            assert 0 < d["memory_mb"] <= g["memory_total_mb"]
        assert sorted(l["link"] for l in g["nvlinks"]) == list(range(len(g["nvlinks"])))
        buses = {x["bus_id"] for x in gpus}
        for l in g["nvlinks"]:
            assert l["remote_type"] in ("gpu", "switch")
            assert BDF_RE.match(l["remote_bus"])
            if l["remote_type"] == "gpu":
                assert l["remote_bus"] in buses and l["remote_bus"] != g["bus_id"]
    # NVLink symmetry: A->B link count equals B->A
    for a in gpus:
        for b in gpus:
            assert gpu_links(a, b) == gpu_links(b, a), (a["bus_id"], b["bus_id"])


def test_ids_unique_across_fixtures():
    uuids = []
    for name in ALL:
        for g in machine(name)["gpus"]:
            uuids.append(g["uuid"])
            uuids += [d["uuid"][4:] for d in g["mig"]]
    uuids = [u[4:] if u.startswith("GPU-") else u for u in uuids]
    assert len(set(uuids)) == len(uuids)


def test_dgx1_cube_mesh():
    gpus = machine("dgx1-v100")["gpus"]
    assert len(gpus) == 8
    rows = [l.split()[1:] for l in DGX1_MATRIX.strip().splitlines()[1:]]
    for i, a in enumerate(gpus):
        assert a["name"] == "Tesla V100-SXM2-16GB"
        assert a["mig_enabled"] is None
        assert len(a["nvlinks"]) == 6 and all(l["active"] and l["remote_type"] == "gpu" for l in a["nvlinks"])
        for j, b in enumerate(gpus):
            want = rows[i][j]
            got = "X" if i == j else (f"NV{nvlink(a, b)}" if nvlink(a, b) else ".")
            assert got == want, f"GPU{i}-GPU{j}"


def test_dgx_h100_all_nv18():
    gpus = machine("dgx-h100")["gpus"]
    assert len(gpus) == 8
    for a in gpus:
        assert a["name"] == "NVIDIA H100 80GB HBM3" and a["mig_enabled"] is False
        assert len(a["nvlinks"]) == 18
        assert all(l["active"] and l["remote_type"] == "switch" for l in a["nvlinks"])
        assert len(a["pci_path"]) == 3
        for b in gpus:
            if a is not b:
                assert nvlink(a, b) == 18
    # pairs share a PCIe switch
    for a, b in zip(gpus[0::2], gpus[1::2]):
        assert a["pci_path"][:2] == b["pci_path"][:2]


def test_a100_pcie_minor_differs_from_index():
    gpus = machine("a100-pcie-4")["gpus"]
    assert any(g["minor"] != g["index"] for g in gpus)
    assert all(len(g["pci_path"]) == 1 for g in gpus)


def test_failing_fixtures():
    m = machine("no-gpu")
    assert m["gpus"] == [] and m["driver_version"] is None
    assert m["nvml"]["init_error"] == "NVML_ERROR_LIBRARY_NOT_FOUND" and m["smi"]["fail"] is True
    m = machine("broken-driver")
    assert m["gpus"] and m["driver_version"]
    assert m["nvml"]["init_error"] == "NVML_ERROR_DRIVER_NOT_LOADED" and m["smi"]["fail"] is True


# -- generated views agree with machine.json and the README's rules -------------------------

@pytest.mark.parametrize("name", WORKING)
def test_topo_matrices_follow_the_rules(name):
    gpus = machine(name)["gpus"]
    for fname, with_nv in (("smi/topo-m.txt", True), ("smi/topo-mp.txt", False)):
        header, rows = parse_topo(read(name, fname))
        assert header == [f"GPU{g['index']}" for g in gpus] + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
        assert list(rows) == [f"GPU{g['index']}" for g in gpus]
        for a in gpus:
            cells = rows[f"GPU{a['index']}"]
            for b, cell in zip(gpus, cells):
                if a is b:
                    assert cell == " X "
                elif with_nv and nvlink(a, b):
                    assert cell == f"NV{nvlink(a, b)}"
                else:
                    assert cell == pcie_level(a, b), (fname, a["bus_id"], b["bus_id"])
            tail = cells[len(gpus):]
            numa = str(a["numa_node"]) if a["numa_node"] >= 0 else "N/A"
            assert tail == [a["local_cpus"], numa, "", "N/A"]
        assert "Legend:" in read(name, fname)


def test_dgx1_topo_text_matches_matrix():
    _, rows = parse_topo(read("dgx1-v100", "smi/topo-m.txt"))
    want = [l.split()[1:] for l in DGX1_MATRIX.strip().splitlines()[1:]]
    for i in range(8):
        got = [c.strip() for c in rows[f"GPU{i}"][:8]]
        assert [c if c.startswith("NV") or c == "X" else "." for c in got] == want[i]
        # non-NVLinked pairs are on the other socket
        assert all(c == "SYS" for c in got if not (c.startswith("NV") or c == "X"))
    _, rows = parse_topo(read("dgx1-v100", "smi/topo-mp.txt"))
    assert rows["GPU0"][:8] == [" X ", "PIX", "PHB", "PHB", "SYS", "SYS", "SYS", "SYS"]


@pytest.mark.parametrize("name", WORKING)
def test_smi_views_match_machine(name):
    m = machine(name)
    gpus = m["gpus"]
    assert read(name, "smi/query-gpu.fields") == QUERY_FIELDS + "\n"
    rows = [r.split(", ") for r in read(name, "smi/query-gpu.csv").splitlines()]
    assert len(rows) == len(gpus)
    for g, r in zip(gpus, rows):
        assert len(r) == len(QUERY_FIELDS.split(","))
        assert r[0] == str(g["index"])
        assert r[1].lower() == "0000" + g["bus_id"] and len(r[1].split(":")[0]) == 8
        assert r[2] == g["uuid"] and r[3] == g["name"]
        assert r[4] == str(g["memory_total_mb"]) and r[5] == str(g["memory_used_mb"])
        assert r[6] == ("[N/A]" if g["mig_enabled"] else str(g["utilization_pct"]))
        assert r[7] == str(g["temperature_c"]) and float(r[8]) == g["power_w"]
        assert r[9] == g["compute_capability"] and r[10] == m["driver_version"]
        assert r[11] == {None: "[N/A]", True: "Enabled", False: "Disabled"}[g["mig_enabled"]]
        assert r[12] == ("Enabled" if g["ecc_enabled"] else "Disabled")
        assert r[13].lower() == g["vbios"].lower()
    lines = read(name, "smi/L.txt").splitlines()
    want = []
    for g in gpus:
        want.append(f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})")
        for i, d in enumerate(g["mig"]):
            want.append(re.compile(r"^  MIG " + re.escape(d["profile"]) + r" +Device +%d: \(UUID: %s\)$"
                                   % (i, re.escape(d["uuid"]))))
    assert len(lines) == len(want)
    for line, w in zip(lines, want):
        assert (w.match(line) if hasattr(w, "match") else line == w), line
    q = read(name, "smi/q.txt")
    cuda = m["cuda_driver_version"]
    assert re.search(r"^Driver Version +: %s$" % re.escape(m["driver_version"]), q, re.M)
    assert re.search(r"^CUDA Version +: %d\.%d$" % (cuda // 1000, cuda % 1000 // 10), q, re.M)
    assert re.search(r"^Attached GPUs +: %d$" % len(gpus), q, re.M)
    sections = re.split(r"^GPU ([0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7])$", q, flags=re.M)[1:]
    assert len(sections) == 2 * len(gpus)
    for g, bus, body in zip(gpus, sections[0::2], sections[1::2]):
        assert bus.lower() == "0000" + g["bus_id"]
        assert f"    Product Name                          : {g['name']}\n" in body
        assert f"    GPU UUID                              : {g['uuid']}\n" in body
        assert f"    Minor Number                          : {g['minor']}\n" in body
        assert f"        Total                             : {g['memory_total_mb']} MiB\n" in body
        assert ("    MIG Devices\n" in body) == bool(g["mig"])
        for d in g["mig"]:
            assert f"            GPU Instance ID               : {d['gi']}\n" in body
            assert f"                Total                     : {d['memory_mb']} MiB\n" in body


@pytest.mark.parametrize("name", [n for n in ALL if machine(n)["driver_version"]])
def test_proc_views_match_machine(name):
    m = machine(name)
    assert f"Kernel Module  {m['driver_version']}  " in read(name, "proc/driver/nvidia/version")
    params = read(name, "proc/driver/nvidia/params")
    for line in ("ModifyDeviceFiles: 1", "DeviceFileUID: 0", "DeviceFileGID: 0", "DeviceFileMode: 438"):
        assert line + "\n" in params
    devices = read(name, "proc/devices")
    assert "195 nvidia-frontend\n" in devices and re.search(r"^\d+ nvidia-uvm$", devices, re.M)
    assert re.search(r"^\d+ nvidia-caps$", devices, re.M)
    for g in m["gpus"]:
        info = read(name, f"proc/driver/nvidia/gpus/{g['bus_id']}/information")
        assert f"Model: \t\t {g['name']}\n" in info
        assert f"GPU UUID: \t {g['uuid']}\n" in info
        assert f"Bus Location: \t {g['bus_id']}\n" in info
        assert f"Device Minor: \t {g['minor']}\n" in info
        assert info.endswith("GPU Excluded:\t No\n")
    minors = {}
    for line in read(name, "proc/driver/nvidia-caps/mig-minors").splitlines():
        key, val = line.split(" ")
        minors[key] = int(val)
    assert minors["config"] == 1 and minors["monitor"] == 2
    assert len(minors) == 2 + len(m["gpus"]) * 15 * 9
    for g in m["gpus"]:
        mn = g["minor"]
        for gi in range(15):
            assert minors[f"gpu{mn}/gi{gi}/access"] == 3 + 135 * mn + 9 * gi
            for ci in range(8):
                assert minors[f"gpu{mn}/gi{gi}/ci{ci}/access"] == 3 + 135 * mn + 9 * gi + 1 + ci
        caps = os.path.join(FIXTURES, name, "proc/driver/nvidia/capabilities", f"gpu{mn}")
        if not g["mig"]:
            assert not os.path.exists(caps)
        for d in g["mig"]:
            for rel, key in ((f"mig/gi{d['gi']}/access", f"gpu{mn}/gi{d['gi']}/access"),
                             (f"mig/gi{d['gi']}/ci{d['ci']}/access", f"gpu{mn}/gi{d['gi']}/ci{d['ci']}/access")):
                with open(os.path.join(caps, rel)) as f:
                    assert f.read() == f"DeviceFileMinor: {minors[key]}\nDeviceFileMode: 292\nDeviceFileModify: 1\n"


def test_no_gpu_has_no_driver_tree():
    base = os.path.join(FIXTURES, "no-gpu")
    assert not os.path.exists(os.path.join(base, "proc", "driver"))
    assert not os.path.exists(os.path.join(base, "sys"))
    assert "nvidia" not in read("no-gpu", "proc/devices")
    assert sorted(os.listdir(os.path.join(base, "smi"))) == ["query-gpu.fields"]


@pytest.mark.parametrize("name", [n for n in ALL if machine(n)["gpus"]])
def test_sysfs_tree(name):
    sysroot = os.path.join(FIXTURES, name, "sys")
    linkdir = os.path.join(sysroot, "bus", "pci", "devices")
    for g in machine(name)["gpus"]:
        chain = g["pci_path"] + [g["bus_id"]]
        expect = os.path.join("devices", hostbridge(g), *chain)
        for depth, bdf in enumerate(chain):
            link = os.path.join(linkdir, bdf)
            assert os.path.islink(link)
            target = os.readlink(link)
            assert target == "../../../" + os.path.join("devices", hostbridge(g), *chain[:depth + 1])
            real = os.path.realpath(link)
            assert os.path.isdir(real) and real.startswith(os.path.realpath(sysroot) + os.sep)
            with open(os.path.join(real, "class")) as f:
                cls = f.read()
            assert cls == ("0x060400\n" if bdf != g["bus_id"] else "0x030200\n")
        gdir = os.path.join(sysroot, expect)

        def cat(f):
            with open(os.path.join(gdir, f)) as fh:
                return fh.read()
        assert cat("vendor") == "0x10de\n"
        assert cat("device") == "0x" + g["pci_device_id"][2:6] + "\n"
        assert cat("numa_node") == f"{g['numa_node']}\n"
        assert cat("local_cpulist") == g["local_cpus"] + "\n"
        mask = cat("local_cpus").strip()
        assert re.match(r"^[0-9a-f]+(,[0-9a-f]{8})*$", mask)
        bits = int(mask.replace(",", ""), 16)
        cpus = set()
        for part in g["local_cpus"].split(","):
            lo, _, hi = part.partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
        assert bits == sum(1 << c for c in cpus)


# -- the fake nvidia-smi ---------------------------------------------------------------------

COMMANDS = [(["topo", "-m"], "topo-m.txt"), (["topo", "-mp"], "topo-mp.txt"),
            (["-q"], "q.txt"), (["-L"], "L.txt"),
            ([f"--query-gpu={QUERY_FIELDS}", "--format=csv,noheader,nounits"], "query-gpu.csv")]


@pytest.mark.parametrize("name", WORKING)
@pytest.mark.parametrize("args,fname", COMMANDS, ids=[c[1] for c in COMMANDS])
def test_fake_smi_answers_from_files(name, args, fname):
    r = run_smi(name, *args)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(FIXTURES, name, "smi", fname), "rb") as f:
        assert r.stdout == f.read()


@pytest.mark.parametrize("args", [
    ["--query-gpu=index,uuid", "--format=csv,noheader,nounits"],          # changed field list
    [f"--query-gpu={QUERY_FIELDS},serial", "--format=csv,noheader,nounits"],
    [f"--query-gpu={QUERY_FIELDS}", "--format=csv"],                      # other format
    [f"--query-gpu={QUERY_FIELDS}"],
    ["--query-compute-apps=pid", "--format=csv,noheader,nounits"],
    ["topo", "-p2p", "r"], ["-q", "-x"], ["-L", "-i", "0"], ["nvlink", "-s"], ["mig", "-lgi"], [],
])
def test_fake_smi_refuses_other_commands(args):
    r = run_smi("dgx-h100", *args)
    assert r.returncode == 2
    assert r.stdout == b"" and r.stderr


@pytest.mark.parametrize("name", FAILING)
@pytest.mark.parametrize("args,fname", COMMANDS, ids=[c[1] for c in COMMANDS])
def test_fake_smi_fails_without_driver(name, args, fname):
    r = run_smi(name, *args)
    assert r.returncode == 9
    assert r.stdout.decode().strip() == SMI_FAIL


def test_fake_smi_needs_fixture_dir():
    r = run_smi("dgx-h100", "-L", env_dir=False)
    assert r.returncode == 2 and b"FAKE_SMI_DIR" in r.stderr
