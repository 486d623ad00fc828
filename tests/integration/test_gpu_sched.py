"""The GPU scheduler end to end (real daemon, simulated machines): gang allocation and queueing,
backfill behind the head's reservation, preemption, placement on the DGX-1 mesh, MPS sharing
with the fake nvidia-cuda-mps-control, MIG devices, the request fields, and per-user limits."""
import json
import os
import time

from conftest import DEAF, ROOT, api_as, rnx_as, wait_deaf

FIX = os.path.join(ROOT, "tests", "fixtures")
FAKE_MPS = os.path.join(ROOT, "tests", "fakes", "nvidia-cuda-mps-control")


def sim(fresh_daemon, name, extra=""):
    return fresh_daemon(f"gpu:\n  fixture: {FIX}/{name}/machine.json\n  scrub: 0\n{extra}")


def machine(name):
    with open(f"{FIX}/{name}/machine.json") as f:
        return json.load(f)


def gpus_of(job):
    return sorted(g["index"] for g in job["gpus"])


def run_id(d, *args):
    p = d.rnx("job", "run", *args, check=True)
    return p.stdout.strip()


def test_four_two_gpu_jobs_two_run_two_wait_and_take_over(fresh_daemon):
    d = sim(fresh_daemon, "a100-pcie-4")
    ids = [run_id(d, "--gpu=2", "sleep", "600") for _ in range(4)]
    a = d.wait_status(ids[0], "RUNNING")
    b = d.wait_status(ids[1], "RUNNING")
    # the two NVLinked NUMA pairs, one job each; 2-3 first (one host bridge, where 0-1 cross two)
    assert gpus_of(a) == [2, 3] and gpus_of(b) == [0, 1]
    for k, jid in enumerate(ids[2:]):
        j = d.job(jid)
        assert j["status"] == "QUEUED" and j["gpus"] == [] and j["queue_position"] == k + 1
    assert d.job(ids[2])["wait_reason"] == "needs 2 GPUs; 0 free; first in line"
    assert d.job(ids[3])["wait_reason"].startswith("needs 2 GPUs; 0 free; behind job " + ids[2][:8])
    d.rnx("job", "stop", ids[0], check=True)
    c = d.wait_status(ids[2], "RUNNING")
    ended = d.wait(ids[0])
    assert gpus_of(c) == [2, 3]  # exactly what the first one gave back
    assert c["started_at"] >= ended["ended_at"]
    assert d.job(ids[3])["status"] == "QUEUED"
    d.rnx("job", "stop", ids[1], check=True)
    assert gpus_of(d.wait_status(ids[3], "RUNNING")) == [0, 1]
    for jid in ids[2:]:
        d.rnx("job", "stop", jid, check=True)
        d.wait(jid)


def test_a_wait_reason_names_no_job_of_another_user(fresh_daemon):
    """The job first in line is named to its owner's other jobs; another user's job waiting
    behind it, or for GPUs reserved for it, is told only that it is someone else's."""
    d = sim(fresh_daemon, "a100-pcie-4")
    running = run_id(d, "--gpu=4", "--max-runtime=1h", "sleep", "600")
    d.wait_status(running, "RUNNING")
    head = run_id(d, "--gpu=4", "sleep", "600")                   # root's, first in line
    p = rnx_as(d, 64123, "job", "run", "--gpu=2", "sleep", "600")
    assert p.returncode == 0, p.stderr
    mine = {"id": p.stdout.strip()}
    p = rnx_as(d, 64123, "job", "run", "--gpu=1", "--max-runtime=10min", "sleep", "600")
    assert p.returncode == 0, p.stderr
    late = {"id": p.stdout.strip()}
    also_root = run_id(d, "--gpu=2", "sleep", "600")
    code, seen = api_as(d, 64123, "GET", f"/v1/jobs/{mine['id']}")
    assert code == 200 and seen["status"] == "QUEUED", seen
    assert seen["wait_reason"] == "needs 2 GPUs; 0 free; behind a job of another user, first in line", seen
    assert head[:8] not in json.dumps(seen) and running[:8] not in json.dumps(seen)
    code, seen = api_as(d, 64123, "GET", f"/v1/jobs/{late['id']}")
    assert code == 200 and "another user" in seen["wait_reason"] and head[:8] not in json.dumps(seen), seen
    assert d.job(also_root)["wait_reason"] == f"needs 2 GPUs; 0 free; behind job {head[:8]}, first in line"
    for jid in (head, mine["id"], late["id"], also_root):
        d.rnx("job", "cancel", jid, check=True)
    d.rnx("job", "stop", running, check=True)
    for jid in (running, head, mine["id"], late["id"], also_root):
        d.wait(jid)


