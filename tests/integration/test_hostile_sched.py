"""Hostile tests of the scheduler and GPU allocation (real daemon, simulated GPUs): one user's
share may never starve another's, and what was checked when a job was accepted still holds when
it starts. Users are local uids with no account (setpriv): A, B and C."""
import os
import sqlite3
import time

from conftest import ROOT, rnx_as

FIX = os.path.join(ROOT, "tests", "fixtures")
A, B, C = 4341, 4342, 4343


def sim(fresh_daemon, name, extra=""):
    return fresh_daemon(f"gpu:\n  fixture: {FIX}/{name}/machine.json\n  scrub: 0\n{extra}")


def run_as(d, user, *args):
    p = rnx_as(d, user, "job", "run", *args)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def settle(d, jid, wanted, timeout=3):
    """The job once it is in state wanted, or as it is after timeout s (a start that should not
    come is given time to come)."""
    deadline = time.time() + timeout
    while True:
        j = d.job(jid)
        if j["status"] == wanted or time.time() > deadline:
            return j
        time.sleep(0.1)


def test_a_job_released_from_a_hold_does_not_take_the_gpus_reserved_for_another_users_head(fresh_daemon):
    # A banks a job, held, before B submits; when B's job waits first in line with the free GPU
    # reserved for it, A releases the banked one: "in the place it had" puts it before B's, and
    # it takes B's reserved GPU. A bank of such jobs (or one moved back with --schedule, below)
    # keeps B's job from ever starting while A's jobs come and go.
    d = sim(fresh_daemon, "a100-pcie-4")
    banked = run_as(d, A, "--gpu=1", "--hold", "sleep", "600")
    busy = [run_as(d, A, "--gpu=1", "sleep", "600") for _ in range(3)]
    for j in busy:
        d.wait_status(j, "RUNNING")
    head = run_as(d, B, "--gpu=2", "sleep", "600")
    h = settle(d, head, "QUEUED")
    assert h["status"] == "QUEUED" and "first in line" in h["wait_reason"], h
    p = rnx_as(d, A, "job", "release", banked)
    assert p.returncode == 0, p.stderr
    x = settle(d, banked, "RUNNING")
    assert x["status"] == "QUEUED", f"A's job released after B's head waited took its reserved GPU: {x['gpus']}"
    d.rnx("job", "stop", busy[0], check=True)
    assert len(d.wait_status(head, "RUNNING")["gpus"]) == 2


def test_a_schedule_moved_to_now_does_not_jump_another_users_head(fresh_daemon):
    # the same with a job submitted for later and moved to now (rnx job update --schedule=now)
    d = sim(fresh_daemon, "a100-pcie-4")
    banked = run_as(d, A, "--gpu=1", "--schedule=2031-01-01T00:00:00Z", "sleep", "600")
    busy = [run_as(d, A, "--gpu=1", "sleep", "600") for _ in range(3)]
    for j in busy:
        d.wait_status(j, "RUNNING")
    head = run_as(d, B, "--gpu=2", "sleep", "600")
    assert "first in line" in settle(d, head, "QUEUED")["wait_reason"]
    p = rnx_as(d, A, "job", "update", banked, "--schedule=now")
    assert p.returncode == 0, p.stderr
    x = settle(d, banked, "RUNNING")
    assert x["status"] == "QUEUED", f"A's job moved to now after B's head waited took its reserved GPU: {x['gpus']}"


def test_a_head_blocked_by_its_owner_does_not_strip_another_users_reservation(fresh_daemon):
    # A's job that waits for a GPU A's own job holds (--gpu-ids) is first in line and reserves
    # nothing free; B's 3-GPU job behind it gets no reservation at all, so C's 1-GPU jobs, later
    # than B's, take every GPU that frees: B's job can wait for ever. Without A's job in front, B's
    # would be first in line with the free GPUs reserved, and C's would wait.
    d = sim(fresh_daemon, "a100-pcie-4")
    own = run_as(d, A, "--gpu-ids=0", "sleep", "600")
    d.wait_status(own, "RUNNING")
    c1 = run_as(d, C, "--gpu=1", "sleep", "600")
    d.wait_status(c1, "RUNNING")
    plug = run_as(d, A, "--gpu-ids=0", "sleep", "600")
    big = run_as(d, B, "--gpu=3", "sleep", "600")
    c2 = run_as(d, C, "--gpu=1", "sleep", "600")
    assert "first in line" in settle(d, plug, "QUEUED")["wait_reason"]
    x = settle(d, c2, "RUNNING")
    assert x["status"] == "QUEUED", (f"C's later job took GPU {[g['index'] for g in x['gpus']]} ahead of B's "
                                     f"3-GPU job, which waits with nothing reserved: {d.job(big)['wait_reason']}")


