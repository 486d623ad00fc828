"""rnx job hold ARRAY_[...] of tasks not made yet (docs/batch.md): a hold that could not hold
every task named says so, and holds none of those not made yet, instead of answering that it
held the array while some of the tasks named were left to run."""
from conftest import tasks_of, wait_for

TASK0_WAITS = ["sh", "-c", '[ "$SLURM_ARRAY_TASK_ID" = 0 ] && exec sleep 600; exit 0']


def test_a_hold_of_too_scattered_tasks_is_refused_before_any_is_made(fresh_daemon):
    """300 tasks named one apart (2, 4, ... 600): each made ahead of the list's order is kept in
    the array's row as a range of its own, 256 at most. The hold made and held the first 256
    and stopped at the 257th, and answered 0 ("held array ... (256 HELD, 1 RUNNING)"): tasks
    the owner asked to hold (514, 516, ...) then ran as their turn came. Now it is refused with
    nothing made, as a hold of more than 1,000 such tasks is."""
    d = fresh_daemon("limits:\n  max_queued_per_user: 5000\n")
    aid = d.rnx("job", "run", "--array=0-999%1", *TASK0_WAITS, check=True).stdout.strip()
    try:
        wait_for(lambda: [t["status"] for t in tasks_of(d, aid)] == ["RUNNING"], "task 0 running", timeout=60)
        p = d.rnx("job", "hold", f"{aid[:8]}_[2-600:2]")
        states = {t["array"]["task"]: t["status"] for t in tasks_of(d, aid)}
        assert p.returncode != 0 and "too scattered" in p.stderr, (p.stdout, p.stderr, len(states))
        assert states == {0: "RUNNING"}, len(states)
        # a hold that fits still holds them all
        p = d.rnx("job", "hold", f"{aid[:8]}_[2-20:2]")
        assert p.returncode == 0, p.stderr
        states = {t["array"]["task"]: t["status"] for t in tasks_of(d, aid)}
        assert sorted(t for t, s in states.items() if s == "HELD") == list(range(2, 21, 2)), states
    finally:
        d.rnx("job", "kill", aid)