def test_backfill_only_what_cannot_delay_the_head(fresh_daemon):
    d = sim(fresh_daemon, "a100-pcie-4")
    big = run_id(d, "--gpu=2", "--max-runtime=1h", "sleep", "600")
    d.wait_status(big, "RUNNING")
    head = run_id(d, "--gpu=4", "sleep", "600")              # waits for big: all 4 reserved
    unknown = run_id(d, "--gpu=1", "sleep", "600")          # could run past the head's time
    short = run_id(d, "--gpu=1", "--max-runtime=10min", "sleep", "600")  # ends in time: backfills
    s = d.wait_status(short, "RUNNING")
    assert len(s["gpus"]) == 1
    h, u = d.job(head), d.job(unknown)
    assert h["status"] == "QUEUED" and h["queue_position"] == 1
    assert h["wait_reason"].startswith("needs 4 GPUs; 1 free; first in line: GPUs 0,1,2,3 are reserved for it, "
                                       "which has room for it by "), h["wait_reason"]
    assert u["status"] == "QUEUED" and u["queue_position"] == 2
    assert "only on GPUs 0,1,2,3 reserved for job " + head[:8] in u["wait_reason"], u["wait_reason"]
    # a CPU job never waits for GPUs
    cpu = run_id(d, "true")
    assert d.wait(cpu)["status"] == "COMPLETED"
    for jid in (big, short):
        d.rnx("job", "stop", jid, check=True)
    assert len(d.wait_status(head, "RUNNING")["gpus"]) == 4
    d.rnx("job", "stop", head, check=True)
    assert len(d.wait_status(unknown, "RUNNING")["gpus"]) == 1
    d.rnx("job", "stop", unknown, check=True)
    d.wait(unknown)


def test_preemption_requeues_and_reruns(fresh_daemon):
    d = sim(fresh_daemon, "a100-pcie-4")
    # each run appends a line to /work, which survives preemption
    script = "echo run >> /work/runs; sleep 600"
    low1 = run_id(d, "--gpu=2", "--preemptible", "--priority=-5", "sh", "-c", script)
    low2 = run_id(d, "--gpu=2", "--preemptible", "--priority=-5", "sh", "-c", script)
    d.wait_status(low1, "RUNNING")
    had = gpus_of(d.wait_status(low2, "RUNNING"))
    # equal priority never preempts; neither does anything over a non-preemptible job
    same = run_id(d, "--gpu=2", "--priority=-5", "true")
    time.sleep(0.3)
    assert d.job(same)["status"] == "QUEUED"
    d.rnx("job", "cancel", same, check=True)
    high = run_id(d, "--gpu=2", "--priority=10", "sh", "-c", "sleep 600")
    h = d.wait_status(high, "RUNNING", timeout=30)
    # the most recent of the lowest priority went, and only it
    p = d.wait_status(low2, "PREEMPTED")
    assert p["preemptions"] == 1 and p["gpus"] == [] and p["end_reason"] == "preempted"
    assert gpus_of(h) == had
    assert d.job(low1)["status"] == "RUNNING"
    st = d.rnx("job", "status", low2, check=True).stdout
    assert "Status: PREEMPTED" in st and "preemptible; preempted 1 time" in st
    assert "job " + low2 + " PREEMPTED" in d.log()
    # the preempted job keeps its request and reruns when room comes back
    d.rnx("job", "stop", high, check=True)
    r = d.wait_status(low2, "RUNNING")
    assert r["preemptions"] == 1 and gpus_of(r) == had
    assert r["command"] == "sh" and r["priority"] == -5 and r["preemptible"] is True
    deadline = time.time() + 20
    while time.time() < deadline and open(os.path.join(d.work(low2), "runs")).read() != "run\nrun\n":
        time.sleep(0.05)
    assert open(os.path.join(d.work(low2), "runs")).read() == "run\nrun\n"
    # a non-preemptible job is never stopped for a higher one, which waits instead
    d.rnx("job", "stop", low1, check=True)
    d.wait(low1)
    keep = run_id(d, "--gpu=2", "--priority=-5", "sleep", "600")
    d.wait_status(keep, "RUNNING")
    d.rnx("job", "stop", low2, check=True)
    assert d.wait(low2)["status"] == "STOPPED"  # stopped by a user: not re-queued
    top = run_id(d, "--gpu=4", "--priority=100", "true")
    time.sleep(0.3)
    assert d.job(top)["status"] == "QUEUED" and d.job(keep)["status"] == "RUNNING"
    d.rnx("job", "stop", keep, check=True)
    assert d.wait(top)["status"] == "COMPLETED"


