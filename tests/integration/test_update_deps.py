"""A waiting job's dependencies and start time changed (`rnx job update --after=SPEC|none`,
`--dependency=` in Slurm's syntax, `--schedule=WHEN|now`: Slurm's `scontrol update JobId=
Dependency=` and `StartTime=`), against the real daemon and the real rnx: the job starts after its
new dependency and not its old one, at once once they are removed, is CANCELED (reason
dependency) by one that can never hold as at submission, and goes back to PENDING from the queue;
a cycle, a running or ended job, a workflow's job and an array are refused saying why; each change
is an `updated` event, and is committed before rnx hears it succeeded (kill -9 right after)."""
import datetime
import os
import uuid

import pytest

from conftest import api_seconds as ms, rnx_as, wait_for

GATE = "while [ ! -e /work/go ]; do sleep 0.02; done; test ! -e /work/fail"


def run(d, *args):
    return d.rnx("job", "run", *args, check=True).stdout.strip()


def gated(d, *flags):
    return run(d, *flags, "sh", "-c", GATE)


def release(d, jid, fail=False):
    work = d.work(jid)
    if fail:
        open(os.path.join(work, "fail"), "w").close()
    open(os.path.join(work, "go"), "w").close()


def update(d, jid, *flags):
    return d.rnx("job", "update", jid, *flags)


def updated(d, jid):
    return [detail for event, detail in d.events(jid) if event == "updated"]


def test_a_replaced_dependency_is_the_one_waited_for(daemon):
    """--after=B replaces --after=A:ok: the job runs once B ended, while A still runs; the API
    shows the new dependency, the history says what changed."""
    a, b = gated(daemon), gated(daemon)
    daemon.wait_status(a, "RUNNING")
    c = run(daemon, f"--after={a}:ok", "echo", "ran")
    assert daemon.job(c)["status"] == "PENDING"
    p = update(daemon, c, f"--after={b[:8]}")
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"updated {c} (PENDING)\n"
    job = daemon.job(c)
    assert [x["job"] for x in job["after"]] == [b], job["after"]   # resolved to the full id
    assert job["wait_reason"].startswith(f"waiting for job {b[:8]} to end"), job["wait_reason"]
    assert updated(daemon, c) == [f"by uid 0: after {a[:8]}:ok -> {b[:8]}:any"]
    assert f"after {a[:8]}:ok -> {b[:8]}:any" in daemon.rnx("job", "status", "--detail", c, check=True).stdout
    release(daemon, b)
    done = daemon.wait(c)
    assert done["status"] == "COMPLETED" and daemon.output(c) == "ran\n", done
    assert daemon.job(a)["status"] == "RUNNING"      # the old one never mattered
    assert ms(done["started_at"]) >= ms(daemon.job(b)["ended_at"])
    release(daemon, a)
    daemon.wait(a)


def test_slurm_dependency_spelling_and_a_queued_job_waits_again(daemon):
    """A SCHEDULED job given a dependency not met yet goes back to PENDING; once it holds, back to
    SCHEDULED (its start time is still ahead). --dependency= reads Slurm's afterok:ID."""
    a = gated(daemon)
    daemon.wait_status(a, "RUNNING")
    c = run(daemon, "--schedule=2h", "true")
    assert daemon.job(c)["status"] == "SCHEDULED"
    p = update(daemon, c, f"--dependency=afterok:{a}")
    assert p.returncode == 0, p.stderr
    job = daemon.job(c)
    assert job["status"] == "PENDING" and job["after"][0]["state"] == "ok", job
    release(daemon, a)
    assert daemon.wait(a)["status"] == "COMPLETED"
    wait_for(lambda: daemon.job(c)["status"] == "SCHEDULED", "the job back to SCHEDULED")
    daemon.api("POST", f"/v1/jobs/{c}/cancel")


@pytest.mark.parametrize("spelling", ["--after=none", "--dependency="])
def test_removed_dependencies_let_the_job_run_at_once(daemon, spelling):
    a = gated(daemon)
    daemon.wait_status(a, "RUNNING")
    c = run(daemon, f"--after={a}", "echo", "free")
    assert daemon.job(c)["status"] == "PENDING"
    p = update(daemon, c, spelling)
    assert p.returncode == 0, p.stderr
    done = daemon.wait(c)
    assert done["status"] == "COMPLETED" and daemon.output(c) == "free\n", done
    assert daemon.job(a)["status"] == "RUNNING"
    assert not done.get("after"), done
    assert updated(daemon, c) == [f"by uid 0: after {a[:8]}:any -> none"]
    assert ("released", "it waits for no job any more (its dependencies were removed)") in daemon.events(c)
    release(daemon, a)
    daemon.wait(a)


