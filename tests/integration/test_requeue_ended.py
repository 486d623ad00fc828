"""rnx job requeue of an ended job, as Slurm's scontrol requeue (and requeuehold) of a finished
batch job (docs/batch.md, "Requeue of an ended job"): a COMPLETED, FAILED, STOPPED or CANCELED
job goes back to the queue (HELD with --hold) with its id, history, /work and log, its runs
counted one more, its earlier end in a `requeued` event; what its end decided stays decided, the
jobs still waiting on it wait for its next end; refused (409) for a workflow's job, an array's
task, a job whose dependencies never held and one whose directory is gone; 404 for a deleted
one; the limits of a submission apply; a kill -9 of joblet keeps it all.

One daemon for the module (a simulated 4-GPU machine); the tests that kill or reconfigure the
daemon have their own."""
import datetime
import os
import shutil
import subprocess
import time

import pytest

from conftest import ROOT, submit_array, tasks_of, wait_array
from test_limits import job_cgroup_dirs

FIX = os.path.join(ROOT, "tests", "fixtures")
CONFIG = f"gpu:\n  fixture: {FIX}/a100-pcie-4/machine.json\n  scrub: 0\n"


@pytest.fixture(scope="module")
def d():
    from conftest import Daemon, need_root
    need_root()
    dm = Daemon(CONFIG).start()
    yield dm
    dm.cleanup()


def explain(d, jid):
    """A job's state, events, shim.log and joblet's log's end: what a failed assertion prints."""
    code, j = d.api("GET", f"/v1/jobs/{jid}?detail=1")
    try:
        with open(os.path.join(d.state, "jobs", jid, "shim.log"), errors="replace") as f:
            shim = f.read()[-3000:]
    except OSError as e:
        shim = str(e)
    return (f"{j['status']}, run {j['preemptions'] + 1}, error {j.get('error')!r}; events "
            f"{[(e['event'], e['detail']) for e in j['detail']['events']]}\nshim.log: {shim}\n"
            f"joblet: {d.log()[-3000:]}")


def requeued_events(d, jid):
    code, j = d.api("GET", f"/v1/jobs/{jid}?detail=1")
    assert code == 200, j
    return [e for e in j["detail"]["events"] if e["event"] == "requeued"]


def ended_events(d, jid):
    code, j = d.api("GET", f"/v1/jobs/{jid}?detail=1")
    assert code == 200, j
    return [e for e in j["detail"]["events"] if e["event"] == "ended"]


def ms(stamp):
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000


def test_completed_job_runs_again_with_its_id_history_and_log(d):
    jid = d.submit("sh", "-c", "echo run >> /work/runs; wc -l < /work/runs")
    first = d.wait(jid)
    assert (first["status"], first["preemptions"]) == ("COMPLETED", 0), first
    p = d.rnx("job", "requeue", jid)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"requeued {jid} (") and "stopping" not in p.stdout, p.stdout
    j = d.wait(jid)
    assert (j["status"], j["exit_code"], j["preemptions"]) == ("COMPLETED", 0, 1), j
    # /work kept (its file has two lines now), the log of the new run after the first's
    assert d.output(jid) == "1\n2\n"
    rq = requeued_events(d, jid)
    assert len(rq) == 1 and rq[0]["uid"] == 0, rq
    detail = rq[0]["detail"]
    assert detail.startswith("requeued by uid 0 after its end (run 1: COMPLETED (exit), exit code 0, ended "
                             f"{first['ended_at']}"), detail
    assert len(ended_events(d, jid)) == 2
    # what the first run used is kept there (the job's usage is the new run's now)
    u = first["usage"]
    assert (f"CPU {u['cpu_ns'] / 1e9:.2f} s, memory peak {u['memory_peak_bytes'] / 1048576:.1f} MiB, "
            f"read {u['io_read_bytes'] / 1048576:.1f} MiB") in detail and ", ran " in detail, (detail, u)
    assert u["memory_peak_bytes"] > 0, u
    # rnx job status --detail still says how the earlier run ended
    text = d.rnx("job", "status", "--detail", jid, check=True).stdout
    assert "run 1: COMPLETED (exit), exit code 0" in text, text