def test_preempted_job_survives_a_daemon_restart(fresh_daemon):
    d = sim(fresh_daemon, "a100-pcie-4")
    low = run_id(d, "--gpu=4", "--preemptible", "sleep", "600")
    d.wait_status(low, "RUNNING")
    high = run_id(d, "--gpu=4", "--priority=1", "sleep", "600")
    d.wait_status(low, "PREEMPTED")
    d.wait_status(high, "RUNNING")
    d.kill9()
    d.start()
    assert d.job(low)["status"] == "PREEMPTED" and d.job(high)["status"] == "RUNNING"
    d.rnx("job", "stop", high, check=True)
    assert d.wait_status(low, "RUNNING")["preemptions"] == 1
    d.rnx("job", "stop", low, check=True)
    d.wait(low)


def test_dgx1_four_gpus_get_a_fully_nvlinked_quad(fresh_daemon):
    d = sim(fresh_daemon, "dgx1-v100")
    # NVLinked pairs by the machine's own description (per-link remote bus ids), by index
    gpus = sorted(machine("dgx1-v100")["gpus"], key=lambda g: g["bus_id"])
    index = {g["bus_id"]: i for i, g in enumerate(gpus)}
    linked = {(i, index[l["remote_bus"]]) for i, g in enumerate(gpus) for l in g["nvlinks"]
              if l["active"] and l["remote_type"] == "gpu"}
    a = run_id(d, "--gpu=4", "sleep", "600")
    b = run_id(d, "--gpu=4", "sleep", "600")
    ga, gb = gpus_of(d.wait_status(a, "RUNNING")), gpus_of(d.wait_status(b, "RUNNING"))
    assert not set(ga) & set(gb)
    for q in (ga, gb):
        assert all((x, y) in linked for x in q for y in q if x != y), (q, sorted(linked))
    for jid in (a, b):
        d.rnx("job", "stop", jid, check=True)
        d.wait(jid)


def test_request_fields_are_checked_against_the_machine(fresh_daemon):
    d = sim(fresh_daemon, "dgx1-v100")
    cases = [
        (["--gpu=1", "--gpu-type=H100"], "--gpu-type: no GPU of type 'H100' on this machine; it has Tesla V100-SXM2-16GB"),
        (["--gpu=1", "--gpu-cc=9.0"], "--gpu-cc: asks for 1 GPU with compute capability 9.0 or more; this machine has 0 "
                                      "such GPUs of 8"),
        (["--gpu=1", "--gpu-cc=nine"], "--gpu-cc: 'nine' is not a compute capability; give MAJOR.MINOR"),
        (["--gpu=6", "--cross-numa=no"], "--gpu: asks for 6 GPUs on one NUMA node; no NUMA node of this machine has "
                                         "that many"),
        (["--cross-numa=maybe", "--gpu=1"], "--cross-numa: 'maybe' must be yes or no"),
        (["--gpu-type=V100"], "--gpu-type: qualifies a GPU request, but the job asks for no GPU"),
        (["--gpu=1", "--gpu-share"], "--gpu-share: a shared GPU needs a memory reservation"),
    ]
    for flags, msg in cases:
        p = d.rnx("job", "run", *flags, "true")
        assert p.returncode != 0 and msg in p.stderr, (flags, p.stderr)
    assert d.job_count() == 0
    # what does fit runs, and where
    job, _, _ = d.run("true", gpu_count=4, gpu_type="V100", gpu_cc="7.0", cross_numa=False)
    assert job["status"] == "COMPLETED" and gpus_of(job) in ([0, 1, 2, 3], [4, 5, 6, 7])
    assert job["gpu_request"]["type"] == "V100" and job["gpu_request"]["cross_numa"] is False