def test_a_dependency_that_can_never_hold_cancels_as_at_submission(daemon):
    bad = gated(daemon)
    release(daemon, bad, fail=True)
    assert daemon.wait(bad)["status"] == "FAILED"
    a = gated(daemon)
    c = run(daemon, f"--after={a}", "true")
    p = update(daemon, c, f"--after={bad}:ok")
    assert p.returncode == 0, p.stderr
    job = daemon.wait(c)
    assert (job["status"], job["end_reason"]) == ("CANCELED", "dependency"), job
    assert job["error"] == f"needed job {bad[:8]} to end COMPLETED; it ended FAILED", job
    assert job["started_at"] is None
    release(daemon, a)
    daemon.wait(a)


def test_a_held_job_keeps_its_hold_and_is_decided_when_released(daemon):
    bad = gated(daemon)
    release(daemon, bad, fail=True)
    assert daemon.wait(bad)["status"] == "FAILED"
    c = run(daemon, "--schedule=2h", "true")
    daemon.rnx("job", "hold", c, check=True)
    assert update(daemon, c, f"--after={bad}:ok").returncode == 0
    assert daemon.job(c)["status"] == "HELD"
    daemon.rnx("job", "release", c, check=True)
    job = daemon.wait(c)
    assert (job["status"], job["end_reason"]) == ("CANCELED", "dependency"), job


def test_cycles_and_bad_references_are_refused_naming_after(daemon):
    x = gated(daemon)
    p1 = run(daemon, f"--after={x}", "true")
    p2 = run(daemon, f"--after={p1}", "true")
    p3 = run(daemon, f"--after={p2}", "true")
    # through two others, directly, and itself
    for target in (p3, p2):
        code, e = daemon.api("POST", f"/v1/jobs/{p1}/update", {"after": [{"job": target, "state": "ok"}]})
        assert code == 400 and e["error"]["field"] == "after", e
        assert "would be a cycle" in e["error"]["message"], e
    p = update(daemon, p1, f"--after={p1}")
    assert p.returncode != 0 and f"--after: job {p1} cannot wait for itself" in p.stderr, p.stderr
    p = update(daemon, p1, f"--after={p3}:ok")
    assert p.returncode != 0 and "--after:" in p.stderr and "would be a cycle" in p.stderr, p.stderr
    # the submission's checks: a job that is not there, the text's syntax
    code, e = daemon.api("POST", f"/v1/jobs/{p1}/update", {"after": [{"job": "no-such-job-" + uuid.uuid4().hex}]})
    assert code == 400 and e["error"]["field"] == "after" and "no job" in e["error"]["message"], e
    p = update(daemon, p1, "--after=a:b:c:d")
    assert p.returncode == 2 and "--after:" in p.stderr, p.stderr
    p = update(daemon, p1, "--after=singleton")
    assert p.returncode == 2 and "singleton is not changed by an update" in p.stderr, p.stderr
    # nothing changed by the refusals
    assert [a["job"] for a in daemon.job(p1)["after"]] == [x]
    assert updated(daemon, p1) == []
    # the newer job may be named when no loop forms: p1 then waits for p3's chain's end... which
    # waits for p1 is refused above; a fresh job is fine
    y = gated(daemon)
    p = update(daemon, p1, f"--after={y}")
    assert p.returncode == 0, p.stderr
    for j in (x, y):
        release(daemon, j)
    for j in (p1, p2, p3):
        assert daemon.wait(j)["status"] == "COMPLETED"