def test_failed_job_keeps_its_earlier_exit_code_in_its_history(d):
    jid = d.submit("sh", "-c", "exit 3")
    assert d.wait(jid)["status"] == "FAILED"
    code, j = d.api("POST", f"/v1/jobs/{jid}/requeue")
    assert code == 200 and j["status"] in ("QUEUED", "RUNNING", "FAILED"), j
    assert j["exit_code"] is None or j["status"] == "FAILED", j  # the earlier run's end went with it
    j = d.wait(jid)
    assert (j["status"], j["exit_code"], j["preemptions"]) == ("FAILED", 3, 1), j
    assert "run 1: FAILED (exit), exit code 3" in requeued_events(d, jid)[0]["detail"]


def test_canceled_job_that_never_started_is_queued_and_runs(d):
    jid = d.submit("echo", "ran", hold=True)
    assert d.api("POST", f"/v1/jobs/{jid}/cancel")[0] == 200
    j = d.wait(jid)
    assert (j["status"], j["started_at"]) == ("CANCELED", None), j
    code, j = d.api("POST", f"/v1/jobs/{jid}/requeue")
    assert code == 200, j
    j = d.wait(jid)
    assert (j["status"], j["preemptions"]) == ("COMPLETED", 1), j
    assert d.output(jid) == "ran\n"
    detail = requeued_events(d, jid)[0]["detail"]
    assert "run 1: CANCELED" in detail and "never started" in detail, detail


def test_stopped_job_requeued_held_waits_until_released(d):
    jid = d.submit("sh", "-c", "echo up; exec sleep 600")
    d.wait_status(jid, "RUNNING")
    d.rnx("job", "stop", jid, check=True)
    assert d.wait(jid)["status"] == "STOPPED"
    p = d.rnx("job", "requeue", "--hold", jid)
    assert p.returncode == 0 and p.stdout.startswith(f"requeued {jid} (HELD)"), (p.stdout, p.stderr)
    j = d.job(jid)
    assert (j["status"], j["preemptions"], j["ended_at"], j["exit_code"]) == ("HELD", 1, None, None), j
    assert j["wait_reason"].startswith("held by uid 0"), j
    detail = requeued_events(d, jid)[0]["detail"]
    assert "run 1: STOPPED (stopped)" in detail and detail.endswith("held until released"), detail
    d.rnx("job", "release", jid, check=True)
    d.wait_status(jid, "RUNNING")
    d.rnx("job", "stop", jid, check=True)
    assert d.wait(jid)["status"] == "STOPPED"
    assert d.output(jid) == "up\nup\n"


def test_refusals_name_why(d):
    # an array's task: its array's counts were taken from its end
    a = submit_array(d, "0-1", "true")
    wait_array(d, a["id"])
    task = tasks_of(d, a["id"])[0]["id"]
    code, e = d.api("POST", f"/v1/jobs/{task}/requeue")
    assert code == 409 and "an ended task is not requeued" in e["error"]["message"], e
    # a workflow's job: its workflow's state was decided on its end
    code, wf = d.api("POST", "/v1/workflows", {"name": "rq", "jobs": [{"name": "a", "request": {"command": "true"}}]})
    assert code == 201, wf
    wj = d.api("GET", f"/v1/workflows/{wf['id']}")[1]["jobs"][0]["job_id"]
    d.wait(wj)
    code, e = d.api("POST", f"/v1/jobs/{wj}/requeue?hold=1")
    assert code == 409 and "an ended workflow's job is not requeued" in e["error"]["message"], e
    assert d.job(wj)["status"] == "COMPLETED"
    # a job canceled because its dependency cannot hold
    bad = d.submit("false")
    d.wait(bad)
    dep = d.submit("true", after=[{"job": bad, "state": "ok"}])
    assert d.wait(dep)["status"] == "CANCELED"
    code, e = d.api("POST", f"/v1/jobs/{dep}/requeue")
    assert code == 409 and "ended before its dependencies (--after) held" in e["error"]["message"], e
    # a job whose directory is gone
    gone = d.submit("true")
    d.wait(gone)
    shutil.rmtree(os.path.join(d.state, "jobs", gone))
    code, e = d.api("POST", f"/v1/jobs/{gone}/requeue")
    assert code == 409 and "cannot run again: its directory" in e["error"]["message"], e
    assert d.job(gone)["status"] == "COMPLETED" and requeued_events(d, gone) == []
    # a deleted job
    old = d.submit("true")
    d.wait(old)
    assert d.api("DELETE", f"/v1/jobs/{old}")[0] in (200, 204)
    assert d.api("POST", f"/v1/jobs/{old}/requeue")[0] == 404