def test_mps_sharing(fresh_daemon, tmp_path):
    d = sim(fresh_daemon, "a100-pcie-4", f"  mps_control: {FAKE_MPS}\n")
    gpus = sorted(machine("a100-pcie-4")["gpus"], key=lambda g: g["bus_id"])
    probe = ("echo PIPE=$CUDA_MPS_PIPE_DIRECTORY LIM=$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT "
             "PCT=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; test -p /tmp/nvidia-mps/control && echo FIFO; sleep 600")
    a = run_id(d, "--gpu=1", "--gpu-share", "--gpu-memory=10GB", "sh", "-c", probe)
    b = run_id(d, "--gpu=1", "--gpu-share", "--gpu-memory=20GB", "sh", "-c", probe)
    ja, jb = d.wait_status(a, "RUNNING"), d.wait_status(b, "RUNNING")
    # light jobs share one GPU while its reservations fit in its 40 GB; NVIDIA MPS serves one uid
    # at a time, so root's shared jobs run as one uid (the range's last), its other jobs as their own
    assert gpus_of(ja) == gpus_of(jb) == [0]
    assert ja["uid"] == jb["uid"] == 2000000000 + 65536 - 1, (ja["uid"], jb["uid"])
    plain = [d.job(run_id(d, "true"))["uid"] for _ in range(3)]
    assert len(set(plain)) == 3 and ja["uid"] not in plain, plain
    assert ja["gpus"][0]["shared_mb"] == 10240
    deadline = time.time() + 20
    while time.time() < deadline and "FIFO" not in d.output(b):
        time.sleep(0.05)
    assert d.output(a).split("\n")[:2] == ["PIPE=/tmp/nvidia-mps LIM=0=10240M PCT=25", "FIFO"]
    assert d.output(b).split("\n")[:2] == ["PIPE=/tmp/nvidia-mps LIM=0=20480M PCT=50", "FIFO"]
    log0 = os.path.join(d.state, "mps", "0", "log", "control.log")
    assert open(log0).read() == f"start devices={gpus[0]['uuid']} pipe={d.state}/mps/0/pipe\n"
    g = json.loads(d.rnx("--json", "gpu", "show", "0", check=True).stdout)
    assert g["state"] == "shared" and g["shared"] == {"jobs": 2, "reserved_mb": 30720}
    # rnx says so too (docs/gpu.md's example): the list printed "shared" and show "Job: -", no word
    # of the two tenants or of how much of the GPU is left
    row = d.rnx("gpu", "list", check=True).stdout.splitlines()[4]
    assert row.split("  ")[0] == "0" and " shared (2 jobs, 30720 MiB reserved)  -" in row, row
    assert "\nShared:              2 jobs, 30720 MiB reserved\n" in d.rnx("gpu", "show", "0", check=True).stdout
    # 10 + 20 + 15 GB do not fit in 40: the third goes to the next GPU, with its own server
    c = run_id(d, "--gpu=1", "--gpu-share", "--gpu-memory=15GB", "sleep", "600")
    assert gpus_of(d.wait_status(c, "RUNNING")) == [1]
    assert os.path.exists(os.path.join(d.state, "mps", "1", "log", "control.log"))
    # a whole-GPU job never lands on a shared GPU
    whole = run_id(d, "--gpu=3", "sleep", "600")
    time.sleep(0.3)
    w = d.job(whole)
    assert w["status"] == "QUEUED" and "needs 3 GPUs; 2 free" in w["wait_reason"]
    d.rnx("job", "cancel", whole, check=True)
    # the last tenant gone, the server is told to quit
    d.rnx("job", "stop", a, check=True)
    d.wait(a)
    assert "cmd quit" not in open(log0).read()
    d.rnx("job", "stop", b, check=True)
    d.wait(b)
    deadline = time.time() + 10
    while time.time() < deadline and "exit" not in open(log0).read():
        time.sleep(0.05)
    assert open(log0).read().endswith("cmd quit\nexit\n")
    d.rnx("job", "stop", c, check=True)
    d.wait(c)
    # refusals
    for flags, msg in [(["--gpu=2", "--gpu-share", "--gpu-memory=1GB"], "--gpu-share: a shared job gets one GPU"),
                       (["--gpu=1", "--gpu-share", "--gpu-memory=41GB"], "this machine has 0 such GPUs of 4")]:
        p = d.rnx("job", "run", *flags, "true")
        assert p.returncode != 0 and msg in p.stderr, (flags, p.stderr)


