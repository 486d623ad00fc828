"""joblet-sim, the scheduler simulator (docs/simulator.md): tiny hand-made traces whose metrics
were worked out by hand (the timelines are in the comments), and bad input.

Needs neither root nor the daemon. JOBLET_BUILD names the build directory (default: ./build).
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("JOBLET_BUILD", os.path.join(ROOT, "build"))
SIM = os.path.join(BUILD, "joblet-sim")
GEN = os.path.join(ROOT, "bench", "gen_trace.py")
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")

HEADER = "submit,duration,gpus,memory_mb,priority,user,limit,preemptible,single_numa\n"

# a100-pcie-4: GPUs 0,1 on NUMA node 0 and 2,3 on node 1; NVLink (12 links) inside each pair.
# Pair scores (placement_pair_score = 1000*nvlinks + (60 - PCIe level) + 5 if same NUMA node):
#   0-1: 12000 + (60 - 40 NODE: two host bridges of one node) + 5 = 12025
#   2-3: 12000 + (60 - 30 PHB: one host bridge)                + 5 = 12035
#   any cross pair: 0 + (60 - 50 SYS)                               = 10
# Best 2-GPU score on the empty machine: 12035 ({2,3}).
S01, S23, SX = 12025, 12035, 10

# The hand trace: A, C hold one GPU each for long; B two for 50 s; D wants two GPUs on one
# NUMA node; C declares a limit of 90 s (so the scheduler knows when its GPU comes back).
HAND = HEADER + """\
0,100,1,0,0,alice,,0,0
0,50,2,0,0,bob,,0,0
0,80,1,0,0,alice,90,0,0
10,20,2,0,0,carol,,0,1
20,20,1,0,0,bob,,0,0
"""

# topology and spread: A -> {0}; B -> {2,3} (the best pair; for spread also the farthest from
# A); C -> {1}. t=10 D waits, t=20 E waits, nothing is free. t=50 B ends: D starts on {2,3}
# (node 1 is whole again); E waits. t=70 D ends: E starts on {2}. t=80 C ends, t=90 E ends,
# t=100 A ends.
#   waits A0 B0 C0 D40 E50 -> avg 18 s, p95 (nearest rank: 5th of 5) 50 s
#   completions 100 50 80 60 70 -> avg 72 s, p95 100 s; makespan 100 s
#   GPU-busy 100+2*50+80+2*20+20 = 340 GPU-s -> utilization 340 / (4*100) = 0.85
#   someone waits during [10,70): 60 s, with no GPU free -> fragmentation 0
#   multi-GPU starts: B {2,3} and D {2,3}, both 12035/12035 -> score 1
GOOD = dict(utilization=0.85, wait_avg_ms=18000, wait_p95_ms=50000, wait_max_ms=50000, completion_avg_ms=72000,
            completion_p95_ms=100000, makespan_ms=100000, busy_gpu_ms=340000, queued_ms=60000, stranded_gpu_ms=0,
            fragmentation=0.0, stranded=0.0, placement_score=1.0, multi_gpu_starts=2, preemptions=0,
            lost_gpu_ms=0, killed_at_limit=0)

# firstfit (lowest free indexes) and pack (next to busy GPUs first): A -> {0}; B -> {1,2}
# (pack: a set holding GPU 1, A's NVLink peer, is nearest to A; {1,2} ties {1,3} and the lower
# wins); C -> {3}. t=50 B ends: free {1,2}, one on each node, so D (one node) cannot
# start; it is the head and the scheduler reserves {2,3} for it, knowing C ends by t=90 (its
# limit). E may take the unreserved GPU 1: it starts at 50. t=70 E ends. t=80 C ends: D starts
# on {2,3}. t=100 A and D end.
#   waits A0 B0 C0 D70 E30 -> avg 20 s, p95 70 s
#   completions 100 50 80 90 50 -> avg 74 s, p95 100 s; makespan 100 s
#   GPU-busy 340 GPU-s -> utilization 0.85
#   someone waits during [10,80): 70 s; free GPUs: none in [10,50), {2} in [50,70), {1,2} in
#   [70,80) -> 20 + 20 = 40 GPU-s stranded -> fragmentation 40 / (4*70) = 1/7, of the
#   makespan 40 / 400 = 0.1
#   multi-GPU starts: B {1,2} = 10/12035, D {2,3} = 1 -> mean (10/12035 + 1) / 2
SPLIT = dict(GOOD, wait_avg_ms=20000, wait_p95_ms=70000, wait_max_ms=70000, completion_avg_ms=74000,
             queued_ms=70000, stranded_gpu_ms=40000, fragmentation=1 / 7, stranded=0.1,
             placement_score=(SX / S23 + 1) / 2)

EXPECTED_1 = {"topology": GOOD, "spread": GOOD, "pack": SPLIT, "firstfit": SPLIT}

# Two machines, first-machine-first: A, B, C start on machine 1 as above. t=10 D does not fit
# machine 1 and starts at once on the empty machine 2; t=20 E likewise. No job ever waits.
#   waits all 0; completions 100 50 80 20 20 -> avg 54 s, p95 100 s; makespan 100 s
#   utilization 340 / (8*100) = 0.425; fragmentation 0 (never a waiting job)
#   D on the empty machine 2: topology/pack/spread take {2,3} (score 1); firstfit takes the
#   first node's pair {0,1} (12025/12035).
TWO = dict(utilization=0.425, wait_avg_ms=0, wait_p95_ms=0, completion_avg_ms=54000, completion_p95_ms=100000,
           makespan_ms=100000, busy_gpu_ms=340000, queued_ms=0, stranded_gpu_ms=0, fragmentation=0.0)
EXPECTED_2 = {"topology": dict(TWO, placement_score=1.0), "spread": dict(TWO, placement_score=1.0),
              "pack": dict(TWO, placement_score=(SX / S23 + 1) / 2),
              "firstfit": dict(TWO, placement_score=(SX + S01) / (2 * S23))}


def sim(*args, input=None, build=None):
    exe = os.path.join(build, "joblet-sim") if build else SIM
    if not os.path.exists(exe):
        pytest.skip(f"{exe} is not built (ninja -C {BUILD} joblet-sim)")
    p = subprocess.run([exe, *args], input=input, capture_output=True, text=True, timeout=60)
    for mark in SANITIZER_MARKS:
        assert mark not in p.stderr, p.stderr
    return p


def run_json(tmp_path, trace, *args):
    path = tmp_path / "trace.csv"
    path.write_text(trace)
    p = sim("--json", *args, str(path))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def check(result, expected):
    for k, v in expected.items():
        if isinstance(v, float):
            assert result[k] == pytest.approx(v, rel=1e-12, abs=1e-12), k
        else:
            assert result[k] == v, k


def test_hand_trace_one_machine(tmp_path):
    d = run_json(tmp_path, HAND, "--machine", "a100-pcie-4")
    assert (d["jobs"], d["users"], d["machines"], d["gpus_total"]) == (5, 3, 1, 4)
    assert [r["strategy"] for r in d["results"]] == ["topology", "pack", "spread", "firstfit"]
    for r in d["results"]:
        check(r, EXPECTED_1[r["strategy"]])


def test_hand_trace_two_machines(tmp_path):
    d = run_json(tmp_path, HAND, "--machine", "a100-pcie-4", "--machines", "2")
    assert d["gpus_total"] == 8
    for r in d["results"]:
        check(r, EXPECTED_2[r["strategy"]])


def test_strategy_list_and_table(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(HAND)
    p = sim("-m", "a100-pcie-4", "-s", "firstfit,topology", str(path))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[2].split()[:3] == ["strategy", "util", "wait"]
    rows = [line.split() for line in lines[3:]]
    assert [r[0] for r in rows] == ["firstfit", "topology"]
    # util, wait avg, wait p95, compl avg, compl p95, makespan, frag, score, preempt
    assert rows[0][1:] == ["85.0%", "20.0s", "70.0s", "74.0s", "100.0s", "100.0s", "14.3%", "0.500", "0"]
    assert rows[1][1:] == ["85.0%", "18.0s", "50.0s", "72.0s", "100.0s", "100.0s", "0.0%", "1.000", "0"]


def test_preemption(tmp_path):
    # P (4 GPUs, preemptible, priority 0) runs from 0; H (2 GPUs, priority 10) comes at 10 and
    # cannot fit: P is stopped (10 s x 4 GPUs lost) and waits again; H runs 10-30; P starts
    # over at 30 and ends at 130.
    #   waits P 20 (130 - 110 run) H 0 -> avg 10 s, p95 20 s; completions 130, 20 -> avg 75 s
    #   busy 40 + 40 + 400 = 480 GPU-s -> utilization 480 / (4*130)
    #   P waits during [10,30) with 2 GPUs free -> fragmentation 40 / (4*20) = 0.5
    trace = "submit,duration,gpus,priority,user,preemptible\n0,100,4,0,a,1\n10,20,2,10,b,0\n"
    d = run_json(tmp_path, trace, "-m", "a100-pcie-4", "-s", "topology")
    check(d["results"][0], dict(utilization=480 / 520, wait_avg_ms=10000, wait_p95_ms=20000, completion_avg_ms=75000,
                                completion_p95_ms=130000, makespan_ms=130000, busy_gpu_ms=480000, lost_gpu_ms=40000,
                                preemptions=1, queued_ms=20000, stranded_gpu_ms=40000, fragmentation=0.5,
                                multi_gpu_starts=3))


def test_exact_runtimes_allow_backfill(tmp_path):
    # A {2,3} 0-100, B {0} 0-50; C (all 4 GPUs) comes at 10, D (1 GPU, 10 s) at 20.
    # Runtimes unknown: C holds every free GPU in reserve, D waits for C: C 100-130, D 130-140.
    # Exact runtimes: C's reservation starts at 100, D ends by 30, so D backfills at 20.
    trace = "submit,duration,gpus\n0,100,2\n0,50,1\n10,30,4\n20,10,1\n"
    blind = run_json(tmp_path, trace, "-m", "a100-pcie-4", "-s", "topology")["results"][0]
    check(blind, dict(wait_avg_ms=(0 + 0 + 90000 + 110000) / 4, wait_p95_ms=110000, makespan_ms=140000))
    exact = run_json(tmp_path, trace, "-m", "a100-pcie-4", "-s", "topology", "--exact-runtimes")["results"][0]
    check(exact, dict(wait_avg_ms=90000 / 4, wait_p95_ms=90000, makespan_ms=130000,
                      utilization=(200 + 50 + 120 + 10) / (4 * 130)))


def test_limit_and_user_limit(tmp_path):
    # The first job declares 30 s but would run 60: it is stopped at its limit (30 s).
    # --max-gpus-per-user 1: u's second job waits for the first; v's runs at once.
    #   u1 0-30, u2 30-40, v 0-10: waits 0, 30, 0 -> avg 10 s; makespan 40 s
    trace = "submit,duration,gpus,user,limit\n0,60,1,u,30\n0,10,1,u,\n0,10,1,v,\n"
    d = run_json(tmp_path, trace, "-m", "a100-pcie-4", "-s", "firstfit", "--max-gpus-per-user", "1")
    check(d["results"][0], dict(killed_at_limit=1, wait_avg_ms=10000, makespan_ms=40000, busy_gpu_ms=50000))


def test_positional_columns_and_stdin():
    # No header: submit, duration, gpus[, memory_mb, priority, user, ...]; comments and blank
    # lines are skipped; decimals are milliseconds.
    p = sim("--json", "-m", "dgx-h100", "-s", "pack", "-", input="# x\n\n0,1.5,8\n0.25,0.5,1,80000,0,u\n")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)["results"][0]
    check(r, dict(makespan_ms=2000, wait_avg_ms=1250 / 2, busy_gpu_ms=8 * 1500 + 500))


def test_generated_trace_is_deterministic(tmp_path):
    a = subprocess.run([sys.executable, GEN, "--seed", "7", "--jobs", "300"], capture_output=True, text=True,
                       check=True).stdout
    b = subprocess.run([sys.executable, GEN, "--seed", "7", "--jobs", "300"], capture_output=True, text=True,
                       check=True).stdout
    c = subprocess.run([sys.executable, GEN, "--seed", "8", "--jobs", "300"], capture_output=True, text=True,
                       check=True).stdout
    assert a == b and a != c
    assert len(a.splitlines()) == 302  # the command line as a comment, the header, 300 jobs
    one = run_json(tmp_path, a, "-m", "dgx1-v100", "-n", "2")
    two = run_json(tmp_path, a, "-m", "dgx1-v100", "-n", "2")
    assert one == two
    for r in one["results"]:
        assert 0 < r["utilization"] <= 1 and 0 <= r["fragmentation"] <= 1
        assert r["busy_gpu_ms"] <= one["gpus_total"] * r["makespan_ms"]


@pytest.mark.parametrize("trace, message", [
    (HEADER + "0,10,1,0,0,u,,0,0\n5,ten,1,0,0,u,,0,0\n", ":3: column 2 (duration): 'ten' is not a duration"),
    (HEADER + "0,10,1,0,0,u,,0,0\n5,10,0,0,0,u,,0,0\n", ":3: column 3 (gpus): '0' is not a whole number of GPUs"),
    (HEADER + "0,10,1,0,0,u,,0,0\n\n5,10,1,0,x,u,,0,0\n", ":4: column 5 (priority): 'x' is not a whole number"),
    (HEADER + "0,10,1,0,0,u,,maybe,0\n", ":2: column 8 (preemptible): 'maybe' is not 0/1"),
    (HEADER + "-1,10,1,0,0,u,,0,0\n", ":2: column 1 (submit): '-1' is not a time"),
    (HEADER + "0,10,1,0,0,u,0,0,0\n", ":2: column 7 (limit): '0' is not a duration"),
    (HEADER + "0,1.0001,1,0,0,u,,0,0\n", ":2: column 2 (duration): '1.0001'"),
    (HEADER + "0,10,1,0,0,\"u\",,0,0\n", ":2: column 6 (user): '\"u\"': quoted fields are not supported"),
    (HEADER + "0,10,1,0,0,u\n", ":2: 6 fields, but the header names 9"),
    ("submit,duration,gpus\n0,,1\n", ":2: column 2 (duration): empty, but required"),
    ("0,10\n", ":1: 2 fields; expected 3 to 9"),
    ("0,1,1,0,0,u,,0,0,extra\n", ":1: more than 9 fields"),
    ("submit,duration,gpu\n0,10,1\n", ":1: column 3: unknown column 'gpu'"),
    ("submit,duration,user\n0,10,u\n", ":1: the header lacks the required column 'gpus'"),
    ("submit,gpus,gpus,duration\n", ":1: column 3: 'gpus' named twice"),
    ("# nothing\n", ": no jobs in the trace"),
    (HEADER + "0,10,1,0,0,u,,0,0\n5,10,5,0,0,u,,0,0\n",
     ":3: the job asks 5 GPUs; machine 'a100-pcie-4' has 4 usable GPUs of 40960 MiB: it could never start"),
    (HEADER + "0,10,3,0,0,u,,0,1\n", ":2: the job asks 3 GPUs on one NUMA node"),
    (HEADER + "0,10,1,40961,0,u,,0,0\n", ":2: the job asks 1 GPU of at least 40961 MiB"),
])
def test_bad_trace(tmp_path, trace, message):
    path = tmp_path / "bad.csv"
    path.write_text(trace)
    p = sim("-m", "a100-pcie-4", str(path))
    assert p.returncode == 1
    assert p.stdout == ""
    assert p.stderr.startswith("joblet-sim: ") and message in p.stderr, p.stderr
    assert str(path) in p.stderr


def test_no_usable_gpu(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("0,10,1\n")
    p = sim("-m", "a100-mig", str(path))
    assert p.returncode == 1
    assert "has 0 usable GPUs (of 1: GPUs in MIG mode" in p.stderr and f"{path}:1:" in p.stderr


@pytest.mark.parametrize("args, message", [
    (["-m", "a100-pcie-4", "-s", "topology,best"], "unknown strategy 'best'"),
    (["-m", "a100-pcie-4", "-n", "0"], "--machines: '0' is not a whole number from 1 to 64"),
    (["-m", "a100-pcie-4", "--max-gpus-per-user", "-1"], "--max-gpus-per-user"),
    ([], "--machine is required"),
    (["-m", "a100-pcie-4", "--bogus"], "usage: joblet-sim"),
])
def test_usage(tmp_path, args, message):
    path = tmp_path / "t.csv"
    path.write_text("0,10,1\n")
    p = sim(*args, str(path))
    assert p.returncode == 2
    assert message in p.stderr, p.stderr


def test_missing_fixture_and_trace(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("0,10,1\n")
    p = sim("-m", "no-such-machine", str(path))
    assert p.returncode == 1
    assert "machine 'no-such-machine'" in p.stderr and "no-such-machine/machine.json: No such file" in p.stderr
    p = sim("-m", str(tmp_path / "nope.json"), str(path))
    assert p.returncode == 1 and "nope.json: No such file" in p.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    p = sim("-m", str(bad), str(path))
    assert p.returncode == 1 and "bad.json" in p.stderr
    p = sim("-m", "a100-pcie-4", str(tmp_path / "missing.csv"))
    assert p.returncode == 1 and "missing.csv: No such file" in p.stderr


def test_help():
    p = sim("--help")
    assert p.returncode == 0 and "usage: joblet-sim" in p.stdout
