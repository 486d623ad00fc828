"""GPU discovery: every backend against every fixture machine, the fake NVML's injected
errors, and what the daemon and rnx show. No GPU is needed: the NVML backend runs its real
code against tests/fakes' libnvidia-ml.so.1, the /proc backend against fixture trees, the
smi backend against the fake nvidia-smi (tests/fixtures/README.md)."""
import atexit
import json
import shutil
import os
import re
import subprocess
import tempfile

import pytest

from conftest import BUILD, ROOT

FIX = os.path.join(ROOT, "tests", "fixtures")
FAKE_SMI = os.path.join(ROOT, "tests", "fakes", "nvidia-smi")
FAKE_LIB_DIR = os.path.join(BUILD, "tests", "fakes")
MACHINES = ["dgx-h100", "dgx1-v100", "a100-pcie-4", "a100-mig", "mixed"]
BACKENDS = ["nvml", "proc", "smi", "fixture"]

# Fields every backend must report (non-null) for every GPU, and those only some can see.
COMMON = {"index", "minor", "uuid", "bus_id", "name", "compute_capability", "numa_node", "local_cpus",
          "pcie_levels"}
REQUIRED = {
    "nvml": COMMON | {"memory_total_mb", "memory_used_mb", "temperature_c", "utilization_pct", "power_w",
                      "nvlinks", "nvlink_peers"},
    "proc": COMMON | {"vbios"},
    "smi": COMMON | {"vbios", "memory_total_mb", "memory_used_mb", "temperature_c", "utilization_pct",
                     "power_w", "nvlink_peers"},
    "fixture": COMMON | {"vbios", "memory_total_mb", "memory_used_mb", "temperature_c", "utilization_pct",
                         "power_w", "nvlinks", "nvlink_peers"},
}
GPU_FIELDS = ["index", "minor", "uuid", "bus_id", "name", "vbios", "memory_total_mb", "memory_used_mb",
              "compute_capability", "numa_node", "local_cpus", "local_cores", "ecc_enabled", "mig_enabled", "temperature_c",
              "utilization_pct", "power_w", "nvlinks", "nvlink_peers", "pcie_levels"]
MIG_FIELDS = ["gi", "ci", "profile", "uuid", "memory_mb", "gi_cap_minor", "ci_cap_minor"]


def fake_lib(variant=""):
    return os.path.join(FAKE_LIB_DIR, f"libnvidia-ml{variant}.so.1")


_EMPTY = []


def empty_dir():
    """One empty directory for the whole module (removed at exit): no host CUDA toolkit leaks
    into results."""
    if not _EMPTY:
        _EMPTY.append(tempfile.mkdtemp(prefix="joblet-cuda-"))
        atexit.register(shutil.rmtree, _EMPTY[0], True)
    return _EMPTY[0]


def gpu_config(machine, backend=None, lib=None, fixture=False, extra=""):
    m = os.path.join(FIX, machine)
    empty = empty_dir()
    text = (f"gpu:\n  nvml_library: {lib or fake_lib()}\n  nvidia_smi: {FAKE_SMI}\n"
            f"  proc_root: {m}/proc\n  sys_root: {m}/sys\n  cuda_search_root: {empty}\n")
    if fixture:
        text += f"  fixture: {m}/machine.json\n"
    if backend and backend != "fixture":
        text += f"  backends: [{backend}]\n"
    return text + extra


def machine_env(machine, **extra):
    m = os.path.join(FIX, machine)
    return {"FAKE_NVML_FIXTURE": f"{m}/machine.json", "FAKE_SMI_DIR": f"{m}/smi", **extra}


