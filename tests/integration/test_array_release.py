"""Releasing some tasks of an array held whole (docs/batch.md, "Tasks by reference"): Slurm's
`scontrol release 123_[3-5]` on an array submitted held (`sbatch -H --array`) releases those
tasks only. rnx keeps them as ranges of the array's list (no job, no row per task until it is
made), bounded, kept over a kill -9; an admin's hold of the array stays an admin's to release,
task by task too."""
from conftest import rnx_as, tasks_of, wait_for

USER = 4391  # a plain uid (setpriv), no /etc/passwd entry needed


def counts(d, aid):
    return d.job(aid)["array"]["counts"]


def test_releasing_tasks_of_an_array_held_whole_releases_those_only(daemon):
    """`rnx job run --hold --array=0-5%1 sleep 600`, then `rnx job release ID_[3-5]`: task 3
    runs, 4 and 5 wait QUEUED (%1), 0-2 stay HELD; rnx job list --expand and status say so; a
    kill -9 keeps it (the next to run after 3 is 4, not 0); the array's history says who."""
    d = daemon
    p = rnx_as(d, USER, "job", "run", "--hold", "--array=0-5%1", "sleep", "600")
    assert p.returncode == 0, p.stderr
    aid = p.stdout.strip().split()[-1]
    ref = aid[:8]
    try:
        assert counts(d, aid) == {"HELD": 6}
        p = rnx_as(d, USER, "job", "release", f"{ref}_[3-5]")
        assert p.returncode == 0, p.stderr
        wait_for(lambda: counts(d, aid) == {"RUNNING": 1, "QUEUED": 2, "HELD": 3}, "task 3 running, 4-5 queued")
        running = [t for t in tasks_of(d, aid) if t["status"] == "RUNNING"]
        assert [t["array"]["task"] for t in running] == [3], running
        a = d.job(aid)
        assert a["array"]["released"] == "3-5" and a["array"]["held"], a["array"]
        assert d.job(f"{ref}_0")["status"] == "HELD" and d.job(f"{ref}_4")["status"] == "QUEUED"
        out = d.rnx("job", "list", "--expand", check=True).stdout
        assert f"{ref}_3 " in out and f"{ref}_0 " not in out, out
        assert any(ev == "released" and "tasks 3-5 named" in det for ev, det in d.events(aid)), d.events(aid)
        # kept over a kill -9: after task 3, task 4 runs, 0-2 stay held
        d.kill9()
        d.start()
        assert counts(d, aid) == {"RUNNING": 1, "QUEUED": 2, "HELD": 3}, counts(d, aid)
        d.rnx("job", "stop", f"{ref}_3", check=True)
        wait_for(lambda: d.job(f"{ref}_4")["status"] == "RUNNING", "task 4 to run after task 3")
        assert counts(d, aid) == {"STOPPED": 1, "RUNNING": 1, "QUEUED": 1, "HELD": 3}, counts(d, aid)
        # held whole again: those released not made yet are held with it (task 5), the running one runs on
        assert rnx_as(d, USER, "job", "hold", aid).returncode == 0
        assert counts(d, aid) == {"STOPPED": 1, "RUNNING": 1, "HELD": 4}, counts(d, aid)
        assert d.job(aid)["array"]["released"] is None
    finally:
        d.rnx("job", "stop", aid)