def test_sharing_refused_without_mps(fresh_daemon, tmp_path):
    d = sim(fresh_daemon, "a100-pcie-4", f"  mps_control: {tmp_path}/no-such-mps-control\n")
    p = d.rnx("job", "run", "--gpu=1", "--gpu-share", "--gpu-memory=1GB", "true")
    assert p.returncode != 0
    assert "--gpu-share: GPU sharing needs NVIDIA MPS, which is not available: no executable " in p.stderr
    assert d.job_count() == 0


def test_mig_devices_queue_by_profile(fresh_daemon):
    d = sim(fresh_daemon, "a100-mig")
    m = machine("a100-mig")
    profiles = [x["profile"] for g in m["gpus"] for x in g.get("mig", [])]
    prof = profiles[0]
    n = profiles.count(prof)
    ids = [run_id(d, f"--gpu-mig={prof}", "sleep", "600") for _ in range(n + 1)]
    for jid in ids[:n]:
        d.wait_status(jid, "RUNNING")
    extra = d.job(ids[n])
    assert extra["status"] == "QUEUED"
    assert extra["wait_reason"] == f"needs a MIG device {prof}; 0 free; first in line"
    uuids = {d.job(j)["gpus"][0]["uuid"] for j in ids[:n]}
    assert len(uuids) == n  # never two jobs on one MIG device
    d.rnx("job", "stop", ids[0], check=True)
    assert d.wait_status(ids[n], "RUNNING")["gpus"][0]["uuid"] == d.job(ids[0])["gpus"][0]["uuid"]
    p = d.rnx("job", "run", f"--gpu-mig={prof}", "--gpu-share", "true")
    assert p.returncode != 0 and "--gpu-mig: a MIG device is its own slice" in p.stderr
    # a whole GPU on a machine whose GPU is in MIG mode: rnx gpu list shows it "available", so the
    # refusal says why it is no use and what to ask instead (it said only "0 usable GPUs")
    have = ", ".join(dict.fromkeys(profiles))
    p = d.rnx("job", "run", "--gpu=1", "true")
    assert p.returncode == 1 and p.stderr == (
        "rnx: --gpu: asks for 1 GPU; this machine has 0 usable GPUs (rnx gpu list); GPU 0 is in MIG mode, handed "
        f"out only as its MIG devices: ask for one with --gpu-mig ({have})\n"), p.stderr
    p = d.rnx("job", "run", "--gpu=all", "true")
    assert p.returncode == 1 and p.stderr == (
        "rnx: --gpu=all: no usable GPU on this machine; GPU 0 is in MIG mode, handed out only as its MIG devices: "
        f"ask for one with --gpu-mig ({have})\n"), p.stderr
    for jid in ids[1:]:
        d.rnx("job", "stop", jid, check=True)
        d.wait(jid)


