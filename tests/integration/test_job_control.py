"""Job control as a Slurm user expects it (docs/batch.md): hold, release, update, suspend,
resume and requeue, each observed where it happens (the queue's order, the cgroup freezer and
the job's own processes, the shim's time limit), each refused with its 409 (or 403) where the
state or the caller does not allow it, each in the job's history (rnx job status --detail), and
a held or suspended job kept so over a kill -9 of joblet.

One daemon for the module (a simulated 4-GPU machine): each test ends the jobs it started."""
import datetime
import math
import os
import re
import sqlite3
import time

import pytest

from conftest import DEAF, ROOT, rnx_as, wait_deaf, wait_for

FIX = os.path.join(ROOT, "tests", "fixtures")
CONFIG = f"gpu:\n  fixture: {FIX}/a100-pcie-4/machine.json\n  scrub: 0\n"
# a counter written every 50 ms to /work/n: it stops advancing while the job is frozen
COUNTER = ["sh", "-c", "i=0; while :; do i=$((i+1)); echo $i > /work/n.tmp; mv /work/n.tmp /work/n; sleep 0.05; done"]
USER = 65534  # nobody: a job owner who is not root


@pytest.fixture(scope="module")
def d():
    from conftest import Daemon, need_root
    need_root()
    dm = Daemon(CONFIG).start()
    yield dm
    dm.cleanup()


def events(d, jid):
    code, j = d.api("GET", f"/v1/jobs/{jid}?detail=1")
    assert code == 200, j
    return [(e["event"], e.get("uid"), e.get("detail") or "") for e in j["detail"]["events"]]


def detail_text(d, jid):
    return d.rnx("job", "status", "--detail", jid, check=True).stdout


def end(d, *jids):
    for jid in jids:
        st = d.job(jid)["status"]
        if st not in ("STOPPED", "COMPLETED", "FAILED", "CANCELED"):
            d.api("POST", f"/v1/jobs/{jid}/kill")
    for jid in jids:
        d.wait(jid)


def blocker(d):
    """A job on all 4 GPUs: --gpu=1 jobs wait QUEUED behind it."""
    jid = d.submit("sleep", "600", gpu_count=4)
    d.wait_status(jid, "RUNNING")
    return jid


def counter(d, jid):
    with open(os.path.join(d.work(jid), "n")) as f:
        return int(f.read().strip() or 0)


def running_counter(d, **fields):
    jid = d.submit(*COUNTER, **fields)
    d.wait_status(jid, "RUNNING")
    deadline = time.time() + 30
    while not os.path.exists(os.path.join(d.work(jid), "n")) and time.time() < deadline:
        time.sleep(0.05)
    return jid


def freeze_file(d, jid):
    """The job's cgroup2 cgroup.freeze (v2, or hybrid's unified tree)."""
    for base in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        p = os.path.join(base, d.cgroup_root, d.job_cgroup(jid, 0), "cgroup.freeze")
        if os.path.exists(p):
            return p
    pytest.skip("no cgroup2 cgroup.freeze for the job on this host")


def frozen(d, jid):
    events_file = os.path.join(os.path.dirname(freeze_file(d, jid)), "cgroup.events")
    with open(events_file) as f:
        return dict(line.split() for line in f)["frozen"] == "1"


def advances(d, jid):
    """Whether the job's counter moves on: polled until it does, for up to 30 s (a loaded machine
    may run the job late; a job that runs moves it within ms)."""
    a = counter(d, jid)
    deadline = time.time() + 30
    while time.time() < deadline:
        if counter(d, jid) > a:
            return True
        time.sleep(0.02)
    return False


def stands_still(d, jid, wait=0.5):
    """Whether the job's counter stays where it is for wait seconds."""
    a = counter(d, jid)
    time.sleep(wait)
    return counter(d, jid) == a


# ---- hold / release ----------------------------------------------------------------------

def test_hold_takes_a_job_out_of_the_queue_and_release_puts_it_back_behind_those_waiting(d):
    """A released job joins the queue from its release (as Slurm counts a released job's age): it
    goes behind those that waited meanwhile, not back in its old place (a job banked held and
    released at will went before everyone who came since: hostile tester, h-hsched)."""
    blk = blocker(d)
    a = d.submit("true", gpu_count=1)
    b = d.submit("true", gpu_count=1)
    assert d.job(a)["queue_position"] == 1 and d.job(b)["queue_position"] == 2
    p = d.rnx("job", "hold", a)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"held {a} (HELD)\n"
    j = d.job(a)
    assert j["status"] == "HELD" and j["queue_position"] is None
    assert j["wait_reason"] == f"held by uid 0: it waits until released (rnx job release {a[:8]})"
    assert d.job(b)["queue_position"] == 1  # the held job is not in the scheduler's input
    assert "HELD" in d.rnx("job", "list", "--status", "HELD", check=True).stdout
    p = d.rnx("job", "release", a)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"released {a} (QUEUED)\n"
    # behind b now, which waited meanwhile
    assert (d.job(a)["status"], d.job(a)["queue_position"]) == ("QUEUED", 2)
    assert d.job(b)["queue_position"] == 1
    evs = events(d, a)
    assert ("held", 0, "held by uid 0 (was QUEUED)") in evs
    assert ("released", 0, "hold released by uid 0: QUEUED") in evs
    text = detail_text(d, a)
    assert "held       held by uid 0 (was QUEUED)" in text
    assert "released   hold released by uid 0: QUEUED" in text
    end(d, blk)
    assert d.wait(a)["status"] == "COMPLETED" and d.wait(b)["status"] == "COMPLETED"


