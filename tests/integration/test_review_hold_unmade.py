"""rnx job hold ARRAY_[...] of tasks not made yet (docs/batch.md): a hold that could not hold
every task named says so, and holds none of those not made yet, instead of answering that it
held the array while some of the tasks named were left to run."""
import os
import shutil

import pytest

from conftest import rnx_as, tasks_of, wait_for

RUNSC = shutil.which("runsc") or ("/usr/bin/runsc" if os.path.exists("/usr/bin/runsc") else None)
needs_runsc = pytest.mark.skipif(RUNSC is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")
USER = 4393  # a plain uid (setpriv), no /etc/passwd entry needed
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
        # the refusal names the field and the bound, as every refusal of a list of tasks does
        assert "tasks: " in p.stderr and "at most 256 ranges are kept" in p.stderr, p.stderr
        assert states == {0: "RUNNING"}, len(states)
        # a hold that fits still holds them all
        p = d.rnx("job", "hold", f"{aid[:8]}_[2-20:2]")
        assert p.returncode == 0, p.stderr
        states = {t["array"]["task"]: t["status"] for t in tasks_of(d, aid)}
        assert sorted(t for t, s in states.items() if s == "HELD") == list(range(2, 21, 2)), states
    finally:
        d.rnx("job", "kill", aid)


def test_a_release_and_a_cancel_of_too_scattered_tasks_name_the_field_and_the_bound(fresh_daemon):
    """Every other task of a held 0-2000 (Slurm's scontrol release 123_[1-1999:2], scancel the
    same): each task is a range of its own of the list's, more than 256: refused, nothing done,
    naming the field (tasks) and the bound (the release's said neither field); a cancel by state
    (--status=HELD) so refused exits 1 as well (it exited 0, as for a job gone on)."""
    d = fresh_daemon("limits:\n  max_queued_per_user: 5000\n")
    aid = d.rnx("job", "run", "--hold", "--array=0-2000", "true", check=True).stdout.strip()
    try:
        for verb in ("release", "cancel"):
            p = d.rnx("job", verb, f"{aid[:8]}_[1-1999:2]")
            assert p.returncode == 1 and "tasks: " in p.stderr and "256 ranges" in p.stderr, (verb, p.stderr)
        # by state too: a limit of what was named is an error, not a job gone on (exited 0)
        p = d.rnx("job", "cancel", "--status=HELD", f"{aid[:8]}_[1-1999:2]")
        assert p.returncode == 1 and "256 ranges" in p.stderr, p.stderr
        states = {d.api("GET", f"/v1/jobs/{aid}_{t}")[1]["status"] for t in range(0, 2001, 97)}
        assert states == {"HELD"}, states
    finally:
        d.rnx("job", "cancel", aid)


@needs_runsc
def test_a_hold_that_could_not_make_a_task_named_says_so(fresh_daemon):
    """A hold naming a task made (waiting) and tasks not made yet that could not be made now (here
    isolation.require_gvisor named the owner since: native is refused at a task's making) held
    the first, dropped why the others could not be held, and answered 0 ("held array ..."): the
    owner was told their tasks were held while 2 and 3 were not. Now the answer is an error
    saying how many were held and which task could not be, and why."""
    d = fresh_daemon("limits:\n  max_queued_per_user: 5000\n")
    os.chmod(d.dir, 0o755)
    aid = rnx_as(d, USER, "job", "run", "--array=0-7%1", *TASK0_WAITS).stdout.strip()
    ref = aid[:8]
    try:
        wait_for(lambda: [t["status"] for t in tasks_of(d, aid)] == ["RUNNING"], "task 0 running", timeout=60)
        # task 1 made (held, then let go: it waits for its turn under %1)
        assert rnx_as(d, USER, "job", "hold", f"{ref}_1").returncode == 0
        assert rnx_as(d, USER, "job", "release", f"{ref}_1").returncode == 0
        d.stop()
        with open(d.config, "a") as f:
            f.write(f"isolation:\n  require_gvisor: \"{USER}\"\n")
        d.start()
        p = rnx_as(d, USER, "job", "hold", f"{ref}_[1-3]")
        states = {t["array"]["task"]: t["status"] for t in tasks_of(d, aid)}
        assert p.returncode != 0 and "1 of the tasks named held" in p.stderr and "task 2" in p.stderr \
            and "require_gvisor" in p.stderr, (p.stdout, p.stderr, states)
        assert states == {0: "RUNNING", 1: "HELD"}, states
    finally:
        d.rnx("job", "kill", aid)