def test_another_users_job_is_refused_exactly_as_a_missing_one(daemon):
    """An owner may not name a job it may not see; an admin's update is resolved in the owner's
    sight too."""
    root_job = gated(daemon)
    p = rnx_as(daemon, 4321, "job", "run", "--schedule=2h", "true")
    assert p.returncode == 0, p.stderr
    mine = p.stdout.strip().split()[-1]
    missing = "f" * 8
    for who, ref in ((4321, root_job), (4321, missing)):
        p = rnx_as(daemon, who, "job", "update", mine, f"--after={ref}")
        assert p.returncode != 0, p.stdout
        assert f"--after: no job '{ref}' (by id, number, unique id prefix or name) among the jobs you may see" in p.stderr
    p = update(daemon, mine, f"--after={root_job}")
    assert p.returncode != 0 and f"no job '{root_job}'" in p.stderr, p.stderr
    assert "among the jobs the job's owner may see" in p.stderr, p.stderr   # (root's update: whose sight)
    assert updated(daemon, mine) == []
    daemon.api("POST", f"/v1/jobs/{mine}/cancel")
    release(daemon, root_job)
    daemon.wait(root_job)


def test_refused_once_it_runs_or_ended_and_for_arrays(daemon):
    x = gated(daemon)
    daemon.wait_status(x, "RUNNING")
    other = gated(daemon)
    code, e = daemon.api("POST", f"/v1/jobs/{x}/update", {"after": [{"job": other}]})
    assert code == 409, e
    assert e["error"]["message"] == (f"job {x} is RUNNING; its dependencies (after) cannot change once it runs: "
                                     "those it was started after held then")
    p = update(daemon, x, "--after=none")
    assert p.returncode != 0 and "its dependencies (after) cannot change once it runs" in p.stderr, p.stderr
    for flag in ("--schedule=2h", "--schedule=now"):
        p = update(daemon, x, flag)
        assert p.returncode != 0 and "--schedule cannot change once it runs" in p.stderr, p.stderr
    release(daemon, x)
    daemon.wait(x)
    code, e = daemon.api("POST", f"/v1/jobs/{x}/update", {"after": None})
    assert code == 409 and "is COMPLETED" in e["error"]["message"], e
    # an array: its dependencies decide when its tasks are made
    aid = run(daemon, "--array=0-3", "--schedule=2h", "true").splitlines()[-1]
    p = update(daemon, aid, f"--after={other}")
    assert p.returncode != 0 and "an array's dependencies cannot change" in p.stderr, p.stderr
    p = update(daemon, aid, "--schedule=now")
    assert p.returncode != 0 and "an array's start time cannot change" in p.stderr, p.stderr
    daemon.api("POST", f"/v1/jobs/{aid}/cancel")
    release(daemon, other)
    daemon.wait(other)


def test_a_workflows_job_is_refused(daemon):
    jobs = [{"name": "a", "request": {"command": "sh", "args": ["-c", GATE]}},
            {"name": "b", "request": {"command": "true"}, "requires": [{"job": "a", "status": "COMPLETED"}]}]
    code, wf = daemon.api("POST", "/v1/workflows", {"name": "upd", "jobs": jobs})
    assert code == 201, wf
    ids = {j["name"]: j["job_id"] for j in daemon.api("GET", f"/v1/workflows/{wf['id']}")[1]["jobs"]}
    p = update(daemon, ids["b"], "--after=none")
    assert p.returncode != 0 and "its dependencies are the workflow's" in p.stderr, p.stderr
    code, e = daemon.api("POST", f"/v1/jobs/{ids['b']}/update", {"after": None})
    assert code == 409 and "its dependencies are the workflow's" in e["error"]["message"], e
    assert daemon.job(ids["b"])["status"] == "PENDING"
    release(daemon, ids["a"])
    assert daemon.wait(ids["b"])["status"] == "COMPLETED"


def test_a_singleton_keeps_waiting_for_its_turn_when_its_after_is_removed(daemon):
    name = f"upd-{uuid.uuid4().hex[:6]}"
    s1 = gated(daemon, f"--name={name}", "--singleton")
    daemon.wait_status(s1, "RUNNING")
    x = gated(daemon)
    s2 = run(daemon, f"--name={name}", "--singleton", f"--after={x}", "true")
    p = update(daemon, s2, "--after=none")
    assert p.returncode == 0, p.stderr
    job = daemon.job(s2)
    assert job["status"] == "PENDING" and "singleton" in job["wait_reason"], job
    release(daemon, s1)
    assert daemon.wait(s2)["status"] == "COMPLETED"
    assert daemon.job(x)["status"] == "RUNNING"
    release(daemon, x)
    daemon.wait(x)