def test_what_its_end_decided_stays_and_who_still_waits_waits_for_its_next_end(d):
    a = d.submit("true")
    d.wait(a)
    gate = d.submit("true", hold=True)
    ok = d.submit("true", after=[{"job": a, "state": "ok"}])           # let go by a's end
    notok = d.submit("true", after=[{"job": a, "state": "notok"}])     # canceled by a's end
    both = d.submit("echo", "both", after=[{"job": a, "state": "ok"}, {"job": gate, "state": "ok"}])
    assert d.wait(ok)["status"] == "COMPLETED" and d.wait(notok)["status"] == "CANCELED"
    assert d.job(both)["status"] == "PENDING"
    assert d.api("POST", f"/v1/jobs/{a}/requeue?hold=1")[0] == 200
    d.rnx("job", "release", gate, check=True)
    assert d.wait(gate)["status"] == "COMPLETED"
    # a waits HELD: it has not ended (again), so `both` waits for it
    j = d.job(both)
    assert j["status"] == "PENDING" and a[:8] in (j["wait_reason"] or ""), j
    assert d.job(ok)["status"] == "COMPLETED" and d.job(notok)["status"] == "CANCELED"
    d.rnx("job", "release", a, check=True)
    assert d.wait(a)["status"] == "COMPLETED"
    assert d.wait(both)["status"] == "COMPLETED" and d.output(both) == "both\n"
    assert d.job(ok)["preemptions"] == 0 and d.job(notok)["status"] == "CANCELED"


def test_gpu_time_of_the_earlier_run_is_kept_once(d):
    jid = d.submit("sleep", "0.3", gpu_count=2)
    first = d.wait(jid)
    assert first["status"] == "COMPLETED" and len(first["gpus"]) == 2, first
    run1 = (ms(first["ended_at"]) - ms(first["started_at"])) / 1000.0 * 2
    assert first["usage"]["gpu_ms_before"] == 0
    assert d.api("POST", f"/v1/jobs/{jid}/requeue")[0] == 200
    j = d.wait(jid)
    assert (j["status"], j["preemptions"]) == ("COMPLETED", 1), explain(d, jid)
    assert j["usage"]["gpu_ms_before"] == round(run1 * 1000), (j["usage"], run1)
    run2 = (ms(j["ended_at"]) - ms(j["started_at"])) / 1000.0 * len(j["gpus"])
    assert "GPU-seconds" in requeued_events(d, jid)[0]["detail"]
    # the History page's sum for its owner counts both runs, each once
    code, h = d.api("GET", "/v1/history?hours=1")
    assert code == 200, h
    per_gpu = sum(g["gpu_seconds"] for g in h["per_gpu"])
    per_user = sum(u["gpu_seconds"] for u in h["per_user"])
    assert per_user - per_gpu == pytest.approx(run1, abs=0.01), (h["per_user"], h["per_gpu"], run1, run2)


def frozen_helper():
    """A `sleep` frozen in a v1 freezer cgroup of the test's own: killed, it ends only once
    thawed, so a cgroup it is moved into stays busy (rmdir: EBUSY) until then. None where no v1
    freezer is mounted."""
    base = "/sys/fs/cgroup/freezer"
    if not os.path.exists(os.path.join(base, "cgroup.procs")):
        return None, None
    fz = os.path.join(base, f"jt-tidy-{os.getpid()}")
    os.makedirs(fz, exist_ok=True)
    p = subprocess.Popen(["sleep", "600"])
    with open(os.path.join(fz, "cgroup.procs"), "w") as f:
        f.write(str(p.pid))
    with open(os.path.join(fz, "freezer.state"), "w") as f:
        f.write("FROZEN")
    return p, fz


