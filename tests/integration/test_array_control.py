"""Slurm's scontrol suspend|resume|requeue ARRAY act on every task of the array (or on the tasks
named, ARRAY_[0-1]); rnx job suspend|resume|requeue do the same (docs/batch.md): the tasks that
run are suspended, the suspended resumed, those that run or are suspended requeued; the tasks not
made are left alone; an ordinary user may requeue their array's running tasks but not suspend
them (an admin's, as for a job)."""
import json

from conftest import rnx_as, tasks_of, wait_for

OTHER = (4331, 4331)


def running(d, aid, n):
    wait_for(lambda: sum(t["status"] == "RUNNING" for t in tasks_of(d, aid)) == n, f"{n} tasks of {aid} running",
             timeout=60)


def test_suspend_resume_and_requeue_an_array_act_on_its_tasks(daemon):
    d = daemon
    aid = d.rnx("job", "run", "--array=0-4%3", "sleep", "600", check=True).stdout.strip()
    try:
        running(d, aid, 3)
        p = d.rnx("job", "suspend", aid)
        assert p.returncode == 0 and p.stdout.startswith(f"suspended array {aid[:8]}"), (p.stdout, p.stderr)
        states = [t["status"] for t in tasks_of(d, aid)]
        assert states == ["SUSPENDED"] * 3, states
        # the two not made wait (a suspended task keeps its place under %3, as it keeps its room)
        counts = d.job(aid)["array"]["counts"]
        assert counts.get("SUSPENDED") == 3 and sum(counts.values()) == 5, counts
        assert len(tasks_of(d, aid)) == 3
        # nothing left to suspend: a 409 that says so
        p = d.rnx("job", "suspend", aid)
        assert p.returncode == 1 and "no task was left to suspend (none is RUNNING)" in p.stderr, p.stderr
        # one task by its list form, then the rest
        st, out = d.api("POST", f"/v1/jobs/{aid}_[0-1]/resume")
        assert st == 200 and out["acted"] == 2, out
        p = d.rnx("--json", "job", "resume", aid)
        assert p.returncode == 0 and json.loads(p.stdout)["acted"] == 1, p.stdout
        running(d, aid, 3)
        # requeue: the three that run go back to the queue (and run again), the waiting ones stay
        st, out = d.api("POST", f"/v1/jobs/{aid}/requeue")
        assert st == 200 and out["acted"] == 3, out
        wait_for(lambda: sum(t.get("preemptions", 0) == 1 for t in tasks_of(d, aid)) == 3, "three tasks requeued")
        running(d, aid, 3)
    finally:
        d.rnx("job", "cancel", aid)
        d.rnx("job", "kill", aid)


def test_an_ordinary_user_requeues_but_does_not_suspend_an_array(daemon):
    d = daemon
    p = rnx_as(d, OTHER, "job", "run", "--array=0-1", "sleep", "600")
    assert p.returncode == 0, p.stderr
    aid = p.stdout.strip().splitlines()[-1]
    try:
        running(d, aid, 2)
        p = rnx_as(d, OTHER, "job", "suspend", aid)
        assert p.returncode == 1 and "suspending a job" in p.stderr and "root" in p.stderr, p.stderr
        assert all(t["status"] == "RUNNING" for t in tasks_of(d, aid))
        # root suspends it; its owner may not undo that by a requeue
        assert d.rnx("job", "suspend", aid).returncode == 0
        p = rnx_as(d, OTHER, "job", "requeue", aid)
        assert p.returncode == 1 and "requeuing one undoes an admin's suspension" in p.stderr, p.stderr
        assert all(t["status"] == "SUSPENDED" for t in tasks_of(d, aid))
        assert d.rnx("job", "resume", aid).returncode == 0
        p = rnx_as(d, OTHER, "job", "requeue", "--hold", aid)
        assert p.returncode == 0, p.stderr
        wait_for(lambda: all(t["status"] == "HELD" for t in tasks_of(d, aid)), "both tasks held after the requeue")
    finally:
        d.rnx("job", "cancel", aid)
        d.rnx("job", "kill", aid)