def test_a_listing_by_state_finds_each_job_in_it(d):
    """GET /v1/jobs?status=S (rnx job list --status S) for every state jobs are in at once: the
    active ones (RUNNING, SUSPENDED, QUEUED behind the GPUs, SCHEDULED) are picked from the lists
    of the queue and of the jobs holding room (api/jobs_list.c), the others (PENDING, HELD,
    COMPLETED) from every job: each listing holds each job in that state, and only such jobs."""
    b = blocker(d)
    run = running_counter(d)
    sus = running_counter(d)
    code, r = d.api("POST", f"/v1/jobs/{sus}/suspend")
    assert code == 200, r
    queued = d.submit("true", gpu_count=1)
    sched = d.submit("true", schedule_at="2030-01-01T00:00:00Z")
    pend = d.submit("true", after=[{"job": b, "state": "ok"}])
    held = d.submit("true", hold=True)
    done = d.run("true")[0]["id"]
    want = {"RUNNING": {b, run}, "SUSPENDED": {sus}, "QUEUED": {queued}, "SCHEDULED": {sched}, "PENDING": {pend},
            "HELD": {held}, "COMPLETED": {done}}
    try:
        for st, ids in want.items():
            code, r = d.api("GET", f"/v1/jobs?status={st}")
            assert code == 200, r
            assert ids <= {j["id"] for j in r["jobs"]}, (st, r)
            assert {j["status"] for j in r["jobs"]} == {st}, (st, r)
        assert queued[:8] in d.rnx("job", "list", "--status", "queued", check=True).stdout
    finally:
        d.api("POST", f"/v1/jobs/{sus}/resume")
        for jid in (queued, sched, pend, held):
            d.api("POST", f"/v1/jobs/{jid}/cancel")
        end(d, b, run, sus)


def test_hold_and_release_refusals_name_the_state(d):
    run = d.submit("sleep", "600")
    d.wait_status(run, "RUNNING")
    code, e = d.api("POST", f"/v1/jobs/{run}/hold")
    assert code == 409
    assert e["error"]["message"] == f"job {run} is RUNNING; only a pending, scheduled, queued or preempted job can be held"
    code, e = d.api("POST", f"/v1/jobs/{run}/release")
    assert (code, e["error"]["message"]) == (409, f"job {run} is RUNNING; only a held job can be released")
    later = d.submit("true", schedule_at="2031-01-01T00:00:00Z")
    assert d.api("POST", f"/v1/jobs/{later}/hold")[0] == 200
    code, e = d.api("POST", f"/v1/jobs/{later}/hold")
    assert (code, e["error"]["message"]) == (409, f"job {later} is HELD; only a pending, scheduled, queued or preempted job "
                                       "can be held")
    # released: back to SCHEDULED, its start time still ahead
    assert d.api("POST", f"/v1/jobs/{later}/release")[1]["status"] == "SCHEDULED"
    end(d, run, later)
    code, e = d.api("POST", f"/v1/jobs/{run}/hold")
    assert (code, e["error"]["message"]) == (409, f"job {run} is STOPPED; only a pending, scheduled, queued or preempted job "
                                       "can be held")
    p = d.rnx("job", "release", run)
    assert p.returncode == 1 and f"job {run} is STOPPED; only a held job can be released" in p.stderr


def test_a_held_job_can_be_canceled_and_is_refused_to_start_by_nobody_else(d):
    later = d.submit("true", schedule_at="2031-01-01T00:00:00Z")
    d.rnx("job", "hold", later, check=True)
    # another user sees no such job
    p = rnx_as(d, USER, "job", "release", later)
    assert p.returncode == 1 and "is another user's job" in p.stderr
    assert d.rnx("job", "cancel", later).returncode == 0
    assert d.job(later)["status"] == "CANCELED"


def test_a_held_workflow_job_waits_past_its_dependencies_and_is_decided_on_release(d):
    gate = "while [ ! -e /work/go ]; do sleep 0.02; done; test ! -e /work/fail"
    jobs = [{"name": "a", "request": {"command": "sh", "args": ["-c", gate]}},
            {"name": "b", "request": {"command": "true"}, "requires": [{"job": "a", "status": "COMPLETED"}]},
            {"name": "c", "request": {"command": "true"}, "requires": [{"job": "a", "status": "FAILED"}]}]
    code, wf = d.api("POST", "/v1/workflows", {"name": "held", "jobs": jobs})
    assert code == 201, wf
    ids = {j["name"]: j["job_id"] for j in d.api("GET", f"/v1/workflows/{wf['id']}")[1]["jobs"]}
    assert d.job(ids["b"])["status"] == "PENDING"
    d.rnx("job", "hold", ids["b"], ids["c"], check=True)
    d.wait_status(ids["a"], "RUNNING")
    open(os.path.join(d.work(ids["a"]), "go"), "w").close()
    assert d.wait(ids["a"])["status"] == "COMPLETED"
    # its dependencies decided meanwhile: still HELD, nothing started or canceled
    assert d.job(ids["b"])["status"] == d.job(ids["c"])["status"] == "HELD"
    # released: the engine decides at once, b queued (and runs), c canceled (a did not fail)
    d.rnx("job", "release", ids["b"], ids["c"], check=True)
    assert d.wait(ids["b"])["status"] == "COMPLETED"
    c = d.wait(ids["c"])
    assert (c["status"], c["end_reason"]) == ("CANCELED", "dependency")