def thaw_and_end(p, fz):
    p.kill()
    with open(os.path.join(fz, "freezer.state"), "w") as f:
        f.write("THAWED")
    p.wait(timeout=30)
    os.rmdir(fz)


class Frozen:
    """frozen_helper's process, thawed and ended once (thaw), or at the test's end."""

    def __init__(self):
        self.p, self.fz = frozen_helper()

    def thaw(self):
        if self.p is not None:
            thaw_and_end(self.p, self.fz)
            self.p = None


@pytest.fixture
def frozen():
    f = Frozen()
    if f.p is None:
        pytest.skip("no v1 freezer here to keep a cgroup busy (cgroup v2 only): the race is covered by "
                    "test_gpu_time_of_the_earlier_run_is_kept_once's timing only")
    yield f
    f.thaw()


def ended_with_frozen_in_its_cgroups(dd, frozen):
    """A `sleep 1` job with the frozen process moved into its v1 cgroups as it runs, waited
    until it ended: its shim's tidy-up is still going (a second a busy cgroup). (id, dirs)"""
    jid = dd.submit("sleep", "1")
    dd.wait_status(jid, "RUNNING")
    dirs = [x for x in job_cgroup_dirs(dd, jid) if "/unified" not in x and os.path.isdir(x)]
    assert dirs, job_cgroup_dirs(dd, jid)
    for x in dirs:
        with open(os.path.join(x, "cgroup.procs"), "w") as f:
            f.write(str(frozen.p.pid))
    assert dd.wait(jid)["status"] == "COMPLETED"
    return jid, dirs


def requeue_and_thaw(dd, jid, frozen):
    """Requeued at once (the shim gives a busy cgroup up after a second, exec/cgroup.c
    DESTROY_WAIT_MS), the job as it waits then, the frozen process ended."""
    code = dd.api("POST", f"/v1/jobs/{jid}/requeue")[0]
    j = dd.job(jid)
    frozen.thaw()
    assert code == 200
    return j


def test_a_requeued_job_waits_for_its_run_befores_tidy_up(d, frozen):
    """The shim of a run that ended tidies up after telling its end: it removes the job's
    cgroups, killing what is left in them. A requeue at once must not start the next run in those
    cgroups before that shim is done (the next run's shim was killed with them: FAILED, 'ended
    without recording how the job ended'). A process of the test's, frozen, in the job's cgroups
    keeps the tidy-up going (a second a cgroup) while the job is requeued."""
    jid, _ = ended_with_frozen_in_its_cgroups(d, frozen)
    j = requeue_and_thaw(d, jid, frozen)
    # its run before was still being tidied up (the frozen process): it waited, and said why
    assert j["status"] in ("QUEUED", "PENDING") and "tidied up" in (j["wait_reason"] or ""), explain(d, jid)
    j = d.wait(jid)
    assert (j["status"], j["preemptions"], j.get("error")) == ("COMPLETED", 1, None), explain(d, jid)