def test_a_mig_job_whose_profile_is_gone_waits_instead_of_running_without_a_gpu(fresh_daemon):
    # accepted for a MIG device 1g.10gb; joblet restarted on a machine (its MIG layout changed)
    # that has no such profile: the job must wait (docs/scheduler.md: "a job that was accepted
    # but can no longer be placed waits"), not start with no GPU at all
    d = sim(fresh_daemon, "a100-mig")
    w = run_as(d, A, "--gpu-mig=1g.10gb", "--hold", "sleep", "600")
    d.stop()
    with open(d.config) as f:
        text = f.read()
    with open(d.config, "w") as f:
        f.write(text.replace("a100-mig/machine.json", "a100-pcie-4/machine.json"))
    d.start()
    p = rnx_as(d, A, "job", "release", w)
    assert p.returncode == 0, p.stderr
    x = settle(d, w, "RUNNING")
    assert x["status"] == "QUEUED" and x["gpus"] == [], x
    assert x["wait_reason"].startswith("needs a MIG device 1g.10gb; too few such GPUs are usable now"), x
    d.rnx("job", "cancel", w, check=True)


def step_clock_back(d, jid):
    """The machine's clock stepped back an hour while joblet was down: job jid's row says it was
    submitted and joined the queue an hour ahead of the clock. joblet is started again."""
    d.stop()
    ahead = int(time.time() * 1000) + 3600 * 1000
    db = sqlite3.connect(os.path.join(d.state, "joblet.db"))
    with db:
        n = db.execute("UPDATE jobs SET created_ms=?, joined_ms=? WHERE id=?", (ahead, ahead, jid)).rowcount
    db.close()
    assert n == 1
    d.start()


def test_a_clock_stepped_back_does_not_put_later_jobs_first(fresh_daemon):
    # A's job joins the queue first in line; the machine's clock is then stepped back an hour
    # (an NTP step, an admin's `date`), here while joblet is down: its row says it joined an hour
    # ahead of the clock. B's job, submitted after the step, must still wait behind it; by the wall
    # clock alone it "joined" an hour earlier and took the first GPU that freed.
    d = sim(fresh_daemon, "a100-pcie-4")
    busy = run_as(d, C, "--gpu=4", "sleep", "600")
    d.wait_status(busy, "RUNNING")
    first = run_as(d, A, "--gpu=1", "sleep", "600")
    assert settle(d, first, "QUEUED")["queue_position"] == 1
    step_clock_back(d, first)
    d.wait_status(busy, "RUNNING")
    second = run_as(d, B, "--gpu=1", "sleep", "600")
    s = settle(d, second, "QUEUED")
    assert (d.job(first)["queue_position"], s["queue_position"]) == (1, 2), (d.job(first), s)
    d.rnx("job", "stop", busy, check=True)
    assert d.wait_status(first, "RUNNING")["status"] == "RUNNING"


def test_a_release_after_a_clock_step_back_does_not_go_before_jobs_that_joined_earlier(fresh_daemon):
    # the same step back; A then releases a job it banked held before B's joined (a lower seq):
    # a stamp only equal to the last one (the clock not past it) let the seq put A's job first
    d = sim(fresh_daemon, "a100-pcie-4")
    banked = run_as(d, A, "--gpu=1", "--hold", "sleep", "600")
    busy = run_as(d, C, "--gpu=4", "sleep", "600")
    d.wait_status(busy, "RUNNING")
    first = run_as(d, B, "--gpu=1", "sleep", "600")
    assert settle(d, first, "QUEUED")["queue_position"] == 1
    step_clock_back(d, first)
    d.wait_status(busy, "RUNNING")
    p = rnx_as(d, A, "job", "release", banked)
    assert p.returncode == 0, p.stderr
    x = settle(d, banked, "RUNNING")
    f = d.job(first)
    assert (f["queue_position"], x["queue_position"]) == (1, 2), (f, x)