def test_per_user_limits(fresh_daemon):
    d = sim(fresh_daemon, "a100-pcie-4",
            "limits:\n  max_gpus_per_user: 2\n  max_queued_per_user: 2\n  gpu_requests_per_minute: 4\n")
    p = d.rnx("job", "run", "--gpu=3", "true")
    assert p.returncode != 0 and "--gpu: asks for 3 GPUs; limits.max_gpus_per_user is 2" in p.stderr
    # each names what asked for the GPUs (all said --gpu, a flag none of these users typed)
    for flags, named in [(["--gpu-ids=0,1,2"], "--gpu-ids: asks for 3"), (["--gpu=all"], "--gpu=all: asks for 4"),
                         (["-e", "NVIDIA_VISIBLE_DEVICES=all"], "--env: NVIDIA_VISIBLE_DEVICES=all: asks for 4"),
                         (["-e", "NVIDIA_VISIBLE_DEVICES=0,1,2"], "--env: NVIDIA_VISIBLE_DEVICES=0,1,2: asks for 3")]:
        p = d.rnx("job", "run", *flags, "true")
        assert p.returncode == 1 and p.stderr == f"rnx: {named} GPUs; limits.max_gpus_per_user is 2\n", p.stderr
    a = run_id(d, "--gpu=2", "sleep", "600")
    d.wait_status(a, "RUNNING")
    b = run_id(d, "--gpu=1", "sleep", "600")
    time.sleep(0.3)
    jb = d.job(b)
    assert jb["status"] == "QUEUED"
    assert jb["wait_reason"] == "needs 1 GPU; its owner's jobs hold 2 GPUs and limits.max_gpus_per_user is 2"
    # a user-limited job blocks nobody: CPU jobs run
    assert d.run("true")[0]["status"] == "COMPLETED"
    c = run_id(d, "--gpu=1", "sleep", "600")
    p = d.rnx("job", "run", "--gpu=1", "true")  # a third waiting job: over max_queued_per_user
    assert p.returncode != 0 and "has 2 jobs waiting; limits.max_queued_per_user is 2" in p.stderr
    d.rnx("job", "cancel", c, check=True)
    # requests refused by another limit are not counted: a, b, c and this one make 4
    e = run_id(d, "--gpu=1", "sleep", "600")
    d.rnx("job", "cancel", e, check=True)
    p = d.rnx("job", "run", "--gpu=1", "true")
    assert p.returncode != 0 and "too many GPU requests: limits.gpu_requests_per_minute is 4" in p.stderr
    # a job submitted without GPUs and updated to ask for them is a GPU request too: the same bucket
    f = run_id(d, "--schedule=2031-01-01T00:00:00Z", "true")
    p = d.rnx("job", "update", f, "--gpu=1")
    assert p.returncode != 0 and "too many GPU requests" in p.stderr and "a changed GPU request" in p.stderr, p
    assert d.job(f)["gpu_request"]["count"] is None
    p = d.rnx("job", "update", f, "--priority=-1")  # a change that asks for no GPU takes none
    assert p.returncode == 0, p.stderr
    d.rnx("job", "cancel", f, check=True)
    d.rnx("job", "stop", a, check=True)
    assert d.wait_status(b, "RUNNING")
    d.rnx("job", "stop", b, check=True)
    d.wait(b)


def test_a_hold_during_a_preemptions_stop_holds_the_job_once_stopped(fresh_daemon):
    """A preemptible job that ignores SIGTERM is being stopped for a higher one (STOPPING, for
    jobs.stop_grace_s): `rnx job hold` was refused then (409 "is STOPPING"), and could be placed
    only once it was PREEMPTED. It now makes it wait HELD once stopped (who held it said), not
    PREEMPTED: the higher job's end no longer starts it; released, it runs again."""
    d = sim(fresh_daemon, "a100-pcie-4")
    low = run_id(d, "--gpu=4", "--preemptible", *DEAF)
    wait_deaf(d, low)
    high = run_id(d, "--gpu=4", "--priority=10", "sleep", "600")
    d.wait_status(low, "STOPPING", timeout=30)
    p = d.rnx("job", "hold", low)
    assert p.returncode == 0, (p.stdout, p.stderr)
    d.wait_status(high, "RUNNING", timeout=30)
    j = d.wait_status(low, "HELD", timeout=30)
    assert j["preemptions"] == 1 and "held by uid 0" in j["wait_reason"], j
    d.rnx("job", "stop", high, check=True)
    d.wait(high)
    time.sleep(1.5)  # a job back in the queue starts within a pass
    assert d.job(low)["status"] == "HELD"
    d.rnx("job", "release", low, check=True)
    d.wait_status(low, "RUNNING", timeout=30)
    d.rnx("job", "kill", low, check=True)