def test_a_job_requeued_after_a_restart_waits_for_the_tidy_up_the_last_joblet_left(fresh_daemon, frozen):
    """The same across a restart: the new joblet finds the shim of an ended job still tidying up
    (core/orphans.c) and watches it, so that a requeue at once waits for its end; it started the
    next run in the cgroups that shim was removing (FAILED: cgroup.procs: No such file or
    directory). Found by a helper's review."""
    dd = fresh_daemon(CONFIG)
    jid, _ = ended_with_frozen_in_its_cgroups(dd, frozen)
    dd.stop()
    dd.start()
    j = requeue_and_thaw(dd, jid, frozen)
    if "still tidies up after its end" in dd.log():  # (the restart took less than the tidy-up)
        assert j["status"] in ("QUEUED", "PENDING") and "tidied up" in (j["wait_reason"] or ""), explain(dd, jid)
    j = dd.wait(jid)
    if j["status"] == "FAILED" and "holds processes" in (j.get("error") or ""):
        # a restart slower than the whole tidy-up (a second a busy cgroup: a loaded machine, the
        # sanitizers): the shim had given the busy cgroups up and ended before the requeue, and the
        # next run, started before the thaw, was refused them (as it should be); once they are empty
        # the run after makes them anew
        assert dd.api("POST", f"/v1/jobs/{jid}/requeue")[0] == 200
        j = dd.wait(jid)
        assert (j["status"], j["preemptions"], j.get("error")) == ("COMPLETED", 2, None), explain(dd, jid)
        return
    assert (j["status"], j["preemptions"], j.get("error")) == ("COMPLETED", 1, None), explain(dd, jid)


def test_a_cgroup_its_run_before_left_busy_and_empty_since_is_made_anew(d, frozen):
    """The shim gives a job's cgroup up after a second of killing what is in it (a process that
    does not die: here the test's, frozen) and says so in shim.log; the directory stays. Once
    empty, a requeued run of the job removes it and makes its own (it failed: 'cgroup ... already
    exists'); one still busy is refused, not joined."""
    first, dirs = ended_with_frozen_in_its_cgroups(d, frozen)
    shim_log = os.path.join(d.state, "jobs", first, "shim.log")
    deadline = time.time() + 60
    while not (os.path.exists(shim_log) and "cgroup cleanup" in open(shim_log).read()):
        assert time.time() < deadline, "the shim never said it gave the busy cgroup up"
        time.sleep(0.1)
    assert "still busy (1 process left in it)" in open(shim_log).read()
    # still busy: a requeued run is refused, not joined to the frozen process
    assert d.api("POST", f"/v1/jobs/{first}/requeue")[0] == 200
    j = d.wait(first)
    assert j["status"] == "FAILED" and "holds processes" in (j["error"] or ""), explain(d, first)
    frozen.thaw()
    assert all(os.path.isdir(x) for x in dirs)  # left, empty now
    assert d.api("POST", f"/v1/jobs/{first}/requeue")[0] == 200
    j = d.wait(first)
    assert (j["status"], j["preemptions"]) == ("COMPLETED", 2), explain(d, first)


def test_limits_of_a_submission_apply(fresh_daemon):
    dd = fresh_daemon("limits:\n  max_queued_per_user: 1\n")
    done = dd.submit("true")
    dd.wait(done)
    waiting = dd.submit("true", hold=True)
    code, e = dd.api("POST", f"/v1/jobs/{done}/requeue")
    assert code == 429 and "limits.max_queued_per_user is 1" in e["error"]["message"], e
    assert dd.job(done)["status"] == "COMPLETED" and requeued_events(dd, done) == []
    assert dd.api("POST", f"/v1/jobs/{waiting}/cancel")[0] == 200
    assert dd.api("POST", f"/v1/jobs/{done}/requeue")[0] == 200


def test_a_requeued_ended_job_survives_a_kill_9(fresh_daemon):
    dd = fresh_daemon()
    a = dd.submit("echo", "a")
    dd.wait(a)
    gate = dd.submit("true", hold=True)
    both = dd.submit("true", after=[{"job": a, "state": "ok"}, {"job": gate, "state": "ok"}])
    assert dd.api("POST", f"/v1/jobs/{a}/requeue?hold=1")[0] == 200
    dd.kill9()
    dd.start()
    j = dd.job(a)
    assert (j["status"], j["preemptions"], j["ended_at"]) == ("HELD", 1, None), j
    assert len(requeued_events(dd, a)) == 1
    dd.rnx("job", "release", gate, check=True)
    dd.wait(gate)
    assert dd.job(both)["status"] == "PENDING"
    dd.rnx("job", "release", a, check=True)
    assert dd.wait(a)["status"] == "COMPLETED" and dd.output(a) == "a\na\n"
    assert dd.wait(both)["status"] == "COMPLETED"