def test_a_held_workflow_job_is_canceled_with_its_workflow(d):
    jobs = [{"name": "a", "request": {"command": "sleep", "args": ["600"]}},
            {"name": "b", "request": {"command": "true"}, "requires": [{"job": "a", "status": "COMPLETED"}]}]
    code, wf = d.api("POST", "/v1/workflows", {"name": "held2", "jobs": jobs})
    assert code == 201, wf
    ids = {j["name"]: j["job_id"] for j in d.api("GET", f"/v1/workflows/{wf['id']}")[1]["jobs"]}
    d.rnx("job", "hold", ids["b"], check=True)
    assert d.api("POST", f"/v1/workflows/{wf['id']}/cancel")[0] == 200
    assert d.wait(ids["b"])["status"] == "CANCELED"
    d.wait(ids["a"])


def test_held_job_stays_held_over_a_kill_9_and_is_released_after(fresh_daemon):
    dd = fresh_daemon()
    jid = dd.submit("true", schedule_at="2031-01-01T00:00:00Z")
    dd.rnx("job", "hold", jid, check=True)
    dd.kill9()
    dd.start()
    j = dd.job(jid)
    assert j["status"] == "HELD" and j["wait_reason"].startswith("held by uid 0")
    code, j = dd.api("POST", f"/v1/jobs/{jid}/release")
    assert (code, j["status"]) == (200, "SCHEDULED")
    assert any(e[0] == "released" for e in events(dd, jid))


# ---- update ------------------------------------------------------------------------------

def test_update_changes_a_waiting_job_through_the_submission_schema(d):
    blk = blocker(d)
    a = d.submit("true", gpu_count=1)
    p = d.rnx("job", "update", a, "--priority=5", "--gpu=2", "--max-runtime=2h")
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"updated {a} (QUEUED)\n"
    j = d.job(a)
    assert j["priority"] == 5
    assert (j["gpu_request"]["count"], j["limits"]["max_runtime_s"]) == (2, 7200)
    assert ("updated", 0, "by uid 0: priority 0 -> 5, max_runtime_s none -> 7200, gpu_count 1 -> 2") in events(d, a)
    assert "updated    by uid 0: priority 0 -> 5" in detail_text(d, a)
    # Slurm's TimeLimit= forms (scontrol update TimeLimit=1-12:30); a bare number stays seconds
    d.rnx("job", "update", a, "--max-runtime=1-12:30", check=True)
    assert d.job(a)["limits"]["max_runtime_s"] == 131400
    p = d.rnx("job", "update", a, "--max-runtime=1:2:3:4")
    assert p.returncode == 2 and "'1:2:3:4'" in p.stderr and "D-H[:MIN[:SEC]]" in p.stderr, p.stderr
    # the machine's check, as at submission: 8 GPUs on a 4-GPU machine
    code, e = d.api("POST", f"/v1/jobs/{a}/update", {"gpu_count": 8})
    assert code == 400 and e["error"]["field"] == "gpu_count", e
    # the schema's: out of range, worded for the flag by rnx
    p = d.rnx("job", "update", a, "--priority=5000")
    assert p.returncode == 2 and "--priority" in p.stderr and "-1000 to 1000" in p.stderr
    code, e = d.api("POST", f"/v1/jobs/{a}/update", {"priority": 5000})
    assert code == 400 and e["error"]["field"] == "priority"
    code, e = d.api("POST", f"/v1/jobs/{a}/update", {"command": "rm"})
    assert code == 400 and e["error"]["field"] == "command"
    assert e["error"]["message"].startswith("command: cannot be changed; a job's update may change priority, max_runtime_s")
    # nothing changed by the refusals
    assert d.job(a)["priority"] == 5
    end(d, blk, a)


def test_update_survives_a_restart(fresh_daemon):
    dd = fresh_daemon()
    jid = dd.submit("true", schedule_at="2031-01-01T00:00:00Z")
    dd.rnx("job", "update", jid, "--priority=-3", check=True)
    dd.kill9()
    dd.start()
    assert dd.job(jid)["priority"] == -3


def test_an_owner_may_lower_but_not_raise_priority(d):
    # a priority above 0 at submission is a raise too (Slurm: sbatch --priority is an operator's):
    # submitting again at the top of the queue is not a way round the update's refusal
    p = rnx_as(d, USER, "job", "run", "--schedule=2031-01-01T00:00:00Z", "--priority=2", "true")
    assert p.returncode == 1 and "priority: a priority above 0" in p.stderr and "is for root" in p.stderr, p
    assert not p.stdout
    p = rnx_as(d, USER, "job", "run", "--schedule=2031-01-01T00:00:00Z", "--priority=-1", "true")
    assert p.returncode == 0, p.stderr
    jid = p.stdout.strip().split()[-1]
    p = rnx_as(d, USER, "job", "update", jid, "--priority=-2")
    assert p.returncode == 0, p.stderr
    p = rnx_as(d, USER, "job", "update", jid, "--priority=0")
    assert p.returncode == 1
    assert "raising a job's priority (its owner may lower it) is for root" in p.stderr
    assert d.job(jid)["priority"] == -2
    # the owner holds, releases and cancels their own job
    assert rnx_as(d, USER, "job", "hold", jid).returncode == 0
    assert rnx_as(d, USER, "job", "release", jid).returncode == 0
    end(d, jid)


