"""What rnx says of an act on tasks of an array, as a Slurm user reads scontrol and scancel
(docs/batch.md "Tasks by reference"): `rnx job hold ID_4` said `held array ...`, as though the
whole array were held, and `rnx job cancel ID_[0-4]` printed counts only, not which task was
canceled, which runs and was left running, which had ended."""

from conftest import wait_for

# task 0 ends at once, the others run until stopped; one at a time (%1): task 1 runs, the rest
# are not made yet
SWEEP = ("sh", "-c", 'test "$JOBLET_ARRAY_TASK_ID" = 0 || exec sleep 1000')


def run(d, *args):
    return d.rnx("job", "run", *args, check=True).stdout.strip()


def task(d, aid, t):
    return d.api("GET", f"/v1/jobs/{aid[:8]}_{t}")[1]


def swept(d):
    """An array 0-4%1 whose task 0 COMPLETED and task 1 runs; 2-4 not made yet."""
    aid = run(d, "--array=0-4%1", *SWEEP)
    wait_for(lambda: task(d, aid, 1).get("status") == "RUNNING", "task 1 to run")
    assert task(d, aid, 0)["status"] == "COMPLETED" and task(d, aid, 2)["made"] is False
    return aid


def counts_line(out):
    return out.split(" (now ", 1)[0] if " (now " in out else out


def test_hold_of_one_task_names_the_task_not_the_array(daemon):
    d = daemon
    aid = swept(d)
    ref = f"{aid[:8]}_3"
    p = d.rnx("job", "hold", ref)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"held 1 task of array {aid}: {ref} (QUEUED -> HELD; the array now "), p.stdout
    assert "held array" not in p.stdout
    assert task(d, aid, 3)["status"] == "HELD"
    # several: which went how, the running one left as it is
    p = d.rnx("job", "hold", f"{aid[:8]}_[1-2,4]")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith(f"held 2 tasks of array {aid} (now "), p.stdout
    assert lines[1:] == [f"  {aid[:8]}_[2,4]: QUEUED -> HELD", f"  {aid[:8]}_1: RUNNING, left as it is"], p.stdout
    # the API says it too
    code, r = d.api("POST", f"/v1/jobs/{aid[:8]}_[2-4]/release")
    assert code == 200, r
    assert r["named"] == "2-4" and r["went"] == [{"tasks": "2-4", "was": "HELD", "now": "QUEUED"}], r
    # the whole array is still said as the array
    p = d.rnx("job", "hold", aid)
    assert p.returncode == 0 and p.stdout.startswith(f"held array {aid} ("), p.stdout
    d.rnx("job", "stop", aid, check=True)


def test_cancel_of_tasks_says_which_were_canceled_left_running_or_ended(daemon):
    d = daemon
    aid = swept(d)
    d.rnx("job", "hold", f"{aid[:8]}_2", check=True)  # made, HELD
    p = d.rnx("job", "cancel", f"{aid[:8]}_[0-4]")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert counts_line(lines[0]) == f"canceled 3 tasks of array {aid}", p.stdout
    assert lines[1:] == [
        f"  {aid[:8]}_2: HELD -> CANCELED",
        f"  {aid[:8]}_[3-4]: QUEUED -> CANCELED",
        f"  {aid[:8]}_0: already ended (COMPLETED), left as it is",
        f"  {aid[:8]}_1: RUNNING, left running (a cancel takes only tasks not started; rnx job stop {aid[:8]}_1 "
        "stops it)"], p.stdout
    assert task(d, aid, 1)["status"] == "RUNNING"
    assert [task(d, aid, t)["status"] for t in (2, 3, 4)] == ["CANCELED"] * 3
    # a task the array does not have: nothing done, and the exit status says so (scancel's)
    p = d.rnx("job", "stop", f"{aid[:8]}_[1,7]")
    assert p.returncode == 1 and "has no task 7" in p.stderr, p
    assert task(d, aid, 1)["status"] == "RUNNING"
    # stop: the running one stopped, the ended ones said
    p = d.rnx("job", "stop", f"{aid[:8]}_[0-2]")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert counts_line(lines[0]) == f"stopping or canceled 1 task of array {aid}", p.stdout
    assert lines[1] in (f"  {aid[:8]}_1: RUNNING -> STOPPING", f"  {aid[:8]}_1: RUNNING -> STOPPED"), p.stdout
    assert sorted(lines[2:]) == [f"  {aid[:8]}_0: already ended (COMPLETED), left as it is",
                                 f"  {aid[:8]}_2: already ended (CANCELED), left as it is"], p.stdout
    d.wait(aid)


def test_update_of_a_task_not_started_says_why_and_what_would_do(daemon):
    """rnx job update ID_3 of a task not made yet was refused as `an array is updated whole ...; a
    task made is updated by its own id`, 400, naming neither the task nor why: now 409 naming
    it, that nothing changed, and what is accepted; following that works."""
    d = daemon
    aid = swept(d)
    short = aid[:8]
    before = d.job(aid)["request"]
    p = d.rnx("job", "update", f"{short}_3", "--max-runtime=2h")
    assert p.returncode == 1, p
    assert p.stderr == (f"rnx: task 3 of array {aid} has not started yet: it has no request of its own (it is made, "
                        "from the array's, when the scheduler starts it), and nothing was changed; update the array "
                        f"whole (rnx job update {short}: every task not started gets it), or hold the task first "
                        f"(rnx job hold {short}_3 makes it a job of its own, HELD), update it by its id, then release "
                        "it\n"), p.stderr
    code, e = d.api("POST", f"/v1/jobs/{short}_3/update", {"max_runtime_s": 7200})
    assert code == 409, e
    assert d.job(aid)["request"] == before and task(d, aid, 3)["made"] is False
    # as it says: held apart, updated, released
    d.rnx("job", "hold", f"{short}_3", check=True)
    d.rnx("job", "update", f"{short}_3", "--max-runtime=2h", check=True)
    assert task(d, aid, 3)["limits"]["max_runtime_s"] == 7200
    d.rnx("job", "release", f"{short}_3", check=True)
    # canceled before it started: nothing is left
    d.rnx("job", "cancel", f"{short}_4", check=True)
    code, e = d.api("POST", f"/v1/jobs/{short}_4/update", {"max_runtime_s": 7200})
    assert code == 409 and e["error"]["message"] == (f"task 4 of array {aid} was canceled before it started: "
                                                     "nothing of it is left to update"), e
    # several: one at a time, or the array whole
    code, e = d.api("POST", f"/v1/jobs/{short}_[2-3]/update", {"max_runtime_s": 7200})
    assert code == 400 and "updated whole" in e["error"]["message"] and f"{short}_2)" in e["error"]["message"], e
    d.rnx("job", "stop", aid, check=True)