def test_tasks_released_so_are_held_again_by_name_and_the_rest_released_whole(daemon):
    """`rnx job hold ID_4` of a task released from the array's hold and not made yet holds it with
    the array again; `rnx job release ID` releases every task. What rnx says of the tasks named
    is where each went (HELD -> SCHEDULED), not the array's state for tasks not made."""
    d = daemon
    aid = d.rnx("job", "run", "--hold", "--array=0-5", "--schedule=1h", "true", check=True).stdout.split()[-1]
    ref = aid[:8]
    try:
        # what rnx says of each task named is what it went from and to (it said "HELD, left as it
        # is" of tasks it had just released: their state was read as the array's, held)
        out = d.rnx("job", "release", f"{ref}_[3-5]", check=True).stdout
        assert f"{ref}_[3-5] (HELD -> SCHEDULED" in out and "left as" not in out, out
        assert counts(d, aid) == {"SCHEDULED": 3, "HELD": 3}, counts(d, aid)
        out = d.rnx("job", "hold", f"{ref}_4", check=True).stdout
        assert f"{ref}_4 (SCHEDULED -> HELD" in out and "left as" not in out, out
        assert counts(d, aid) == {"SCHEDULED": 2, "HELD": 4}, counts(d, aid)
        assert d.job(aid)["array"]["released"] == "3,5"
        d.rnx("job", "release", aid, check=True)
        assert counts(d, aid) == {"SCHEDULED": 6}, counts(d, aid)
    finally:
        d.rnx("job", "cancel", aid)


def test_an_admins_hold_of_an_array_is_an_admins_to_release_task_by_task(daemon):
    """Root holds a user's array (JobHeldAdmin): the owner's `rnx job release ID_[1]` is refused,
    403 naming root, nothing released; root's lets task 1 go, the others stay held."""
    d = daemon
    p = rnx_as(d, USER, "job", "run", "--array=0-3", "--schedule=1h", "true")
    assert p.returncode == 0, p.stderr
    aid = p.stdout.strip().split()[-1]
    ref = aid[:8]
    try:
        d.rnx("job", "hold", aid, check=True)
        p = rnx_as(d, USER, "job", "release", f"{ref}_1")
        assert p.returncode == 1 and "root" in p.stderr, (p.returncode, p.stderr)
        assert counts(d, aid) == {"HELD": 4}, counts(d, aid)
        d.rnx("job", "release", f"{ref}_1", check=True)
        assert counts(d, aid) == {"SCHEDULED": 1, "HELD": 3}, counts(d, aid)
        assert d.job(f"{ref}_1")["status"] == "SCHEDULED" and d.job(f"{ref}_2")["status"] == "HELD"
    finally:
        d.rnx("job", "cancel", aid)


def test_what_a_release_by_task_keeps_is_bounded(fresh_daemon):
    """A hostile user's release of tasks one by one is kept as ranges of the array's list: a
    4,000,001-task array held whole, 2,000,000 of its tasks released in one range costs one range
    (answered at once, counted by arithmetic); a list that would need more than 64 ranges is
    refused (409 naming the cap), nothing changed; so is one stepped across the list one task at
    a time."""
    d = fresh_daemon("limits:\n  max_queued_per_user: 5000000\n  max_jobs_per_user: 5000000\n")
    aid = d.rnx("job", "run", "--hold", "--array=0-4000000", "--schedule=1h", "true",
                check=True).stdout.split()[-1]
    ref = aid[:8]
    try:
        d.rnx("job", "release", f"{ref}_[1000000-2999999]", check=True)
        assert counts(d, aid) == {"SCHEDULED": 2000000, "HELD": 2000001}, counts(d, aid)
        # 33 ranges a request, kept across requests up to the cap
        d.rnx("job", "release", f"{ref}_[{','.join(str(k) for k in range(0, 66, 2))}]", check=True)
        assert counts(d, aid) == {"SCHEDULED": 2000033, "HELD": 2000001 - 33}, counts(d, aid)
        p = d.rnx("job", "release", f"{ref}_[{','.join(str(k) for k in range(100, 166, 2))}]")
        assert p.returncode == 1 and "64" in p.stderr and "ranges" in p.stderr, p.stderr
        p = d.rnx("job", "release", f"{ref}_[0-999998:2]")
        assert p.returncode == 1 and ("64" in p.stderr or "65536" in p.stderr or "65,536" in p.stderr), p.stderr
        assert counts(d, aid) == {"SCHEDULED": 2000033, "HELD": 2000001 - 33}, counts(d, aid)
        assert d.job(aid)["array"]["released"].endswith(",64,1000000-2999999"), d.job(aid)["array"]["released"]
    finally:
        d.rnx("job", "cancel", aid)