def test_a_singleton_sent_to_a_later_time_lets_the_next_of_its_name_go(fresh_daemon):
    """Singleton A waits QUEUED (jobs.max_running: 1, taken by a gate job) and so holds its name;
    singleton B of that name waits PENDING for its turn. A moved to later (SCHEDULED) holds the
    name no more: B goes to the queue at once, not after A ran (the code review's finding)."""
    d = fresh_daemon("jobs:\n  max_running: 1\n")
    gate = gated(d)
    d.wait_status(gate, "RUNNING")
    name = f"upd-{uuid.uuid4().hex[:6]}"
    a = run(d, f"--name={name}", "--singleton", "true")
    assert d.job(a)["status"] == "QUEUED"
    b = run(d, f"--name={name}", "--singleton", "true")
    assert d.job(b)["status"] == "PENDING", d.job(b)
    p = update(d, a, "--schedule=2h")
    assert p.returncode == 0, p.stderr
    assert d.job(a)["status"] == "SCHEDULED"
    assert d.job(b)["status"] == "QUEUED", d.job(b)
    release(d, gate)
    assert d.wait(b)["status"] == "COMPLETED"
    assert d.job(a)["status"] == "SCHEDULED"
    d.rnx("job", "cancel", a, check=True)


def at(ts):
    return datetime.datetime.fromisoformat(ts.replace("Z", "+00:00"))


def test_schedule_moved_later_then_to_now(daemon):
    c = run(daemon, "--schedule=1h", "echo", "now")
    first = at(daemon.job(c)["scheduled_at"])
    p = update(daemon, c, "--schedule=2031-01-01T00:00:00Z")
    assert p.returncode == 0, p.stderr
    job = daemon.job(c)
    assert job["status"] == "SCHEDULED" and at(job["scheduled_at"]) == at("2031-01-01T00:00:00Z"), job
    assert updated(daemon, c)[-1].startswith("by uid 0: schedule_at 20"), updated(daemon, c)
    assert at(updated(daemon, c)[-1].split(" -> ")[1]) == at("2031-01-01T00:00:00Z"), updated(daemon, c)
    assert at(job["scheduled_at"]) > first
    p = update(daemon, c, "--schedule=2020-01-01T00:00:00Z")
    assert p.returncode != 0 and "in the past" in p.stderr, p.stderr
    p = update(daemon, c, "--schedule=now")
    assert p.returncode == 0, p.stderr
    done = daemon.wait(c)
    assert done["status"] == "COMPLETED" and daemon.output(c) == "now\n", done
    assert updated(daemon, c)[-1] == "by uid 0: schedule_at 2031-01-01T00:00:00.000Z -> none", updated(daemon, c)
    # a QUEUED job given a start time ahead waits SCHEDULED for it
    x = gated(daemon)
    q = run(daemon, f"--after={x}", "true")
    p = update(daemon, q, "--schedule=2h", "--after=none")
    assert p.returncode == 0, p.stderr
    assert daemon.job(q)["status"] == "SCHEDULED"
    daemon.api("POST", f"/v1/jobs/{q}/cancel")
    release(daemon, x)
    daemon.wait(x)


def test_changes_are_committed_before_the_answer_and_survive_kill9(fresh_daemon):
    d = fresh_daemon()
    a, b = gated(d), gated(d)
    d.wait_status(a, "RUNNING")
    c = run(d, f"--after={a}:ok", "echo", "ran")
    s = run(d, "--schedule=1h", "true")
    assert update(d, c, f"--after={b}:ok").returncode == 0
    assert update(d, s, "--schedule=2031-01-01T00:00:00Z").returncode == 0
    d.kill9()      # at once: the 200 came after the commit
    d.start()
    job = d.job(c)
    assert job["status"] == "PENDING" and [x["job"] for x in job["after"]] == [b], job
    assert at(d.job(s)["scheduled_at"]) == at("2031-01-01T00:00:00Z")
    release(d, a)
    assert d.wait(a)["status"] == "COMPLETED"
    assert d.job(c)["status"] == "PENDING"     # linked again at start to the new one only
    release(d, b)
    assert d.wait(c)["status"] == "COMPLETED" and d.output(c) == "ran\n"
