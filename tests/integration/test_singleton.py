"""One job at a time by name: `rnx job run --singleton` (Slurm's --dependency=singleton, also read
as --after=singleton), against the real daemon. A singleton job waits PENDING while another job
of its owner and name runs; the waiting ones go one at a time, oldest first; another name or
another user's job of the same name is not held back; a plain job of the name that starts first
sends a singleton let go into the queue back to PENDING at its start; held ones are passed over
and decided again when released; all of it outlives kill -9 of joblet. (The flag's text:
tests/unit/test_jobreq.c.)"""
import os
import time
import uuid
from datetime import datetime, timedelta, timezone

from conftest import api_seconds as stamp, rnx_as, wait_for

# A job that runs until the test drops a file in its /work: the test decides when it ends.
GATE = "while [ ! -e /work/go ]; do sleep 0.02; done"
UID = 4322


def run(d, *args):
    p = d.rnx("job", "run", *args, check=True)
    return p.stdout.strip()


def gated(d, name, *flags):
    return run(d, f"--name={name}", *flags, "sh", "-c", GATE)


def release(d, jid):
    open(os.path.join(d.work(jid), "go"), "w").close()


def turn(name, holder=None, state="RUNNING"):
    """The wait_reason of root's singleton job of this name."""
    s = f"waiting for its turn among uid 0's jobs named {name}, one at a time (singleton)"
    return s + (f": job {holder[:8]} is {state}" if holder else "")


def unique(stem):
    return f"{stem}-{uuid.uuid4().hex[:6]}"   # the shared daemon: a name no other test uses


def test_one_at_a_time_oldest_first(daemon):
    """A plain job of the name runs; three singleton jobs (the three spellings) wait, then run one
    after another in submission order, each started after the one before ended. Another name, and
    another user's job of the same name, run at once."""
    d = daemon
    name = unique("train")
    a = gated(d, name)
    d.wait_status(a, "RUNNING")
    s1 = gated(d, name, "--singleton")
    s2 = gated(d, name, "--dependency=singleton")
    s3 = gated(d, name, "--after=singleton")
    other = run(d, f"--name={name}-b", "--singleton", "true")
    p = rnx_as(d, UID, "job", "run", f"--name={name}", "--singleton", "true")
    assert p.returncode == 0, p.stderr
    theirs = p.stdout.strip()
    assert d.wait(other)["status"] == "COMPLETED"
    assert d.wait(theirs)["status"] == "COMPLETED"
    for s in (s1, s2, s3):
        job = d.job(s)
        assert job["status"] == "PENDING", job
        assert job["wait_reason"] == turn(name, a), job["wait_reason"]
    assert "--singleton" in d.rnx("job", "status", "--detail", s2, check=True).stdout
    order = [a, s1, s2, s3]
    for i, cur in enumerate(order[:-1]):
        nxt, rest = order[i + 1], order[i + 2:]
        release(d, cur)
        assert d.wait(cur)["status"] == "COMPLETED"
        d.wait_status(nxt, "RUNNING")
        for r in rest:   # the next went; the others wait for it
            job = d.job(r)
            assert job["status"] == "PENDING", job
            assert job["wait_reason"] == turn(name, nxt), job["wait_reason"]
    release(d, s3)
    assert d.wait(s3)["status"] == "COMPLETED"
    for before, after in zip(order, order[1:]):
        assert stamp(d.job(after)["started_at"]) >= stamp(d.job(before)["ended_at"]), (before, after)
    ev = d.events(s2)
    assert ("pending", f"waiting for its turn among uid 0's jobs named {name}, one at a time (singleton)") in ev, ev
    assert [e for e in ev if e[0] == "released" and "named " + name + " runs or goes next (singleton)" in e[1]], ev


def test_with_after_both_must_hold(daemon):
    """--after=ID:ok,singleton: it waits for both; its wait_reason says both; a failed ID cancels it."""
    d = daemon
    name = unique("eval")
    prep = gated(d, unique("prep"))
    d.wait_status(prep, "RUNNING")
    s = run(d, f"--name={name}", f"--dependency=afterok:{prep},singleton", "echo", "ran")
    job = d.job(s)
    assert job["status"] == "PENDING", job
    assert job["wait_reason"] == (f"waiting for job {prep[:8]} to end COMPLETED (it is RUNNING); and for its turn "
                                  f"among uid 0's jobs named {name}, one at a time (singleton)"), job["wait_reason"]
    release(d, prep)
    assert d.wait(s)["status"] == "COMPLETED" and d.output(s) == "ran\n"
    # a failed dependency cancels it, whatever its turn
    bad = run(d, "false")
    assert d.wait(bad)["status"] == "FAILED"
    c = run(d, f"--name={name}", f"--after={bad}:ok", "--singleton", "true")
    job = d.wait(c)
    assert job["status"] == "CANCELED" and job["end_reason"] == "dependency", job


