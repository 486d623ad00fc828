"""joblet-gpu-scrub (src/gpu/scrub_main.c) against the fake CUDA driver (tests/fakes/fake_cuda.c).

The fake simulates each fixture GPU's memory and appends every device-level action to
FAKE_CUDA_LOG; these tests read that log to prove that each GPU was scrubbed as the tool claims:
every byte allocated was set to 0 exactly once, together at least 90% of the GPU's free memory,
then synchronised, freed and the context destroyed, and that a failure on one GPU is reported
against that GPU without stopping the others. Needs neither root nor the daemon.
JOBLET_BUILD names the build directory (default: ./build); test_under_asan runs when it is build-asan.
"""
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("JOBLET_BUILD", os.path.join(ROOT, "build"))
ASAN_BUILD = os.path.join(ROOT, "build-asan")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
DGX = os.path.join(FIXTURES, "dgx-h100", "machine.json")
MiB = 1 << 20
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def tool(build=BUILD):
    return os.path.join(build, "joblet-gpu-scrub")


def fake_lib(build=BUILD):
    return os.path.join(build, "tests", "fakes", "libcuda.so.1")


def gpus(fixture=DGX):
    """[(uuid, free bytes)] in PCI bus order, as the fake numbers them."""
    with open(fixture) as f:
        machine = json.load(f)
    return [(g["uuid"], (g["memory_total_mb"] - g.get("memory_used_mb", 0)) * MiB)
            for g in sorted(machine["gpus"], key=lambda g: g["bus_id"])]


def run(tmp_path, args, fixture=DGX, fail=None, build=BUILD, lib=None, env=None):
    log = tmp_path / "cuda.log"
    log.unlink(missing_ok=True)
    full_env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "FAKE_NVML_FIXTURE": fixture,
                "FAKE_CUDA_LOG": str(log),
                **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}, **(env or {})}
    if fail:
        full_env["FAKE_CUDA_FAIL"] = fail
    cmd = [tool(build)] + (["--libcuda", lib or fake_lib(build)] if lib != "" else []) + list(args)
    p = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=60)
    p.log = parse_log(log)
    for mark in SANITIZER_MARKS:
        assert mark not in p.stderr, p.stderr
    return p


def parse_log(path):
    """The fake's log as {uuid: [(action, fields...), ...]} in order, plus a global sequence."""
    per_gpu = {}
    if not path.exists():
        return per_gpu
    for seq, line in enumerate(path.read_text().splitlines()):
        action, uuid, *rest = line.split()
        per_gpu.setdefault(uuid, []).append((seq, action, rest))
    return per_gpu


def actions(log, uuid, name):
    return [(seq, rest) for seq, action, rest in log.get(uuid, []) if action == name]


def stdout_lines(p):
    return {line.split(":", 1)[0]: line for line in p.stdout.splitlines()}


def stderr_lines(p):
    return {line.split(":", 1)[0]: line for line in p.stderr.splitlines()}


def check_released(log, uuid, freed=True, destroyed=True):
    """Everything this GPU's allocations took was given back, and its context destroyed."""
    allocs = {int(r[1], 16): int(r[0]) for _, r in actions(log, uuid, "alloc")}
    frees = [(int(r[1], 16), int(r[0])) for _, r in actions(log, uuid, "free")]
    if freed:
        assert sorted(frees) == sorted(allocs.items()), f"{uuid}: allocated {allocs}, freed {frees}"
    ctx, gone = actions(log, uuid, "ctx"), actions(log, uuid, "ctxdestroy")
    assert len(ctx) <= 1
    if destroyed:
        assert len(gone) == len(ctx), f"{uuid}: {len(ctx)} contexts created, {len(gone)} destroyed"