def test_cancel_by_state_of_an_array_with_tasks_released_takes_that_side_only(daemon):
    """An array held whole with tasks 3-5 released (waiting SCHEDULED, not made): `rnx job cancel
    --status=HELD ID` cancels the six still held and leaves the released ones waiting (it took
    all nine, the array's state for tasks not made being HELD); `--status=SCHEDULED ID_[4-8]`
    then takes 4 and 5 only, and 3 still waits."""
    d = daemon
    aid = d.rnx("job", "run", "--hold", "--array=0-8", "--schedule=1h", "true", check=True).stdout.split()[-1]
    ref = aid[:8]
    try:
        d.rnx("job", "release", f"{ref}_[3-5]", check=True)
        assert counts(d, aid) == {"SCHEDULED": 3, "HELD": 6}, counts(d, aid)
        p = d.rnx("job", "cancel", "--status=HELD", aid)
        assert p.returncode == 0, p.stderr
        assert counts(d, aid) == {"SCHEDULED": 3, "CANCELED": 6}, counts(d, aid)
        assert d.job(f"{ref}_3")["status"] == "SCHEDULED" and d.job(f"{ref}_0")["status"] == "CANCELED"
        p = d.rnx("job", "cancel", "--status=SCHEDULED", f"{ref}_[4-8]")
        assert p.returncode == 0, p.stderr
        assert counts(d, aid) == {"SCHEDULED": 1, "CANCELED": 8}, counts(d, aid)
        assert d.job(f"{ref}_3")["status"] == "SCHEDULED"
        # nothing left in that state among those named: said, nothing changed
        p = d.rnx("job", "cancel", "--status=HELD", f"{ref}_3")
        assert counts(d, aid) == {"SCHEDULED": 1, "CANCELED": 8}, (p.stdout, p.stderr)
    finally:
        d.rnx("job", "cancel", aid)


def test_tasks_released_from_a_stepped_array_are_all_made(fresh_daemon):
    """An array of step 7 held whole (`--array=0-2100:7`), its tasks 7-2100:7 released (300 tasks,
    one run of places): each is made ahead of the list's cursor (task 0 stays held), and was kept
    among those made ahead as a range of its own (ids 7, 14, ... are not neighbours), so after 256
    of them (ARRAYSPEC_MAX_RANGES) no more could be made: the other 44 waited QUEUED for ever. Every
    released task runs, once; task 0 stays held, also over a kill -9; released whole, it runs once;
    the counts add up to the array's size."""
    d = fresh_daemon("limits:\n  max_queued_per_user: 5000\n  max_jobs_per_user: 5000\n")
    aid = d.rnx("job", "run", "--hold", "--array=0-2100:7", "true", check=True).stdout.split()[-1]
    ref = aid[:8]
    try:
        d.rnx("job", "release", f"{ref}_[7-2100:7]", check=True)
        try:
            wait_for(lambda: counts(d, aid).get("COMPLETED") == 300, "the 300 tasks released to complete", 60)
        except AssertionError:
            raise AssertionError(f"the 300 tasks released did not all complete: {counts(d, aid)}")
        assert counts(d, aid) == {"COMPLETED": 300, "HELD": 1}, counts(d, aid)
        done = sorted(t["array"]["task"] for t in tasks_of(d, aid) if t["status"] == "COMPLETED")
        assert done == list(range(7, 2101, 7)), done
        # what was made ahead is kept over a kill -9 (one range, 7-2100): task 0 still held, to make once
        d.kill9()
        d.start()
        assert counts(d, aid) == {"COMPLETED": 300, "HELD": 1}, counts(d, aid)
        d.rnx("job", "release", aid, check=True)
        wait_for(lambda: counts(d, aid) == {"COMPLETED": 301}, "task 0 to run once released", 120)
    finally:
        d.rnx("job", "cancel", aid)
