"""GPU health end to end: the fake NVML's injected XIDs, ECC events and temperatures reach the
daemon's monitor while jobs run, and the XID policy acts (docs/health.md); admin drain,
offline and online; the audit trail. Device nodes are mknod'ed in a scratch directory as in
test_gpu_isolation.py; resets go to the fake nvidia-smi."""
import json
import os
import pwd
import subprocess
import time

import pytest

from conftest import BUILD, ROOT, wait_for
from gpu_nodes import FAKE_NVML, FIX, machine, make_nodes

FAKE_SMI = os.path.join(ROOT, "tests", "fakes", "nvidia-smi")
FAKE_CUDA = os.path.join(BUILD, "tests", "fakes", "libcuda.so.1")

pytestmark = pytest.mark.skipif(not os.path.exists(FAKE_NVML), reason="the fake NVML was not built")




class Machine:
    def __init__(self, d, tmp, name):
        self.d, self.events, self.resets = d, tmp / "events", tmp / "resets"
        self.gpus = sorted(machine(name)["gpus"], key=lambda g: g["bus_id"])

    def inject(self, line):
        with open(self.events, "a") as f:
            f.write(line + "\n")

    def gpu(self, i):
        code, g = self.d.api("GET", f"/v1/gpus/{i}")
        assert code == 200, g
        return g

    def wait_gpu(self, i, state, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            g = self.gpu(i)
            if g["state"] == state:
                return g
            time.sleep(0.05)
        raise AssertionError(f"GPU {i} never became {state}: {self.gpu(i)}")

    def audit(self, **q):
        qs = "&".join(f"{k}={v}" for k, v in q.items())
        code, a = self.d.api("GET", "/v1/audit" + ("?" + qs if qs else ""))
        assert code == 200, a
        return a["records"]


@pytest.fixture
def health_machine(fresh_daemon, tmp_path):
    def make(name="a100-pcie-4", extra="", scrub=False, env=None):
        dev = tmp_path / "dev"
        make_nodes(dev, name)
        (tmp_path / "events").write_text("")
        (tmp_path / "nocuda").mkdir()
        f = os.path.join(FIX, name)
        d = fresh_daemon(f"gpu:\n  backends: [nvml]\n  nvml_library: {FAKE_NVML}\n  proc_root: {f}/proc\n"
                         f"  sys_root: {f}/sys\n  dev_root: {dev}\n  cuda_search_root: {tmp_path}/nocuda\n"
                         f"  nvidia_smi: {FAKE_SMI}\n  health_interval_ms: 100\n  max_temperature_c: 85\n"
                         f"  scrub: {1 if scrub else 0}\n"
                         + (f"  libcuda: {FAKE_CUDA}\n" if scrub else "") + extra,
                         env={"FAKE_NVML_FIXTURE": f"{f}/machine.json", "FAKE_NVML_EVENTS": str(tmp_path / "events"),
                              "FAKE_SMI_DIR": f"{f}/smi", "FAKE_SMI_RESET_LOG": str(tmp_path / "resets"),
                              **(env or {})})
        assert "health monitor every 100 ms" in d.log()
        return Machine(d, tmp_path, name)
    return make


def run_on(m, *flags):
    p = m.d.rnx("job", "run", *flags, "sleep", "600", check=True)
    jid = p.stdout.strip()
    j = m.d.wait_status(jid, "RUNNING")
    return jid, [g["index"] for g in j["gpus"]]


def test_application_xid_leaves_the_gpu_healthy(health_machine):
    m = health_machine()
    jid, (g,) = run_on(m, "--gpu=1")
    m.inject(f"xid {g} 13")
    deadline = time.time() + 20
    while time.time() < deadline and m.gpu(g).get("health", {}).get("xid") != {"13": 1}:
        time.sleep(0.05)
    gj = m.gpu(g)
    assert gj["health"]["xid"] == {"13": 1}
    assert gj["state"] == "allocated" and gj["takes_jobs"] is True
    assert m.d.job(jid)["status"] == "RUNNING"
    assert f"gpu {g}: XID 13: graphics engine exception (an application error); action: app" in m.d.log()
    m.d.rnx("job", "stop", jid, check=True)
    m.d.wait(jid)


def test_xid79_fails_the_job_and_takes_the_gpu_offline(health_machine):
    m = health_machine()
    jid, (g,) = run_on(m, "--gpu=1")
    m.inject(f"xid {g} 79")
    job = m.d.wait(jid)
    assert job["status"] == "FAILED" and job["end_reason"] == "gpu_error"
    assert job["error"] == f"GPU {g} failed: XID 79: GPU has fallen off the bus"
    gj = m.wait_gpu(g, "offline")
    assert gj["state_reason"] == "XID 79: GPU has fallen off the bus" and gj["takes_jobs"] is False
    # nothing new lands on it; the three others serve
    ids = [run_on(m, "--gpu=1") for _ in range(3)]
    assert g not in [x for _, (x,) in ids]
    p = m.d.rnx("job", "run", "--gpu=1", "true", check=True)
    time.sleep(0.3)
    assert m.d.job(p.stdout.strip())["status"] == "QUEUED"
    # an admin brings it back
    out = m.d.rnx("gpu", "online", str(g), check=True).stdout
    # the waiting job takes it at once, before the answer is written
    assert out.startswith(f"GPU {g}: allocated; back in service")
    done = m.d.wait(p.stdout.strip())
    assert done["status"] == "COMPLETED" and [x["index"] for x in done["gpus"]] == [g]
    for jid2, _ in ids:
        m.d.rnx("job", "stop", jid2, check=True)
        m.d.wait(jid2)


def test_xid48_then_63_drains_resets_and_returns_the_gpu(health_machine):
    m = health_machine()
    jid, (g,) = run_on(m, "--gpu=1")
    # both in one write: the 63 must find the GPU still waiting for the 48's reset (a 63 that
    # came after the GPU was back would rightly be a new drain-and-reset)
    m.inject(f"xid {g} 48\nxid {g} 63")
    job = m.d.wait(jid)  # a double-bit ECC error costs the job its work
    assert job["status"] == "FAILED" and job["error"] == f"GPU {g} failed: XID 48: double-bit ECC error"
    # idle now: reset through nvidia-smi, checked through NVML, and back in service
    gj = m.wait_gpu(g, "available")
    assert gj["health"]["xid"] == {"48": 1, "63": 1}
    assert open(m.resets).read().splitlines() == [f"reset {g}"]
    log = m.d.log()
    assert f"gpu {g}: idle: resetting it" in log and f"gpu {g}: reset and checked: AVAILABLE" in log
    # a drain-then-reset XID waits for the running job to finish before the reset
    jid, (g2,) = run_on(m, "--gpu-ids", str(g))
    m.inject(f"xid {g2} 63")
    m.wait_gpu(g2, "resetting")
    time.sleep(0.3)
    assert m.d.job(jid)["status"] == "RUNNING" and open(m.resets).read().count("reset") == 1
    m.d.rnx("job", "stop", jid, check=True)
    m.d.wait(jid)
    m.wait_gpu(g2, "available")
    assert open(m.resets).read().count("reset") == 2


def test_failed_reset_takes_the_gpu_offline(health_machine, tmp_path):
    m = health_machine()
    m.d.stop()  # the daemon's environment is set at start: restart it with a GPU the fake cannot reset
    m.d.extra_env["FAKE_SMI_RESET_FAIL"] = "1"
    m.d.start()
    m.inject("xid 1 48")
    gj = m.wait_gpu(1, "offline")
    assert gj["state_reason"].startswith("reset failed: ") and "In use by another client" in gj["state_reason"]


def test_preemptible_job_on_a_failed_gpu_reruns_elsewhere(health_machine):
    m = health_machine()
    jid, (g,) = run_on(m, "--gpu=1", "--preemptible")
    m.inject(f"xid {g} 79")
    # back in the queue (PREEMPTED) and running again on another GPU, all within 30 s
    deadline = time.time() + 30
    while time.time() < deadline:
        j = m.d.job(jid)
        if j["preemptions"] == 1 and j["status"] == "RUNNING":
            break
        time.sleep(0.02)
    assert j["preemptions"] == 1 and j["status"] == "RUNNING", j
    assert [x["index"] for x in j["gpus"]] != [g]
    assert f"job {jid} PREEMPTED" in m.d.log()
    m.d.rnx("job", "stop", jid, check=True)
    m.d.wait(jid)


def test_suspended_job_on_a_failed_gpu_is_thawed_to_hear_sigterm(health_machine):
    """A suspended job whose GPU fails is stopped as any other (re-queued when preemptible), but
    thawed first: frozen, it would hear SIGTERM only once the grace period's SIGKILL ended it."""
    m = health_machine()
    trap = "trap 'echo term >> /work/t; exit 0' TERM; : > /work/trapped; while :; do sleep 0.05; done"
    jid = m.d.rnx("job", "run", "--gpu=1", "--preemptible", "sh", "-c", trap, check=True).stdout.strip()
    (g,) = [x["index"] for x in m.d.wait_status(jid, "RUNNING")["gpus"]]
    wait_for(lambda: os.path.exists(os.path.join(m.d.work(jid), "trapped")), "the shell's trap set")
    m.d.rnx("job", "suspend", jid, check=True)
    m.inject(f"xid {g} 79")
    deadline = time.time() + 60
    while time.time() < deadline and not m.d.job(jid)["preemptions"]:
        time.sleep(0.05)
    j = m.d.wait_status(jid, "RUNNING", timeout=60)
    assert j["preemptions"] == 1, j
    assert open(os.path.join(m.d.work(jid), "t")).read() == "term\n"   # its trap ran: it heard SIGTERM
    code, full = m.d.api("GET", f"/v1/jobs/{jid}?detail=1")
    assert any(e["event"] == "resumed" and e.get("detail") == "thawed to be stopped"
               for e in full["detail"]["events"]), full["detail"]["events"]
    m.d.rnx("job", "stop", jid, check=True)
    m.d.wait(jid)


def test_hot_gpu_takes_no_new_jobs_until_it_cools(health_machine):
    m = health_machine()
    for i in range(4):
        m.inject(f"temp {i} 90")
    deadline = time.time() + 20
    while time.time() < deadline and not all(m.gpu(i).get("health", {}).get("hot") for i in range(4)):
        time.sleep(0.05)
    p = m.d.rnx("job", "run", "--gpu=1", "true", check=True)
    jid = p.stdout.strip()
    time.sleep(0.4)
    assert m.d.job(jid)["status"] == "QUEUED"
    m.inject("temp 2 70")
    j = m.d.wait(jid)
    assert j["status"] == "COMPLETED" and [g["index"] for g in j["gpus"]] == [2]


def as_nobody():
    nobody = pwd.getpwnam("nobody")

    def drop():
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    return drop


def test_admin_drain_offline_online(health_machine):
    m = health_machine()
    jid, (g,) = run_on(m, "--gpu=1")
    # not for ordinary users
    p = subprocess.run([os.path.join(BUILD, "rnx"), "--socket", m.d.sock, "gpu", "drain", str(g)],
                       capture_output=True, text=True, preexec_fn=as_nobody(), timeout=30)
    assert p.returncode != 0
    assert "gpu drain is for admins: root, or members of the group named by server.admin_group (not set)" in p.stderr
    # drain: the running job finishes, nothing new comes
    out = m.d.rnx("gpu", "drain", str(g), check=True).stdout
    assert out == f"GPU {g}: draining (drained by uid 0); its running jobs finish; it takes no new ones\n" \
                  f"jobs on it: {jid}\n"
    assert m.d.job(jid)["status"] == "RUNNING"
    # offline while a job runs: refused without --force
    p = m.d.rnx("gpu", "offline", str(g))
    assert p.returncode != 0 and f"GPU {g} runs 1 job ({jid[:8]}): drain it and wait, or --force to stop it" in p.stderr
    p = m.d.rnx("--json", "gpu", "offline", "--force", str(g), check=True)
    o = json.loads(p.stdout)
    assert o["state"] == "offline" and o["jobs_affected"] == [jid]
    job = m.d.wait(jid)
    assert job["status"] == "FAILED" and job["error"] == f"GPU {g} failed: taken offline by uid 0"
    # it stays offline across a restart, until an admin brings it back
    m.d.stop()
    m.d.start()
    assert m.gpu(g)["state"] == "offline"
    m.d.rnx("gpu", "online", str(g), check=True)
    assert m.gpu(g)["state"] == "available"
    p = m.d.rnx("gpu", "drain", "7")
    assert p.returncode != 0 and "no GPU '7'" in p.stderr


def test_failed_scrub_keeps_the_gpu_degraded_across_a_restart(health_machine, tmp_path):
    """A GPU whose memory could not be zeroed may still hold its last tenant's data: it is
    DEGRADED, and a restart of the daemon does not bring it back into service; only an admin
    does (docs/health.md)."""
    if not os.path.exists(FAKE_CUDA):
        pytest.skip("the fake CUDA driver was not built")
    uuid = sorted(machine("a100-pcie-4")["gpus"], key=lambda g: g["bus_id"])[0]["uuid"]
    m = health_machine(scrub=True, env={"FAKE_CUDA_FAIL": f"cuMemsetD8_v2@{uuid}=CUDA_ERROR_LAUNCH_FAILED",
                                        "FAKE_CUDA_LOG": str(tmp_path / "cuda.log")})
    p = m.d.rnx("job", "run", "--gpu-ids=0", "true", check=True)
    job = m.d.wait(p.stdout.strip())
    assert job["status"] == "COMPLETED" and [g["index"] for g in job["gpus"]] == [0]
    g = m.wait_gpu(0, "degraded")
    assert g["takes_jobs"] is False and "memory scrub failed" in g["state_reason"], g
    m.d.stop()
    m.d.start()
    g = m.gpu(0)
    assert g["state"] == "degraded" and g["takes_jobs"] is False and "memory scrub failed" in g["state_reason"], g
    assert m.gpu(1)["state"] == "available"
    # a job asking for that GPU by name is refused; an admin vouches for it and it serves again
    p = m.d.rnx("job", "run", "--gpu-ids=0", "true")
    assert p.returncode != 0 and "--gpu-ids: GPU 0 is degraded since " in p.stderr, p.stderr
    assert f"(memory scrub failed: {uuid}: " in p.stderr and \
        "it cannot be granted until an admin runs 'rnx gpu online 0'" in p.stderr, p.stderr
    m.d.rnx("gpu", "online", "0", check=True)
    m.d.stop()
    m.d.start()
    assert m.gpu(0)["state"] in ("available", "scrubbing")


def test_audit_trail_of_a_session(health_machine):
    m = health_machine()
    t0 = time.time()
    jid, (g,) = run_on(m, "--gpu=1")
    m.d.rnx("job", "stop", jid, check=True)
    m.d.wait(jid)
    jid2, (g2,) = run_on(m, "--gpu=1")
    m.inject(f"xid {g2} 13")
    deadline = time.time() + 20
    while time.time() < deadline and not [r for r in m.audit() if r["action"] == "xid"]:
        time.sleep(0.05)
    m.d.rnx("gpu", "drain", str(g), check=True)
    m.d.rnx("job", "stop", jid2, check=True)
    m.d.wait(jid2)
    recs = m.audit()[::-1]  # newest first: oldest first here
    acts = [(r["action"], r["gpu"], r["job"]) for r in recs]
    assert acts[:2] == [("allocate", g, jid), ("release", g, jid)]
    assert ("allocate", g2, jid2) in acts and ("release", g2, jid2) in acts
    rel = next(r for r in recs if r["action"] == "release" and r["job"] == jid)
    assert rel["uid"] == 0 and rel["memory_mb"] == 40960 and rel["duration_ms"] >= 0
    assert rel["gpu_uuid"] == m.gpus[g]["uuid"]
    x = next(r for r in recs if r["action"] == "xid")
    assert x["gpu"] == g2 and x["detail"] == "XID 13: graphics engine exception (an application error); action app"
    st = next(r for r in recs if r["action"] == "state")
    assert st["gpu"] == g and st["uid"] == 0 and st["detail"] == "in service -> draining: drained by uid 0"
    assert any(r["action"] == "drain" and r["uid"] == 0 and r["gpu"] == g for r in recs)
    # filters
    assert {r["gpu"] for r in m.audit(gpu=g)} == {g}
    assert {r["job"] for r in m.audit(job=jid[:8])} == {jid}
    assert m.audit(user="nobody") == []
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + 3600))
    assert m.audit(since=since) == []
    out = m.d.rnx("audit", "--gpu", str(g), check=True).stdout
    assert "allocate" in out and "drain" in out
    p = subprocess.run([os.path.join(BUILD, "rnx"), "--socket", m.d.sock, "audit"], capture_output=True, text=True,
                       preexec_fn=as_nobody(), timeout=30)
    assert p.returncode != 0 and "the audit trail is for admins" in p.stderr