def test_a_running_job_may_only_change_its_time_limit_and_the_new_one_ends_it(d):
    jid = d.submit("sleep", "600", max_runtime_s=3600)
    d.wait_status(jid, "RUNNING")
    code, e = d.api("POST", f"/v1/jobs/{jid}/update", {"priority": 9})
    assert code == 409
    assert e["error"]["message"] == (f"job {jid} is RUNNING; priority cannot change once it runs (what it was started with "
                          "holds until it ends): only max_runtime_s can")
    p = d.rnx("job", "update", jid, "--max-runtime=2s")
    assert p.returncode == 0, p.stderr
    j = d.wait(jid)
    assert (j["status"], j["end_reason"]) == ("FAILED", "time_limit")
    assert ("updated", 0, "by uid 0: max_runtime_s 3600 -> 2") in events(d, jid)
    code, e = d.api("POST", f"/v1/jobs/{jid}/update", {"max_runtime_s": 5})
    assert (code, e["error"]["message"]) == (409, f"job {jid} is FAILED; only a waiting, held, running or suspended job can be "
                                       "updated")


# ---- suspend / resume --------------------------------------------------------------------

def test_suspend_freezes_the_job_and_resume_thaws_it(d):
    jid = running_counter(d, gpu_count=2)
    gpus = sorted(g["index"] for g in d.job(jid)["gpus"])
    assert advances(d, jid)
    p = d.rnx("job", "suspend", jid)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"suspended {jid} (SUSPENDED)\n"
    assert open(freeze_file(d, jid)).read().strip() == "1" and frozen(d, jid)
    assert stands_still(d, jid)  # its processes run no more
    j = d.job(jid)
    assert j["status"] == "SUSPENDED"
    assert j["wait_reason"] == (f"suspended by uid 0; holds GPUs {','.join(map(str, gpus))} "
                                f"(rnx job resume {jid[:8]})")
    assert sorted(g["index"] for g in j["gpus"]) == gpus  # still its own
    assert "SUSPENDED" in d.rnx("job", "list", "--status", "SUSPENDED", check=True).stdout
    p = d.rnx("job", "resume", jid)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"resumed {jid} (RUNNING)\n"
    assert not frozen(d, jid)
    assert advances(d, jid)
    text = detail_text(d, jid)
    assert "suspended  suspended by uid 0; holds GPUs" in text
    assert "resumed    resumed by uid 0" in text
    end(d, jid)


