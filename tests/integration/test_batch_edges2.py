"""Batch edges (docs/batch.md) a hostile tester found: a task requeued while its array is held,
a deleted task's job and its array's end, a long task list naming missing tasks, and who may
release an admin's hold."""
import time

from conftest import rnx_as, tasks_of, wait_for

USER = 4377  # a plain uid (setpriv), no /etc/passwd entry needed


def test_a_task_requeued_while_its_array_is_held_waits_held(daemon):
    """docs/batch.md: `rnx job hold ID` holds the whole array: "no task is made while it is held;
    those waiting are held too". A running task requeued while its array is held waits HELD,
    its wait reason saying the array is held, and does not run again until the array is
    released."""
    d = daemon
    aid = d.submit("sleep", "600", array="0-2%2")
    wait_for(lambda: d.job(aid)["array"]["counts"].get("RUNNING") == 2, "two tasks running")
    d.rnx("job", "hold", aid, check=True)
    task0 = d.job(f"{aid[:8]}_0")["id"]
    d.rnx("job", "requeue", task0, check=True)
    wait_for(lambda: d.job(task0)["preemptions"] == 1, "the requeue's stop")
    time.sleep(2)  # the scheduler starts a PREEMPTED job within a pass
    try:
        j = d.job(task0)
        assert j["status"] == "HELD", j
        assert "array" in j["wait_reason"] and "held" in j["wait_reason"], j["wait_reason"]
        d.rnx("job", "release", aid, check=True)
        wait_for(lambda: d.job(task0)["status"] == "RUNNING", "the task to run again once its array is released")
    finally:
        d.rnx("job", "stop", aid)


def test_deleting_a_failed_tasks_job_does_not_turn_its_array_completed(daemon):
    """docs/api.md: an array's `counts` "has every task, made or not" and its status is FAILED
    "if one failed". `rnx job delete ID_1` (a task's job) must not drop that task's end: the
    array stays FAILED (exit 1), `rnx job wait` exits 1, and `--after=ARRAY:ok` submitted then
    is canceled."""
    d = daemon
    aid = d.submit("sh", "-c", "exit $JOBLET_ARRAY_TASK_ID", array="0-1")
    wait_for(lambda: d.job(aid)["status"] == "FAILED", "the array to end FAILED")
    before = d.job(aid)
    assert (before["exit_code"], before["array"]["counts"]) == (1, {"COMPLETED": 1, "FAILED": 1}), before
    d.rnx("job", "delete", f"{aid[:8]}_1", check=True)
    after = d.job(aid)
    w = d.rnx("job", "wait", aid)
    dep = d.rnx("job", "run", f"--after={aid}:ok", "true", check=True).stdout.strip()
    dep_end = d.wait(dep)["status"]
    assert (after["status"], after["exit_code"]) == ("FAILED", 1), (after["status"], after["exit_code"],
                                                                     after["array"]["counts"])
    assert w.returncode == 1, (w.returncode, w.stdout)
    assert dep_end == "CANCELED", dep_end
    # the deleted task counts as it ended, kept in the array's row: a kill -9 changes nothing
    assert after["array"]["counts"] == {"COMPLETED": 1, "FAILED": 1} and after["array"]["deleted"] == 1, after
    d.kill9()
    d.start()
    again = d.job(aid)
    assert (again["status"], again["exit_code"], again["array"]["counts"]) == ("FAILED", 1, after["array"]["counts"])
    # and deleting the array whole still works, the last task's job and all
    d.rnx("job", "delete", aid, check=True)


def test_a_task_list_naming_missing_tasks_is_refused_whatever_its_length(daemon):
    """`rnx job cancel ID_[0-5]` of an array 0-10:2 is refused ("has no task 1"), and so is
    `ID_[0-5000]`, which names the same missing tasks and more: the answer does not depend on
    how many tasks the list names. A long list the array has whole is taken."""
    d = daemon
    aid = d.submit("true", array="0-10:2", hold=True)
    try:
        small = d.rnx("job", "cancel", f"{aid[:8]}_[0-5]")
        assert small.returncode == 1 and "has no task 1" in small.stderr, small.stderr
        big = d.rnx("job", "cancel", f"{aid[:8]}_[0-5000]")
        assert (big.returncode, d.job(aid)["status"]) == (1, "HELD"), (big.stdout, big.stderr)
        assert "has no task 1" in big.stderr, big.stderr
        stepped = d.rnx("job", "cancel", f"{aid[:8]}_[0-5000:2]")
        assert stepped.returncode == 1 and "has no task 12" in stepped.stderr, stepped.stderr
        assert d.job(aid)["status"] == "HELD"
    finally:
        d.rnx("job", "cancel", aid)


def test_a_long_task_list_the_array_has_is_taken(fresh_daemon):
    """A list of more than 4,096 tasks, every one of them the array's, names them: the check
    by ranges takes what the array has."""
    d = fresh_daemon("limits:\n  max_queued_per_user: 200000\n  max_jobs_per_user: 200000\n")
    aid = d.submit("true", array="0-19999", hold=True)
    try:
        p = d.rnx("job", "cancel", f"{aid[:8]}_[0-4999,6000-7999]")
        assert p.returncode == 0, p.stderr
        counts = d.job(aid)["array"]["counts"]
        assert counts.get("CANCELED") == 7000, counts
    finally:
        d.rnx("job", "cancel", aid)