def probe(machine, backend=None, lib=None, env=None, fixture=False):
    """joblet --probe-gpus[=backend] with the machine's fake paths; returns (rc, json, stderr)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        f.write(gpu_config(machine, lib=lib, fixture=fixture or backend == "fixture"))
        cfg = f.name
    try:
        arg = "--probe-gpus" + (f"={backend}" if backend else "")
        e = {"PATH": "/usr/bin:/bin", **machine_env(machine), **(env or {}),
             **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}}
        p = subprocess.run([os.path.join(BUILD, "joblet"), "--config", cfg, arg], capture_output=True, text=True,
                           timeout=60, env=e)
    finally:
        os.unlink(cfg)
    assert "runtime error:" not in p.stderr and "AddressSanitizer" not in p.stderr, p.stderr
    return p.returncode, json.loads(p.stdout), p.stderr


def machine(name):
    with open(os.path.join(FIX, name, "machine.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module", autouse=True)
def built():
    if not os.path.exists(fake_lib()):
        pytest.fail(f"{fake_lib()} is missing: the fake NVML is part of the build")


# -- 1. the backends agree ----------------------------------------------------------------------

@pytest.mark.parametrize("name", MACHINES)
def test_backends_agree_field_by_field(name):
    results = {}
    for b in BACKENDS:
        rc, inv, err = probe(name, b)
        assert rc == 0, f"{b} on {name}: {inv.get('attempts')}\n{err}"
        assert inv["backend"] == b
        assert inv["simulated"] == (b == "fixture")
        results[b] = inv
    want = machine(name)
    n = len(want["gpus"])
    for b, inv in results.items():
        assert len(inv["gpus"]) == n, b
        assert inv["driver_version"] == want["driver_version"], b
        cv = want["cuda_driver_version"]
        assert inv["cuda_driver_version"] == f"{cv // 1000}.{cv % 1000 // 10}", b
        for g in inv["gpus"]:
            # a GPU in MIG mode has no whole-GPU utilization (NVML: Not Supported, smi: [N/A])
            missing = [f for f in REQUIRED[b] if g[f] is None and not (f == "utilization_pct" and g["mig_enabled"])]
            assert not missing, f"{b} on {name}: GPU {g['index']} lacks {missing}"
    compared = 0
    for a in BACKENDS:
        for b in BACKENDS:
            if a >= b:
                continue
            for ga, gb in zip(results[a]["gpus"], results[b]["gpus"]):
                for f in GPU_FIELDS:
                    va, vb = ga[f], gb[f]
                    if va is None or vb is None:
                        continue
                    if f in ("nvlink_peers", "pcie_levels"):  # pair by pair; null = cannot tell
                        va, vb = zip(*[(x, y) for x, y in zip(va, vb) if x is not None and y is not None])
                    assert va == vb, f"{name}: {a} and {b} disagree on GPU {ga['index']} {f}: {va} != {vb}"
                    compared += 1
                assert len(ga["mig"]) == len(gb["mig"]), f"{name}: {a}/{b} MIG devices of GPU {ga['index']}"
                for ma, mb in zip(ga["mig"], gb["mig"]):
                    for f in MIG_FIELDS:
                        if ma[f] is not None and mb[f] is not None:
                            assert ma[f] == mb[f], f"{name}: {a}/{b} MIG {f}: {ma[f]} != {mb[f]}"
                            compared += 1
    assert compared > 100 * n // 8


@pytest.mark.parametrize("name", MACHINES)
def test_inventory_matches_the_machine(name):
    """Against the description itself, so agreeing on a wrong answer cannot pass."""
    rc, inv, _ = probe(name, "nvml")
    assert rc == 0
    want = sorted(machine(name)["gpus"], key=lambda g: g["bus_id"])
    for g, w in zip(inv["gpus"], want):
        assert (g["uuid"], g["minor"], g["bus_id"], g["name"]) == (w["uuid"], w["minor"], w["bus_id"], w["name"])
        assert g["memory_total_mb"] == w["memory_total_mb"]
        assert g["compute_capability"] == w["compute_capability"]
        assert g["numa_node"] == w["numa_node"]
        assert [(m["gi"], m["ci"], m["profile"], m["uuid"]) for m in g["mig"]] == \
            [(m["gi"], m["ci"], m["profile"], m["uuid"]) for m in w.get("mig", [])]
        for m in g["mig"]:  # the driver's layout of capability minors
            assert m["gi_cap_minor"] == 3 + 135 * g["minor"] + 9 * m["gi"]
            assert m["ci_cap_minor"] == m["gi_cap_minor"] + 1 + m["ci"]


def test_dgx1_cube_mesh_links():
    rc, inv, _ = probe("dgx1-v100", "nvml")
    assert rc == 0
    want = [[0, 1, 1, 2, 2, 0, 0, 0],
            [1, 0, 2, 1, 0, 2, 0, 0],
            [1, 2, 0, 2, 0, 0, 1, 0],
            [2, 1, 2, 0, 0, 0, 0, 1],
            [2, 0, 0, 0, 0, 1, 1, 2],
            [0, 2, 0, 0, 1, 0, 2, 1],
            [0, 0, 1, 0, 1, 2, 0, 2],
            [0, 0, 0, 1, 2, 1, 2, 0]]
    assert [g["nvlink_peers"] for g in inv["gpus"]] == want
    assert all(g["pcie_levels"][i] == "X" for i, g in enumerate(inv["gpus"]))
    # across sockets is SYS whatever the links
    assert inv["gpus"][0]["pcie_levels"][7] == "SYS"


def test_dgx_h100_nvswitch_every_pair_alike():
    rc, inv, _ = probe("dgx-h100", "nvml")
    assert rc == 0
    for i, g in enumerate(inv["gpus"]):
        assert [c for j, c in enumerate(g["nvlink_peers"]) if j != i] == [18] * 7
        assert all(l["remote_type"] == "switch" and l["active"] for l in g["nvlinks"])


def test_a100_pcie_bridge_pairs_and_minors():
    rc, inv, _ = probe("a100-pcie-4", "nvml")
    assert rc == 0
    peers = [g["nvlink_peers"] for g in inv["gpus"]]
    assert peers[0][1] == peers[1][0] == 12 and peers[2][3] == 12
    assert peers[0][2] == peers[1][3] == 0
    assert inv["gpus"][0]["pcie_levels"][2] == "SYS"
    want = sorted(machine("a100-pcie-4")["gpus"], key=lambda g: g["bus_id"])
    assert [g["minor"] for g in inv["gpus"]] == [w["minor"] for w in want]


# -- machines without GPUs, and broken ones ----------------------------------------------------

def test_probe_gpus_refuses_an_unknown_backend_naming_all_four(tmp_path):
    """`joblet --probe-gpus=BACKEND` takes nvml, proc, smi or fixture (its --help); an unknown one
    is refused with those four, not with gpu.backends' three and 'simulation is gpu.fixture'."""
    cfg = tmp_path / "joblet.yml"
    cfg.write_text(gpu_config("dgx-h100", fixture=True))
    p = subprocess.run([os.path.join(BUILD, "joblet"), "--config", str(cfg), "--probe-gpus=bogus"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == "joblet: --probe-gpus: 'bogus' is not a backend; use nvml, proc, smi or fixture\n", p.stderr


def test_no_gpu_machine_every_backend_says_why():
    rc, inv, _ = probe("no-gpu")
    assert rc == 1 and inv["gpus"] == [] and inv["backend"] == "none"
    errs = {a["backend"]: a["error"] for a in inv["attempts"]}
    assert set(errs) == {"nvml", "proc", "smi"}
    assert "nvmlInit_v2" in errs["nvml"]
    assert "not loaded" in errs["proc"]
    assert "couldn't communicate with the NVIDIA driver" in errs["smi"]


def test_broken_driver_falls_back_to_proc():
    rc, inv, _ = probe("broken-driver")
    assert rc == 0 and inv["backend"] == "proc"
    assert "nvmlInit_v2: Driver Not Loaded" in inv["attempts"][0]["error"]
    assert len(inv["gpus"]) == len(machine("broken-driver")["gpus"])
    assert all(g["memory_total_mb"] is None for g in inv["gpus"])  # unknown, not invented


# -- 2. the fake NVML's injected errors --------------------------------------------------------

def test_injected_init_failure_falls_back_to_proc():
    rc, inv, _ = probe("dgx-h100", env={"FAKE_NVML_FAIL": "nvmlInit_v2=NVML_ERROR_DRIVER_NOT_LOADED"})
    assert rc == 0 and inv["backend"] == "proc"
    assert inv["attempts"][0] == {**inv["attempts"][0], "backend": "nvml",
                                  "error": "NVML: nvmlInit_v2: Driver Not Loaded"}
    assert len(inv["gpus"]) == 8


def test_injected_failure_on_one_device_marks_only_that_gpu():
    rc, inv, err = probe("dgx-h100", "nvml", env={"FAKE_NVML_FAIL": "nvmlDeviceGetMemoryInfo@3=NVML_ERROR_GPU_IS_LOST"})
    assert rc == 0 and inv["backend"] == "nvml"
    problems = [g["problem"] for g in inv["gpus"]]
    assert problems[3] == "NVML nvmlDeviceGetMemoryInfo: GPU is lost"
    assert problems[:3] + problems[4:] == [None] * 7
    assert inv["gpus"][3]["memory_total_mb"] is None
    assert "nvmlDeviceGetMemoryInfo(GPU 3 " in err


def test_injected_identity_failure_fails_the_backend():
    rc, inv, _ = probe("dgx-h100", env={"FAKE_NVML_FAIL": "nvmlDeviceGetUUID@2=NVML_ERROR_UNKNOWN"})
    assert rc == 0 and inv["backend"] == "proc"
    assert re.match(r"NVML: nvmlDeviceGetUUID\(GPU 2 0000:[0-9a-f:.]+\): Unknown Error", inv["attempts"][0]["error"])


def test_optional_symbol_missing_uses_sysfs():
    """An older driver without nvmlDeviceGetNumaNodeId: NUMA comes from sysfs, same answer."""
    rc, legacy, _ = probe("dgx-h100", "nvml", lib=fake_lib("-legacy"))
    rc2, full, _ = probe("dgx-h100", "nvml")
    assert rc == rc2 == 0
    assert [g["numa_node"] for g in legacy["gpus"]] == [g["numa_node"] for g in full["gpus"]] == [0] * 4 + [1] * 4


def test_required_symbol_missing_names_it_and_falls_back():
    rc, inv, _ = probe("dgx-h100", lib=fake_lib("-nouuid"))
    assert rc == 0 and inv["backend"] == "proc"
    assert "does not export nvmlDeviceGetUUID" in inv["attempts"][0]["error"]


def test_missing_library_names_the_path():
    rc, inv, _ = probe("dgx-h100", "nvml", lib="/nonexistent/libnvidia-ml.so.1")
    assert rc == 1
    assert "cannot load /nonexistent/libnvidia-ml.so.1" in inv["attempts"][0]["error"]


# -- CUDA installations -------------------------------------------------------------------------

def test_cuda_toolkits_found_with_versions_and_compatibility(tmp_path):
    root = tmp_path / "root"
    for ver, layout in [("12.2.140", "json"), ("12.4.1", "json"), ("13.0.0", "json"), ("11.8", "dir")]:
        d = root / "usr" / "local" / f"cuda-{'.'.join(ver.split('.')[:2])}"
        d.mkdir(parents=True)
        if layout == "json":
            (d / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": ver}}))
    os.symlink("cuda-12.2", root / "usr" / "local" / "cuda")
    extra = tmp_path / "opt-cuda-10"
    extra.mkdir()
    (extra / "version.txt").write_text("CUDA Version 10.2.89\n")
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        f.write(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  cuda_search_root: {root}\n"
                f"  cuda_paths: [{extra}]\n")
    p = subprocess.run([os.path.join(BUILD, "joblet"), "--config", f.name, "--probe-gpus"], capture_output=True,
                       text=True, timeout=60)
    os.unlink(f.name)
    cuda = {c["path"]: c for c in json.loads(p.stdout)["cuda_installations"]}
    top = str(root / "usr" / "local")
    # /usr/local/cuda is a link to cuda-12.2: listed once, under its standard name
    assert set(cuda) == {f"{top}/cuda", f"{top}/cuda-11.8", f"{top}/cuda-12.4", f"{top}/cuda-13.0", str(extra)}
    assert cuda[f"{top}/cuda"]["real_path"] == f"{top}/cuda-12.2"
    # the fixture's driver 535.129.03 supports CUDA 12.2
    assert (cuda[f"{top}/cuda"]["version"], cuda[f"{top}/cuda"]["compatibility"]) == ("12.2.140", "ok")
    assert cuda[f"{top}/cuda-12.4"]["compatibility"] == "minor-version"
    assert cuda[f"{top}/cuda-13.0"]["compatibility"] == "too-new"
    assert cuda[f"{top}/cuda-13.0"]["min_driver"] == "580.65.06"
    assert (cuda[f"{top}/cuda-11.8"]["version"], cuda[f"{top}/cuda-11.8"]["compatibility"]) == ("11.8", "ok")
    assert (cuda[str(extra)]["version"], cuda[str(extra)]["compatibility"]) == ("10.2.89", "ok")


# -- 3. the daemon and rnx ----------------------------------------------------------------------

def gpu_daemon(fresh_daemon, name, **kw):
    return fresh_daemon(gpu_config(name, **kw), env=machine_env(name))


def test_daemon_logs_one_line_per_gpu_and_the_backend(fresh_daemon):
    d = gpu_daemon(fresh_daemon, "dgx1-v100")
    log = d.log()
    assert "8 GPUs found by the nvml backend" in log
    for g in machine("dgx1-v100")["gpus"]:
        line = next(l for l in log.splitlines() if g["uuid"] in l)
        assert f"minor {g['minor']} bus {g['bus_id']} numa {g['numa_node']}" in line
        assert "6 NVLinks" in line


def test_rnx_gpu_list_and_show(fresh_daemon):
    d = gpu_daemon(fresh_daemon, "mixed")
    p = d.rnx("gpu", "list", check=True)
    assert "SIMULATED" not in p.stdout
    want = sorted(machine("mixed")["gpus"], key=lambda g: g["bus_id"])
    rows = [l for l in p.stdout.splitlines() if re.match(r"^\d+\s\s", l)]
    assert len(rows) == 4
    for row, g in zip(rows, want):
        assert g["name"] in row and f"{g['memory_used_mb']} / {g['memory_total_mb']} MiB" in row
        assert f"{g['temperature_c']}C" in row and "available" in row
    p = d.rnx("gpu", "show", want[2]["uuid"], check=True)
    assert f"Compute capability:  {want[2]['compute_capability']}" in p.stdout
    assert f"/dev/nvidia{want[2]['minor']}" in p.stdout
    p = d.rnx("gpu", "show", "7")
    assert p.returncode == 1 and "no GPU '7'" in p.stderr
    for sloppy in ("+1", " 1", "01x"):  # an index is digits only
        p = d.rnx("gpu", "show", sloppy)
        assert p.returncode == 1 and f"no GPU '{sloppy}'" in p.stderr, (sloppy, p.stderr)
    p = d.rnx("gpu", "show")
    assert p.returncode == 2


def test_rnx_gpu_topo_matches_cube_mesh(fresh_daemon):
    d = gpu_daemon(fresh_daemon, "dgx1-v100")
    p = d.rnx("gpu", "topo", check=True)
    lines = [l.split() for l in p.stdout.splitlines() if re.match(r"^GPU\d", l)]
    cells = [row[1:9] for row in lines]
    assert cells[0] == ["X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"]
    assert cells[5] == ["SYS", "NV2", "SYS", "SYS", "NV1", "X", "NV2", "NV1"]
    assert cells[7] == ["SYS", "SYS", "SYS", "NV1", "NV2", "NV1", "NV2", "X"]
    assert lines[0][9] == "0-19,40-59" and lines[0][10] == "0"
    assert lines[4][9] == "20-39,60-79" and lines[4][10] == "1"
    assert "Legend:" in p.stdout


def test_gpu_json_schema(fresh_daemon):
    """The documented schema (docs/api.md, GPUs): keys and types of every object."""
    d = gpu_daemon(fresh_daemon, "a100-mig")
    inv = json.loads(d.rnx("gpu", "list", "--json", check=True).stdout)
    assert set(inv) == {"enabled", "backend", "simulated", "driver_version", "cuda_driver_version", "discovery_ms",
                        "gpus", "attempts", "cuda_installations", "gvisor", "slurm", "dev_root"}
    assert set(inv["gvisor"]) <= {"available", "nvproxy", "runsc_version"}
    assert set(inv["slurm"]) == {"node_name", "drains_node"} and inv["slurm"]["drains_node"] is False
    g = inv["gpus"][0]
    # "health" appears once the monitor has sampled the GPU (docs/api.md)
    assert set(g) - {"health"} == set(GPU_FIELDS) | {"mig", "simulated", "problem", "state", "job", "takes_jobs"}
    assert g["mig_enabled"] is True and len(g["mig"]) == 3
    assert set(g["mig"][0]) == set(MIG_FIELDS)
    one = json.loads(d.rnx("gpu", "show", "--json", "0", check=True).stdout)
    # the health monitor may sample between the two answers: its keys are the same, its figures
    # the later sample's (the sanitizer pass's CI saw one come in between)
    assert set(one.get("health", g.get("health", {}))) == set(g.get("health", one.get("health", {})))
    sampled = {"health", "temperature_c", "utilization_pct", "memory_used_mb", "power_w"}  # (docs/api.md)
    assert {k: v for k, v in one.items() if k not in sampled} == {k: v for k, v in g.items() if k not in sampled}
    assert set(one) == set(g) | ({"health"} if "health" in one else set()), (set(one), set(g))
    topo = json.loads(d.rnx("gpu", "topo", "--json", check=True).stdout)
    assert set(topo) == {"simulated", "backend", "nvlink", "pcie", "affinity"}
    assert topo["pcie"] == [["X"]]


def test_gpu_request_without_gpus_is_refused(fresh_daemon):
    d = gpu_daemon(fresh_daemon, "no-gpu")
    before = d.job_count()
    p = d.rnx("job", "run", "--gpu=1", "true")
    assert p.returncode == 1
    assert "--gpu: No GPUs available" in p.stderr
    assert "nvidia-smi" in p.stderr and "gpu.enabled" in p.stderr
    assert d.job_count() == before
    p = d.rnx("gpu", "list", check=True)
    assert "No GPUs available." in p.stdout


def test_gpu_support_off_by_configuration(fresh_daemon):
    d = gpu_daemon(fresh_daemon, "dgx-h100", extra="  enabled: false\n")
    inv = json.loads(d.rnx("gpu", "list", "--json", check=True).stdout)
    assert inv["enabled"] is False and inv["gpus"] == []
    p = d.rnx("job", "run", "--gpu=1", "true")
    assert p.returncode == 1 and "disabled by gpu.enabled: false" in p.stderr


def test_bad_fixture_stops_the_daemon_with_the_reason(fresh_daemon, tmp_path):
    bad = tmp_path / "m.json"
    bad.write_text('{"gpus": [{"uuid": "GPU-1", "name": "X", "bus_id": "nonsense", "minor": 0}]}')
    d = fresh_daemon(f"gpu:\n  fixture: {bad}\n", start=False)
    with pytest.raises(RuntimeError) as e:
        d.start()
    assert "bus_id: 'nonsense' is not a PCI address" in str(e.value)
    bad.write_text('{"gpus": [], "cpus": 3}')
    d2 = fresh_daemon(f"gpu:\n  fixture: {bad}\n", start=False)
    with pytest.raises(RuntimeError) as e:
        d2.start()
    assert "cpus" in str(e.value)
    # a file that is not there: the reason alone, not "line -1 column -1" (docs/config.md)
    d3 = fresh_daemon(f"gpu:\n  fixture: {tmp_path / 'gone.json'}\n", start=False)
    with pytest.raises(RuntimeError) as e:
        d3.start()
    assert f"gpu.fixture: unable to open {tmp_path / 'gone.json'}: No such file or directory" in str(e.value)
    assert "line -1" not in str(e.value)


def test_unknown_gpu_config_keys_are_refused(fresh_daemon):
    d = fresh_daemon("gpu:\n  backends: [nvml, cuda]\n", start=False)
    with pytest.raises(RuntimeError) as e:
        d.start()
    assert "'cuda' is not a backend; use nvml, proc or smi" in str(e.value)


def test_example_config_lists_valid_keys():
    """examples/joblet.yml documents every key with its default: it must load as it is."""
    p = subprocess.run([os.path.join(BUILD, "joblet"), "--config", os.path.join(ROOT, "examples", "joblet.yml"),
                        "--probe-gpus"], capture_output=True, text=True, timeout=60)
    assert p.returncode in (0, 1), p.stderr  # 1: no GPU on this machine, which is fine
    assert "joblet: " not in p.stderr, p.stderr


def test_example_config_shows_every_documented_key():
    """docs/config.md: "examples/joblet.yml lists every key with its default". 20 keys were
    missing (audit.*, network.*, remote.*, jobs.max_log_bytes, jobs.work_quota, ...)."""
    documented = set()
    with open(os.path.join(ROOT, "docs", "config.md")) as f:
        for line in f:
            if line.startswith("| `"):
                documented.update(re.findall(r"`([a-z_0-9]+(?:\.[a-z_0-9]+)?)`", line.split("|")[1]))
    shown, section = set(), None
    with open(os.path.join(ROOT, "examples", "joblet.yml")) as f:
        for line in f:
            m = re.match(r"^(?:# ?)?([a-z_0-9]+):", line)   # a section (or top-level key), set or commented
            if m:
                section = m.group(1)
                shown.add(section)
                continue
            m = re.match(r"^#?\s+(?:# ?)?([a-z_0-9]+):", line)
            if m and section:
                shown.add(f"{section}.{m.group(1)}")
    assert len(documented) > 90, documented
    assert documented <= shown, sorted(documented - shown)