class StuckFuse:
    """A FUSE file system that never answers (this test opens /dev/fuse and mounts it, and reads
    nothing): a process that stats a file in it sleeps uninterruptibly, where no freezer can stop
    it, until close() aborts the connection (the stat then fails: ENOTCONN)."""

    def __init__(self, where):
        import ctypes
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.mnt = str(where)
        os.makedirs(self.mnt, exist_ok=True)
        try:
            self.fd = os.open("/dev/fuse", os.O_RDWR)
        except OSError as e:
            pytest.skip(f"cannot open /dev/fuse here: {e}")
        opts = f"fd={self.fd},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
        if self.libc.mount(b"joblet-test-stuck", self.mnt.encode(), b"fuse", 0, opts) != 0:
            err = ctypes.get_errno()
            os.close(self.fd)
            pytest.skip(f"cannot mount a FUSE file system here: {os.strerror(err)}")

    def stuck_process(self):
        import subprocess
        p = subprocess.Popen(["stat", os.path.join(self.mnt, "x")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        # asleep in the FUSE's wait, not in any D state: a loaded machine showed D while the stat
        # was still being loaded from disk, and the job froze it before it reached the FUSE
        # (CI run 107: the suspend answered SUSPENDED, not still freezing)
        def in_fuse():
            state = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()[0]
            return state == "D" and open(f"/proc/{p.pid}/wchan").read().startswith(("fuse_", "request_wait_answer"))
        wait_for(in_fuse, "the stat asleep in the FUSE's wait")
        return p

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)      # the connection aborted: every request of it fails
            self.fd = -1
            self.libc.umount2(self.mnt.encode(), 2)   # MNT_DETACH


def test_a_freeze_that_cannot_finish_never_holds_the_daemon(d, tmp_path):
    """A process of the job that cannot be frozen (asleep in a file system that does not answer):
    the suspend is answered after a second with SUSPENDED and says it is still freezing, and the
    daemon's loop went on meanwhile, turn after turn (it used to sleep that second in one turn,
    every request of everyone waiting); once the process can stop, the job is frozen and says so."""
    fuse = StuckFuse(tmp_path / "stuck")
    jid, stuck = None, None
    try:
        jid = d.submit("sleep", "600")
        d.wait_status(jid, "RUNNING")
        stuck = fuse.stuck_process()
        with open(os.path.join(os.path.dirname(freeze_file(d, jid)), "cgroup.procs"), "w") as f:
            f.write(str(stuck.pid))          # into the job's cgroup (the unified tree's)
        turns = d.metric("joblet_loop_turns_total")
        p = d.rnx("job", "suspend", jid)
        assert p.returncode == 0, p.stderr
        assert p.stdout == f"suspended {jid} (SUSPENDED; still freezing: a process of it cannot stop yet)\n"
        # the freezer looked every 10 ms of that second, each look a turn of the loop (fewer on a
        # loaded machine, where the loop waits for a CPU: CI saw 13; the old code made one)
        assert d.metric("joblet_loop_turns_total") - turns >= 5
        j = d.job(jid)
        assert j["status"] == "SUSPENDED" and j["freezing"] is True and not frozen(d, jid)
        assert j["wait_reason"].endswith("; still freezing: a process of it cannot stop yet"), j["wait_reason"]
        assert d.rnx("job", "list", check=True).returncode == 0   # others are answered meanwhile
        fuse.close()                         # the stat fails, and its process can be frozen now
        wait_for(lambda: d.job(jid)["freezing"] is False, "the job frozen at last")
        assert frozen(d, jid) and d.job(jid)["status"] == "SUSPENDED"
        assert "still freezing" not in d.job(jid)["wait_reason"]
        p = d.rnx("job", "resume", jid)
        assert p.stdout == f"resumed {jid} (RUNNING)\n" and not frozen(d, jid)
    finally:
        fuse.close()
        if jid is not None:
            end(d, jid)
        if stuck is not None:
            stuck.wait(timeout=30)


def test_suspend_and_resume_refusals(d):
    later = d.submit("true", schedule_at="2031-01-01T00:00:00Z")
    code, e = d.api("POST", f"/v1/jobs/{later}/suspend")
    assert (code, e["error"]["message"]) == (409, f"job {later} is SCHEDULED; only a running job can be suspended")
    code, e = d.api("POST", f"/v1/jobs/{later}/resume")
    assert (code, e["error"]["message"]) == (409, f"job {later} is SCHEDULED; only a suspended job can be resumed")
    end(d, later)
    # an owner may not suspend their own job (its GPUs stay held): admins only, as in Slurm
    p = rnx_as(d, USER, "job", "run", "sleep", "600")
    assert p.returncode == 0, p.stderr
    jid = p.stdout.strip().split()[-1]
    d.wait_status(jid, "RUNNING")
    p = rnx_as(d, USER, "job", "suspend", jid)
    assert p.returncode == 1
    assert "suspending a job (its GPUs stay held) is for root; you are uid 65534" in p.stderr
    assert d.job(jid)["status"] == "RUNNING"
    code, e = d.api("POST", f"/v1/jobs/{jid}/resume")
    assert (code, e["error"]["message"]) == (409, f"job {jid} is RUNNING; only a suspended job can be resumed")
    # nor undo an admin's suspend by requeuing the job (it would run again); stopping it is theirs
    d.rnx("job", "suspend", jid, check=True)
    p = rnx_as(d, USER, "job", "requeue", jid)
    assert p.returncode == 1 and "requeuing a suspended job" in p.stderr and "is for root" in p.stderr, p
    assert d.job(jid)["status"] == "SUSPENDED"
    end(d, jid)


def test_stop_and_kill_of_a_suspended_job(d):
    a = running_counter(d)
    b = running_counter(d)
    d.rnx("job", "suspend", a, b, check=True)
    assert d.job(a)["status"] == d.job(b)["status"] == "SUSPENDED"
    assert d.rnx("job", "stop", a).returncode == 0
    assert d.rnx("job", "kill", b).returncode == 0
    ja, jb = d.wait(a), d.wait(b)
    assert ja["status"] == "STOPPED" and ja["end_reason"] == "stopped"
    assert jb["status"] == "STOPPED" and jb["end_reason"] == "killed"
    assert any(e[0] == "resumed" and "to be stopped" in e[2] for e in events(d, a))


def test_suspended_job_stays_suspended_over_a_kill_9_and_resumes_after(fresh_daemon):
    dd = fresh_daemon()
    jid = running_counter(dd)
    dd.rnx("job", "suspend", jid, check=True)
    dd.kill9()
    assert frozen(dd, jid)
    dd.start()
    assert dd.job(jid)["status"] == "SUSPENDED"
    assert stands_still(dd, jid)
    dd.rnx("job", "resume", jid, check=True)
    assert dd.job(jid)["status"] == "RUNNING"
    assert advances(dd, jid)
    end(dd, jid)


def ms(ts):
    """An API time ("2026-01-02T03:04:05.678Z") as ms since the epoch."""
    return datetime.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000


def event_times(d, jid, name):
    code, j = d.api("GET", f"/v1/jobs/{jid}?detail=1")
    assert code == 200, j
    return [ms(e["time"]) for e in j["detail"]["events"] if e["event"] == name]


LIMIT = 8  # the jobs' --max-runtime below: each is suspended for longer than all of it (8 s, not 3:
           # under a whole sanitizer run's load an rnx suspend took most of 3 s, and the job's time
           # ran out right after its resume, before the test saw its counter move: local run 170)


def suspend_past_its_limit(dd, jid):
    """Suspends a running counter job for longer than its whole time limit: it must still be
    there, SUSPENDED and standing still, afterwards. Returns the counter at the suspension."""
    assert advances(dd, jid)
    dd.rnx("job", "suspend", jid, check=True)
    at = counter(dd, jid)
    time.sleep(LIMIT + 2)  # (the old shim's time limit fired meanwhile: SIGTERM, SIGKILL after the grace)
    return at


def check_ran_its_limit_outside_suspension(dd, jid, at_suspend, at_resume, limit=LIMIT):
    """It ended by its time limit, having run its remaining time after the resume: the time it
    ran outside its suspension (joblet's own timestamps: started, suspended, resumed, ended)
    is its whole limit, and its counter went on after the resume."""
    j = dd.wait(jid, timeout=120)
    assert (j["status"], j["end_reason"]) == ("FAILED", "time_limit"), j
    final = counter(dd, jid)
    assert at_suspend <= at_resume < final  # it stood still while suspended and ran after
    started, ended = ms(j["started_at"]), ms(j["ended_at"])
    susp, res = event_times(dd, jid, "suspended"), event_times(dd, jid, "resumed")
    assert len(susp) == len(res) == 1
    suspended = res[0] - susp[0]
    assert suspended > LIMIT * 1000
    ran = (susp[0] - started) + (ended - res[0])
    # never cut short by the time it spent suspended (ms of slack: joblet's timestamps are taken
    # around the shim's); nor run on without end (a bound far from any real run)
    assert limit * 1000 - 250 <= ran < limit * 1000 + 60000, (ran, suspended)
    # the time suspended, as the API and rnx job status --detail show it
    assert abs(j["suspended_ms"] - suspended) < 1000, (j["suspended_ms"], suspended)
    assert "Suspended: " in detail_text(dd, jid)
    return j


def test_time_suspended_does_not_count_against_the_time_limit(d):
    jid = running_counter(d, max_runtime_s=LIMIT)
    at_suspend = suspend_past_its_limit(d, jid)
    j = d.job(jid)
    assert j["status"] == "SUSPENDED" and j["suspended_ms"] > 0
    assert "Suspended: " in detail_text(d, jid) and "so far" in detail_text(d, jid)
    assert stands_still(d, jid, 0.2)
    p = d.rnx("job", "resume", jid)
    assert p.returncode == 0, p.stderr
    at_resume = counter(d, jid)
    assert d.job(jid)["status"] == "RUNNING"
    assert advances(d, jid)  # not ended at once on its resume
    check_ran_its_limit_outside_suspension(d, jid, at_suspend, at_resume)
    assert any(e[0] == "resumed" and "its time limit moved by the" in e[2] for e in events(d, jid))


def test_time_suspended_does_not_count_over_a_kill_9_during_and_after_the_suspension(fresh_daemon):
    dd = fresh_daemon()
    jid = running_counter(dd, max_runtime_s=LIMIT)
    assert advances(dd, jid)
    dd.rnx("job", "suspend", jid, check=True)
    at_suspend = counter(dd, jid)
    dd.kill9()
    time.sleep(LIMIT + 2)  # suspended past its limit with no joblet at all
    dd.start()
    j = dd.job(jid)
    assert j["status"] == "SUSPENDED" and j["suspended_ms"] > LIMIT * 1000
    assert stands_still(dd, jid, 0.2)
    dd.rnx("job", "resume", jid, check=True)
    at_resume = counter(dd, jid)
    dd.kill9()  # and once resumed: the shim has the deadline moved, the row the time suspended
    assert advances(dd, jid)
    dd.start()
    check_ran_its_limit_outside_suspension(dd, jid, at_suspend, at_resume)


def test_suspends_and_resumes_back_to_back_leave_the_time_limit_running(d):
    # five cycles, as fast as the API answers: the last word, the resume, stands, and the job
    # ends by its limit
    jid = running_counter(d, max_runtime_s=LIMIT)
    for _ in range(5):
        assert d.api("POST", f"/v1/jobs/{jid}/suspend")[0] == 200
        assert d.api("POST", f"/v1/jobs/{jid}/resume")[0] == 200
    assert advances(d, jid)
    j = d.wait(jid, timeout=120)
    assert (j["status"], j["end_reason"]) == ("FAILED", "time_limit"), j
    assert len(event_times(d, jid, "resumed")) == 5


def test_an_update_while_suspended_counts_from_the_time_run(d):
    jid = running_counter(d, max_runtime_s=3600)
    at_suspend = suspend_past_its_limit(d, jid)
    # a limit its time since the start is past, but not its time run: the job runs on after the
    # resume until it ran that long in all
    # (LIMIT s more than it ran before the suspension: a loaded machine may have taken seconds
    # to get it there, and a limit it had run out already would end it at the resume)
    ran_before = event_times(d, jid, "suspended")[0] - ms(d.job(jid)["started_at"])
    limit = math.ceil(ran_before / 1000) + LIMIT
    d.rnx("job", "update", jid, f"--max-runtime={limit}s", check=True)
    time.sleep(1)
    assert d.job(jid)["status"] == "SUSPENDED"
    d.rnx("job", "resume", jid, check=True)
    at_resume = counter(d, jid)
    check_ran_its_limit_outside_suspension(d, jid, at_suspend, at_resume, limit)


# ---- requeue -----------------------------------------------------------------------------

def test_requeue_runs_the_job_again_from_the_start_keeping_its_id(d):
    jid = d.submit("sh", "-c", "echo run; sleep 600")
    first = d.wait_status(jid, "RUNNING")
    p = d.rnx("job", "requeue", jid)
    assert p.returncode == 0, p.stderr
    assert p.stdout.endswith(": stopping, then back in the queue\n")
    deadline = time.time() + 60
    while time.time() < deadline and (d.job(jid)["status"] != "RUNNING" or d.job(jid)["preemptions"] != 1):
        time.sleep(0.05)
    j = d.job(jid)
    assert (j["id"], j["status"], j["preemptions"]) == (jid, "RUNNING", 1)
    assert j["started_at"] != first["started_at"]
    evs = [e[0] for e in events(d, jid)]
    assert evs.count("started") == 2 and evs.count("requeued") == 2
    text = detail_text(d, jid)
    assert "requeued   requeue asked by uid 0" in text
    end(d, jid)


def test_requeue_hold_and_refusal(d):
    jid = d.submit("sleep", "600")
    d.wait_status(jid, "RUNNING")
    d.rnx("job", "suspend", jid, check=True)  # a suspended job is requeued too
    p = d.rnx("job", "requeue", "--hold", jid)
    assert p.returncode == 0, p.stderr
    j = d.wait_status(jid, "HELD")
    assert j["end_reason"] == "requeued" and j["wait_reason"].startswith("held by uid 0")
    code, e = d.api("POST", f"/v1/jobs/{jid}/requeue")
    assert (code, e["error"]["message"]) == (409, f"job {jid} is HELD; only a running, suspended or ended job can be "
                                                  "requeued")
    p = d.rnx("job", "requeue", jid)
    assert p.returncode == 1 and "only a running, suspended or ended job can be requeued" in p.stderr
    # released, it waits to run again as a job that ran before: PREEMPTED, not QUEUED
    d.rnx("job", "release", jid, check=True)   # (its answer comes after the turn that started it)
    assert ("released", 0, "hold released by uid 0: PREEMPTED") in events(d, jid), events(d, jid)
    j = d.wait_status(jid, "RUNNING")
    assert (j["end_reason"], j["preemptions"]) == (None, 1), j  # "requeued" described the last run
    # held again, then made to wait for another job: when that one ends, the same
    d.rnx("job", "requeue", "--hold", jid, check=True)
    d.wait_status(jid, "HELD")
    gate = d.submit("sleep", "600")
    d.wait_status(gate, "RUNNING")
    d.rnx("job", "update", f"--after={gate}:any", jid, check=True)
    p = d.rnx("job", "release", jid, check=True)
    assert p.stdout == f"released {jid} (PENDING)\n", p.stdout
    assert d.job(jid)["end_reason"] == "requeued"
    end(d, gate)
    j = d.wait_status(jid, "RUNNING")
    assert (j["end_reason"], j["preemptions"]) == (None, 2), j
    end(d, jid)


def test_requeue_hold_is_kept_over_a_kill_9_during_the_stop(fresh_daemon):
    # a job that ignores SIGTERM: its stop lasts the whole grace period, and joblet dies in it
    dd = fresh_daemon("jobs:\n  stop_grace_s: 6\n")
    jid = dd.submit(*DEAF)
    wait_deaf(dd, jid)
    p = dd.rnx("job", "requeue", "--hold", jid)
    assert p.returncode == 0, p.stderr
    assert dd.job(jid)["status"] == "STOPPING"
    dd.kill9()
    dd.start()
    j = dd.wait_status(jid, "HELD", timeout=60)
    assert (j["end_reason"], j["preemptions"]) == ("requeued", 1)
    assert j["wait_reason"].startswith("held by uid 0")
    time.sleep(1)
    assert dd.job(jid)["status"] == "HELD"  # not started again
    dd.rnx("job", "release", jid, check=True)
    dd.wait_status(jid, "RUNNING")
    end(dd, jid)


def test_a_requeue_committed_but_not_told_to_the_shim_is_told_after_a_kill_9(fresh_daemon):
    # the requeue's intent is committed before its SIGTERM goes to the shim: a joblet killed
    # between the two leaves this row (written here by hand, the daemon down) and a shim that
    # heard nothing; the next joblet tells it, and the job goes back in the queue held
    dd = fresh_daemon()
    jid = dd.submit("sh", "-c", "while :; do sleep 0.1; done")
    dd.wait_status(jid, "RUNNING")
    dd.kill9()
    db = sqlite3.connect(os.path.join(dd.state, "joblet.db"))
    with db:
        n = db.execute("UPDATE jobs SET state='STOPPING', preempting=1, requeue=2 WHERE id=?", (jid,)).rowcount
    db.close()
    assert n == 1
    dd.start()
    j = dd.wait_status(jid, "HELD", timeout=60)
    assert (j["end_reason"], j["preemptions"]) == ("requeued", 1), j
    dd.rnx("job", "release", jid, check=True)
    dd.wait_status(jid, "RUNNING")
    end(dd, jid)


def process_gone(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return "\nState:\tZ" in f.read()  # (a zombie: ended, its parent not told yet)
    except FileNotFoundError:
        return True


def test_a_start_no_row_records_is_killed_and_the_job_starts_again(fresh_daemon):
    # joblet forks a job's shim, then commits the row that names it at the end of the turn: a
    # joblet killed between the two leaves a run that no row records (written here by hand: the
    # row as it was before the launch, the daemon down). The next joblet must not run the job
    # twice at once, nor fail it on the first run's cgroup: the first run is killed, the job
    # runs again from the start
    dd = fresh_daemon()
    jid = dd.submit("sh", "-c", "echo run >> /work/runs; sleep 3")
    j = dd.wait_status(jid, "RUNNING")
    wait_for(lambda: os.path.exists(os.path.join(dd.work(jid), "runs")), what="the first run's mark")
    first_shim = j["shim_pid"]
    dd.kill9()
    db = sqlite3.connect(os.path.join(dd.state, "joblet.db"))
    with db:
        n = db.execute("UPDATE jobs SET state='QUEUED', shim_pid=0, shim_start=0, init_pid=0, started_ms=NULL "
                       "WHERE id=?", (jid,)).rowcount
    db.close()
    assert n == 1
    dd.start()
    assert process_gone(first_shim), "the unrecorded run's shim still runs"
    j = dd.wait(jid, timeout=60)
    assert j["status"] == "COMPLETED", j
    assert j["shim_pid"] != first_shim
    with open(os.path.join(dd.work(jid), "runs")) as f:
        assert f.read() == "run\nrun\n"
    assert "a start of it that was not recorded" in dd.rnx("job", "status", "--detail", jid, check=True).stdout
    assert "killed a run no row records" in dd.log()


def test_several_ids_are_each_reported(d):
    a = d.submit("true", schedule_at="2031-01-01T00:00:00Z")
    b = d.submit("true", schedule_at="2031-01-01T00:00:00Z")
    p = d.rnx("job", "hold", a, b, "nosuchjob")
    assert p.returncode == 1
    assert p.stdout == f"held {a} (HELD)\nheld {b} (HELD)\n"
    assert "nosuchjob" in p.stderr
    p = d.rnx("job", "release", "--json", a, b, check=True)
    assert p.stdout.count('"SCHEDULED"') == 2  # each answer, as JSON
    end(d, a, b)


def test_a_freezer_that_disagrees_with_the_row_is_put_as_the_row_says_at_start(fresh_daemon):
    """joblet killed between a freeze and the commit of its suspend (or of a resume): at start a
    RUNNING job found frozen is thawed (its suspend was never answered), a SUSPENDED one found
    thawed is frozen again; each says so in its history."""
    dd = fresh_daemon()
    run = running_counter(dd)
    sus = running_counter(dd)
    dd.rnx("job", "suspend", sus, check=True)
    dd.kill9()
    # the states the window leaves: frozen under a RUNNING row, thawed under a SUSPENDED one
    with open(freeze_file(dd, run), "w") as f:
        f.write("1")
    with open(freeze_file(dd, sus), "w") as f:
        f.write("0")
    deadline = time.time() + 10
    while (not frozen(dd, run) or frozen(dd, sus)) and time.time() < deadline:
        time.sleep(0.05)
    assert frozen(dd, run) and not frozen(dd, sus)
    dd.start()
    assert not frozen(dd, run) and advances(dd, run)
    assert dd.job(run)["status"] == "RUNNING"
    # (asked at start, not waited for: the kernel freezes it soon after)
    wait_for(lambda: frozen(dd, sus), "the suspended job frozen again")
    assert stands_still(dd, sus, 0.3)
    assert dd.job(sus)["status"] == "SUSPENDED"
    assert any(e[0] == "resumed" and "thawed at joblet's start: its cgroup was frozen, its row says RUNNING" in e[2]
               for e in events(dd, run)), events(dd, run)
    assert any(e[0] == "suspended" and "frozen again at joblet's start" in e[2] for e in events(dd, sus))
    dd.rnx("job", "resume", sus, check=True)
    assert advances(dd, sus)
    end(dd, run, sus)


def test_a_suspended_jobs_time_moves_the_queues_at_the_latest_time(fresh_daemon):
    # a job's time SUSPENDED is not counted against its time limit, so the time it gives its room
    # back at the latest (the head's reservation, "by ... at the latest") moves by it; it was
    # reckoned from its start and limit alone, as if the suspension had not been
    dd = fresh_daemon(f"gpu:\n  fixture: {ROOT}/tests/fixtures/dgx-h100/machine.json\n  scrub: 0\n")
    a = dd.submit("sleep", "600", max_runtime_s=100, gpu_count=8)
    j = dd.wait_status(a, "RUNNING")
    b = dd.submit("true", gpu_count=1)

    def latest():
        reason = dd.job(b)["wait_reason"] or ""
        m = re.search(r"by (\S+Z) at the latest", reason)
        return datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%SZ") if m else None

    before = wait_for(latest, "the queue's head to say when it starts at the latest")
    dd.rnx("job", "suspend", a, check=True)
    time.sleep(3)  # (a length of the suspension, not a limit on anything)
    dd.rnx("job", "resume", a, check=True)
    suspended_s = dd.job(a)["suspended_ms"] / 1000
    assert suspended_s >= 3, dd.job(a)
    after = wait_for(lambda: (t := latest()) and t != before and t, "the time to move")
    assert (after - before).total_seconds() >= suspended_s - 1, (before, after, suspended_s, j["started_at"])
    end(dd, a, b)


def test_requeue_of_an_ended_job_puts_it_back_in_the_queue(d):
    """Slurm's scontrol requeue takes a finished batch job, and so does joblet (docs/batch.md,
    "Requeue of an ended job"; test_requeue_ended.py has the rest): with --hold it waits HELD,
    its runs counted, its earlier end in its history."""
    jid = d.submit("true")
    assert d.wait(jid)["status"] == "COMPLETED"
    p = d.rnx("job", "requeue", "--hold", jid)
    assert p.returncode == 0 and p.stdout.startswith(f"requeued {jid} (HELD)"), (p.stdout, p.stderr)
    j = d.job(jid)
    assert (j["status"], j["preemptions"]) == ("HELD", 1), j
    assert any(ev == "requeued" and detail.startswith("requeued by uid 0 after its end (run 1: COMPLETED")
               for ev, _, detail in events(d, jid)), events(d, jid)
    d.rnx("job", "release", jid, check=True)
    assert d.wait(jid)["status"] == "COMPLETED"