def check_scrubbed(p, uuid, free):
    """The stdout line is true: the memsets to 0 tile exactly the allocations, which cover at
    least 90% of the free memory, and came before the sync, which came before any free."""
    log = p.log
    assert len(actions(log, uuid, "ctx")) == 1, f"{uuid}: no context"
    allocs = sorted((int(r[1], 16), int(r[0])) for _, r in actions(log, uuid, "alloc"))
    memsets = sorted((int(r[2], 16), int(r[0])) for _, r in actions(log, uuid, "memset"))
    assert all(r[1] == "0" for _, r in actions(log, uuid, "memset")), f"{uuid}: a memset not to 0"
    # tile: each allocation is covered by back-to-back memsets, no gap, no overlap, no excess
    it = iter(memsets)
    for base, size in allocs:
        at = base
        while at < base + size:
            start, n = next(it)
            assert start == at, f"{uuid}: memset at {start:#x}, expected {at:#x}"
            at += n
        assert at == base + size, f"{uuid}: memsets overrun the allocation at {base:#x}"
    assert next(it, None) is None, f"{uuid}: memset outside the allocations"
    zeroed = sum(size for _, size in allocs)
    assert zeroed * 100 >= free * 90, f"{uuid}: {zeroed} of {free} bytes"
    assert zeroed <= free
    # order: every memset, then the sync, then the frees, then the context's end
    last_memset = max(seq for seq, _ in actions(log, uuid, "memset"))
    syncs = [seq for seq, _ in actions(log, uuid, "sync")]
    first_free = min(seq for seq, _ in actions(log, uuid, "free"))
    destroyed = [seq for seq, _ in actions(log, uuid, "ctxdestroy")]
    assert syncs and last_memset < syncs[-1] < first_free
    assert destroyed and destroyed[0] > max(seq for seq, _ in actions(log, uuid, "free"))
    check_released(log, uuid)
    assert stdout_lines(p)[uuid] == f"{uuid}: scrubbed {zeroed // MiB} MiB of {free // MiB} MiB free"


@pytest.fixture(autouse=True)
def built():
    for path in (tool(), fake_lib()):
        if not os.path.exists(path):
            pytest.skip(f"{path} is not built (ninja -C {BUILD})")


def test_scrubs_every_gpu(tmp_path):
    # CUDA_VISIBLE_DEVICES would hide all but GPU 0: the tool must clear it before cuInit
    machine = gpus()
    p = run(tmp_path, [u for u, _ in machine], env={"CUDA_VISIBLE_DEVICES": "0"})
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    assert list(stdout_lines(p)) == [u for u, _ in machine]
    for uuid, free in machine:
        check_scrubbed(p, uuid, free)


def test_scrubs_only_the_gpus_named(tmp_path):
    machine = gpus()
    named = [machine[4], machine[1]]  # one mostly used (13538 MiB free), one nearly empty
    p = run(tmp_path, [u for u, _ in named])
    assert p.returncode == 0, p.stderr
    for uuid, free in named:
        check_scrubbed(p, uuid, free)
    assert set(p.log) == {u for u, _ in named}


def test_uuid_in_any_letter_case(tmp_path):
    uuid, free = gpus()[0]
    p = run(tmp_path, ["GPU-" + uuid[4:].upper()])
    assert p.returncode == 0, p.stderr
    check_scrubbed(p, uuid, free)  # reported in the driver's (lower-case) spelling


def test_default_library_name(tmp_path):
    uuid, free = gpus()[0]
    p = run(tmp_path, [uuid], lib="", env={"LD_LIBRARY_PATH": os.path.dirname(fake_lib())})
    assert p.returncode == 0, p.stderr
    check_scrubbed(p, uuid, free)


# the call to fail on one GPU -> the error it fails with
FAILURES = {
    "cuCtxCreate_v2": "CUDA_ERROR_DEVICE_UNAVAILABLE",
    "cuMemGetInfo_v2": "CUDA_ERROR_UNKNOWN",
    "cuMemAlloc_v2": "CUDA_ERROR_ECC_UNCORRECTABLE",
    "cuMemsetD8_v2": "CUDA_ERROR_LAUNCH_FAILED",
    "cuCtxSynchronize": "CUDA_ERROR_ILLEGAL_ADDRESS",
    "cuMemFree_v2": "CUDA_ERROR_LAUNCH_FAILED",
    "cuCtxDestroy_v2": "CUDA_ERROR_UNKNOWN",
    "cuDeviceGetUuid_v2": "CUDA_ERROR_UNKNOWN",
}
TEXTS = {"CUDA_ERROR_LAUNCH_FAILED": "unspecified launch failure",
         "CUDA_ERROR_ILLEGAL_ADDRESS": "an illegal memory access was encountered",
         "CUDA_ERROR_ECC_UNCORRECTABLE": "uncorrectable ECC error encountered"}