def test_refused_without_a_name_in_an_array_and_in_a_workflow(daemon):
    d = daemon
    p = d.rnx("job", "run", "--singleton", "true")
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "singleton: runs one at a time among your jobs of its name, and the job has none; give it a name" in p.stderr
    code, err = d.api("POST", "/v1/jobs", {"command": "true", "singleton": True})
    assert code == 400 and err["error"]["field"] == "singleton", err
    code, err = d.api("POST", "/v1/jobs", {"command": "true", "name": "x", "array": "0-3", "singleton": True})
    assert code == 400 and err["error"]["field"] == "singleton" and "%1" in err["error"]["message"], err
    code, err = d.api("POST", "/v1/jobs", {"command": "true", "name": "x", "singleton": "yes"})
    assert code == 400 and err["error"]["message"] == "singleton: 'yes' must be true or false", err
    code, err = d.api("POST", "/v1/workflows", {"name": "w", "jobs": [
        {"name": "a", "request": {"command": "true", "name": "a", "singleton": True}}]})
    assert code == 400 and err["error"]["field"] == "jobs[0].request.singleton", err


def test_a_job_that_starts_first_sends_it_back(daemon):
    """A singleton scheduled for later holds nothing until its time (another goes meanwhile); a
    plain job of the name does not wait at all. At its start time the singleton finds the plain one
    running and is PENDING again, then goes first once it ended: the oldest first."""
    d = daemon
    name = unique("ckpt")
    at = (datetime.now(timezone.utc) + timedelta(seconds=4)).strftime("%Y-%m-%dT%H:%M:%SZ")
    s = gated(d, name, "--singleton", f"--schedule={at}")
    assert d.job(s)["status"] == "SCHEDULED", d.job(s)
    plain = gated(d, name)
    d.wait_status(plain, "RUNNING")
    s2 = gated(d, name, "--singleton")
    assert d.job(s2)["wait_reason"] == turn(name, plain), d.job(s2)   # not s: it is not due yet
    wait_for(lambda: d.job(s)["status"] == "PENDING", "the singleton sent back at its start time")
    assert ("pending", f"waiting again: job {plain[:8]} of the same name and owner is RUNNING (singleton)") \
        in d.events(s), d.events(s)
    assert d.job(s)["wait_reason"] == turn(name, plain), d.job(s)
    release(d, plain)
    d.wait_status(s, "RUNNING")        # the oldest first
    assert d.job(s2)["status"] == "PENDING"
    assert d.job(s2)["wait_reason"] == turn(name, s), d.job(s2)
    assert stamp(d.job(s)["started_at"]) >= stamp(d.job(plain)["ended_at"])
    release(d, s)
    d.wait_status(s2, "RUNNING")
    release(d, s2)
    assert d.wait(s2)["status"] == "COMPLETED"
    # a singleton scheduled for later does not keep the name from one due now
    later = gated(d, name, "--singleton", "--schedule=" + (datetime.now(timezone.utc) + timedelta(hours=1))
                  .strftime("%Y-%m-%dT%H:%M:%SZ"))
    now = run(d, f"--name={name}", "--singleton", "echo", "now")
    assert d.wait(now)["status"] == "COMPLETED"
    d.rnx("job", "cancel", later, check=True)


def test_held_ones_are_passed_over_and_it_outlives_kill9(fresh_daemon):
    """Held while it waits, a singleton job is passed over (the next one goes) and decided again
    when released; PENDING singleton jobs stay so through kill -9 of joblet and go in turn after."""
    d = fresh_daemon()
    name = "train"
    a = gated(d, name, "--singleton")
    d.wait_status(a, "RUNNING")
    s1 = gated(d, name, "--singleton")
    s2 = gated(d, name, "--singleton")
    d.rnx("job", "hold", s1, check=True)
    d.kill9()
    d.start()
    assert d.job(a)["status"] == "RUNNING"
    assert d.job(s1)["status"] == "HELD"
    job = d.job(s2)
    assert job["status"] == "PENDING" and job["wait_reason"] == turn(name, a), job
    release(d, a)
    assert d.wait(a)["status"] == "COMPLETED"
    d.wait_status(s2, "RUNNING")       # s1 is held: passed over
    assert d.job(s1)["status"] == "HELD"
    d.rnx("job", "release", s1, check=True)
    job = d.job(s1)
    assert job["status"] == "PENDING" and job["wait_reason"] == turn(name, s2), job
    # a singleton that runs, held back into the queue by requeue --hold, holds the name no more
    d.rnx("job", "requeue", "--hold", s2, check=True)
    d.wait_status(s2, "HELD")
    d.wait_status(s1, "RUNNING")
    d.rnx("job", "release", s2, check=True)
    assert d.job(s2)["status"] == "PENDING"
    d.kill9()
    d.start()
    assert d.job(s1)["status"] == "RUNNING" and d.job(s2)["status"] == "PENDING"
    time.sleep(0.3)
    assert d.job(s2)["status"] == "PENDING"
    release(d, s1)
    assert d.wait(s1)["status"] == "COMPLETED"
    d.wait_status(s2, "RUNNING")
    release(d, s2)
    assert d.wait(s2)["status"] == "COMPLETED"
    assert stamp(d.job(s2)["started_at"]) >= stamp(d.job(s1)["ended_at"])