def test_an_admins_hold_is_not_released_by_the_jobs_owner(daemon):
    """Slurm keeps who held a job: `scontrol hold` by an operator is JobHeldAdmin, which its
    owner's `scontrol release` cannot undo (only JobHeldUser can). The owner's release of
    root's hold is refused, naming who may; root releases it."""
    d = daemon
    p = rnx_as(d, USER, "job", "run", "--schedule=2h", "true")
    assert p.returncode == 0, p.stderr
    jid = p.stdout.strip()
    try:
        d.rnx("job", "hold", jid, check=True)
        assert d.job(jid)["wait_reason"].startswith("held by uid 0"), d.job(jid)
        p = rnx_as(d, USER, "job", "release", jid)
        assert p.returncode == 1 and d.job(jid)["status"] == "HELD", (p.returncode, p.stdout, d.job(jid)["status"])
        assert "root" in p.stderr or "admin" in p.stderr, p.stderr
        d.rnx("job", "release", jid, check=True)
        assert d.job(jid)["status"] != "HELD"
    finally:
        d.rnx("job", "cancel", jid)


def test_an_owners_own_hold_is_released_by_the_owner(daemon):
    """The user's own hold (Slurm's JobHeldUser) is the user's to release."""
    d = daemon
    p = rnx_as(d, USER, "job", "run", "--schedule=2h", "true")
    assert p.returncode == 0, p.stderr
    jid = p.stdout.strip()
    try:
        assert rnx_as(d, USER, "job", "hold", jid).returncode == 0
        p = rnx_as(d, USER, "job", "release", jid)
        assert p.returncode == 0 and d.job(jid)["status"] != "HELD", (p.stderr, d.job(jid)["status"])
    finally:
        d.rnx("job", "cancel", jid)


def test_an_admins_hold_of_an_array_is_not_released_by_its_owner(daemon):
    """The same for an array held by root: its owner's release is refused."""
    d = daemon
    p = rnx_as(d, USER, "job", "run", "--array=0-3", "--schedule=2h", "true")
    assert p.returncode == 0, p.stderr
    aid = p.stdout.strip()
    try:
        d.rnx("job", "hold", aid, check=True)
        p = rnx_as(d, USER, "job", "release", aid)
        assert p.returncode == 1 and d.job(aid)["status"] == "HELD", (p.returncode, p.stdout, d.job(aid)["status"])
        d.rnx("job", "release", aid, check=True)
        assert d.job(aid)["status"] != "HELD"
    finally:
        d.rnx("job", "cancel", aid)


def test_an_owners_requeue_hold_of_a_task_does_not_make_an_admins_array_hold_theirs(daemon):
    """A running task of an array root holds, requeued --hold by its owner: it waits held, and the
    hold is still root's (its array's), not the owner's to release and run while the array is
    held."""
    d = daemon
    p = rnx_as(d, USER, "job", "run", "--array=0-1%1", "sleep", "600")
    assert p.returncode == 0, p.stderr
    aid = p.stdout.strip().split()[-1]
    try:
        task = wait_for(lambda: [t for t in tasks_of(d, aid) if t["status"] == "RUNNING"], "a running task")[0]["id"]
        d.rnx("job", "hold", aid, check=True)
        p = rnx_as(d, USER, "job", "requeue", "--hold", task)
        assert p.returncode == 0, p.stderr
        wait_for(lambda: d.job(task)["status"] == "HELD", "the task held")
        p = rnx_as(d, USER, "job", "release", task)
        assert p.returncode == 1 and d.job(task)["status"] == "HELD", (p.returncode, p.stderr, d.job(task))
    finally:
        d.rnx("job", "cancel", aid)


def test_an_owners_hold_of_a_task_does_not_let_it_out_of_an_admins_array_hold(daemon):
    """The owner holds task 3 (made now, HELD by the owner: Slurm's JobHeldUser), then root holds
    the whole array (JobHeldAdmin: "no task is made while it is held; those waiting are held
    too"). The owner's `rnx job release ID_3` must not let that task run while root's hold of its
    array stands (in Slurm the operator's hold covers every task of the array, split out or
    not): refused, 403 naming who may; root's release of the array lets it go."""
    d = daemon
    p = rnx_as(d, USER, "job", "run", "--array=0-3%1", "sleep", "600")
    assert p.returncode == 0, p.stderr
    aid = p.stdout.strip().split()[-1]
    try:
        assert rnx_as(d, USER, "job", "hold", f"{aid[:8]}_3").returncode == 0
        task3 = d.job(f"{aid[:8]}_3")["id"]
        d.rnx("job", "hold", aid, check=True)
        p = rnx_as(d, USER, "job", "release", f"{aid[:8]}_3")
        assert p.returncode == 1 and d.job(task3)["status"] == "HELD", (p.returncode, p.stdout, d.job(task3))
        assert "root" in p.stderr and "array" in p.stderr, p.stderr
        d.rnx("job", "release", aid, check=True)
        assert d.job(task3)["status"] != "HELD", d.job(task3)
    finally:
        d.rnx("job", "cancel", aid)