@pytest.mark.parametrize("call", FAILURES)
def test_failure_on_one_gpu(tmp_path, call):
    machine = gpus()
    bad, _ = machine[2]
    error = FAILURES[call]
    p = run(tmp_path, [u for u, _ in machine], fail=f"{call}@{bad}={error}")
    assert p.returncode == 1
    assert bad not in stdout_lines(p)
    line = stderr_lines(p)[bad]
    assert call in line and error in line, line
    if error in TEXTS:
        assert TEXTS[error] in line, line
    assert len(p.stderr.splitlines()) == 1, p.stderr
    if call == "cuDeviceGetUuid_v2":  # a GPU that cannot be identified cannot be scrubbed
        assert line.startswith(f"{bad}: no CUDA device has this UUID (CUDA device 2: "), line
    for uuid, free in machine:
        if uuid != bad:
            check_scrubbed(p, uuid, free)
    # the failing GPU is left as it was found: nothing held, no context
    check_released(p.log, bad, freed=call != "cuMemFree_v2", destroyed=call != "cuCtxDestroy_v2")


def test_out_of_memory_everywhere_is_a_failure(tmp_path):
    # every allocation refused: nothing zeroed, so the 90% rule fails the GPU
    (uuid, free), (other, other_free) = gpus()[:2]
    p = run(tmp_path, [uuid, other], fail=f"cuMemAlloc_v2@{uuid}=CUDA_ERROR_OUT_OF_MEMORY")
    assert p.returncode == 1
    assert stderr_lines(p)[uuid] == f"{uuid}: scrubbed only 0 MiB of {free // MiB} MiB free (less than 90%)"
    check_released(p.log, uuid)
    check_scrubbed(p, other, other_free)


def test_unknown_uuid(tmp_path):
    uuid, free = gpus()[0]
    ghost = "GPU-00000000-1111-2222-3333-444444444444"
    p = run(tmp_path, [ghost, uuid])
    assert p.returncode == 1
    assert stderr_lines(p)[ghost] == f"{ghost}: no CUDA device has this UUID"
    check_scrubbed(p, uuid, free)
    assert set(p.log) == {uuid}


def test_driver_that_cannot_start(tmp_path):
    fixture = os.path.join(FIXTURES, "broken-driver", "machine.json")
    named = [u for u, _ in gpus(fixture)]
    p = run(tmp_path, named, fixture=fixture)
    assert p.returncode == 1
    assert p.stdout == ""
    for uuid in named:
        assert stderr_lines(p)[uuid] == (f"{uuid}: cuInit: CUDA_ERROR_NO_DEVICE (100): "
                                         "no CUDA-capable device is detected")


def test_missing_library(tmp_path):
    missing = str(tmp_path / "libcuda.so.1")
    p = run(tmp_path, [gpus()[0][0]], lib=missing)
    assert p.returncode == 2
    assert missing in p.stderr
    assert p.log == {}


def test_library_without_cuda_symbols(tmp_path):
    nvml = os.path.join(BUILD, "tests", "fakes", "libnvidia-ml.so.1")
    if not os.path.exists(nvml):
        pytest.skip("the fake NVML is not built")
    p = run(tmp_path, [gpus()[0][0]], lib=nvml)
    assert p.returncode == 2
    assert "does not export cuInit" in p.stderr


@pytest.mark.parametrize("args", [[], ["--libcuda"], ["--libcuda", "x"], ["--help"]])
def test_usage(tmp_path, args):
    p = subprocess.run([tool()] + args, capture_output=True, text=True, timeout=10)
    assert p.returncode == 2
    assert "usage: joblet-gpu-scrub" in p.stderr


@pytest.mark.parametrize("fail", [None, "cuMemsetD8_v2@{bad}=CUDA_ERROR_LAUNCH_FAILED"])
def test_under_asan(tmp_path, fail):
    # (in the ASan pass, where JOBLET_BUILD is build-asan: scripts/test.sh makes build-asan beside
    # the normal pass, so there it may be half built)
    if os.path.realpath(BUILD) != os.path.realpath(ASAN_BUILD):
        pytest.skip("runs in the ASan+UBSan pass (JOBLET_BUILD=build-asan)")
    if not os.path.isdir(ASAN_BUILD):
        pytest.skip("no build-asan")
    for path in (tool(ASAN_BUILD), fake_lib(ASAN_BUILD)):
        if not os.path.exists(path):
            pytest.skip(f"{path} is not built (ninja -C {ASAN_BUILD})")
    machine = gpus()
    bad = machine[3][0]
    p = run(tmp_path, [u for u, _ in machine], build=ASAN_BUILD, fail=fail and fail.format(bad=bad))
    assert p.returncode == (1 if fail else 0), p.stderr  # run() already failed on a sanitizer report
    for uuid, free in machine:
        if not fail or uuid != bad:
            check_scrubbed(p, uuid, free)
