"""--after=ARRAY:corr (Slurm's aftercorr) task by task, against the real daemon and rnx
(docs/batch.md): each task starts as soon as the task of the same id of the other array
COMPLETED, ahead of the tasks before it in the list that still wait; one whose own task failed is
canceled with the reason while later tasks go on; tasks made out of the list's order outlive a
kill -9 of joblet, none made twice, none lost."""
import json
import time

import pytest

from conftest import rnx_as, tasks_of, wait_for
from test_arrays import LIMITS, wait_array
from test_dependencies import GATE, release

# task 0 of the array waited on (and whichever others the test names) waits for the test's file
def gated(*tasks):
    cond = " -o ".join(f'"$SLURM_ARRAY_TASK_ID" = {t}' for t in tasks)
    return f"if [ {cond} ]; then {GATE}; fi; test $SLURM_ARRAY_TASK_ID != ${{FAIL_TASK:-x}}"


@pytest.fixture
def d(fresh_daemon):
    return fresh_daemon(LIMITS)


def run(d, *args):
    return d.rnx("job", "run", *args, check=True).stdout.strip()


def counts(d, ref):
    return d.job(ref)["array"]["counts"]


def test_corr_tasks_go_as_their_own_task_completes(d):
    """A's task 0 waits long, tasks 1-3 end at once: B's tasks 1-3 COMPLETE while A_0 still runs,
    then B_0 once A_0 completes; each B task ran once and saw its own SLURM_ARRAY_TASK_ID."""
    a = run(d, "--array=0-3", "sh", "-c", gated(0))
    as_ = a[:8]
    b = run(d, "--array=0-3", f"--after={a}:corr", "sh", "-c", "echo $SLURM_ARRAY_TASK_ID")
    bs = b[:8]
    for t in (1, 2, 3):
        assert d.wait(f"{bs}_{t}")["status"] == "COMPLETED"
    # (gated, it cannot have ended; on a loaded machine its start may be heard after B's ends)
    a0 = d.wait_status(f"{as_}_0", "RUNNING")
    assert counts(d, b) == {"COMPLETED": 3, "PENDING": 1}
    st = d.rnx("job", "status", f"{bs}_0", check=True)
    assert "PENDING" in st.stdout, st.stdout
    assert d.job(b)["array"]["wait"] == f"task 0 waits for task 0 of array {as_} to end COMPLETED (it is RUNNING)"
    release(d, a0["id"])
    done = wait_array(d, b)
    assert done["status"] == "COMPLETED" and done["array"]["counts"] == {"COMPLETED": 4}, done
    tasks = tasks_of(d, b)
    assert sorted(j["array"]["task"] for j in tasks) == [0, 1, 2, 3], tasks
    for j in tasks:
        t = j["array"]["task"]
        assert d.output(j["id"]) == f"{t}\n", j
        assert d.job(j["id"])["started_at"] >= d.job(f"{as_}_{t}")["ended_at"], j
    lst = d.rnx("job", "list", check=True).stdout
    line = next(x for x in lst.splitlines() if x.startswith(bs))
    assert "COMPLETED" in line, lst
    # a cancel naming tasks made already (in the list's order or ahead of it) cancels nothing
    # and leaves the counts as they are (not one task counted twice, its job and CANCELED)
    for ref in (f"{bs}_[0-1]", f"{bs}_[2-3]"):
        r = d.rnx("job", "cancel", ref)
        assert r.returncode != 0 and "no task named was left to cancel (those named: 2 COMPLETED)" in r.stderr, \
            (r.stdout, r.stderr)
        assert counts(d, b) == {"COMPLETED": 4}
    assert d.job(f"{bs}_0")["status"] == "COMPLETED"


def test_corr_task_canceled_when_its_own_failed_while_later_ones_go(d):
    """A_1 fails while A_0 and A_4 wait: B_1 is canceled with the reason, B_2 and B_3 complete,
    B_0 and B_4 wait; a cancel of B_[3-4] cancels B_4 before it is made (B_3 ended); A_4's end
    later makes nothing; A_0's end lets B_0 go."""
    a = run(d, "--array=0-4", "--env=FAIL_TASK=1", "sh", "-c", gated(0, 4))
    as_ = a[:8]
    b = run(d, "--array=0-4%2", f"--after={a}:corr", "sh", "-c", "echo $SLURM_ARRAY_TASK_ID")
    bs = b[:8]
    b1 = d.wait(f"{bs}_1")
    assert b1["status"] == "CANCELED" and b1["end_reason"] == "dependency", b1
    assert b1["error"] == f"needed task 1 of array {as_} to end COMPLETED; it ended FAILED", b1
    for t in (2, 3):
        assert d.wait(f"{bs}_{t}")["status"] == "COMPLETED"
    for t in (0, 4):
        # (gated, they cannot have ended; on a loaded machine their start may be heard after B's ends)
        d.wait_status(f"{as_}_{t}", "RUNNING")
        x = d.job(f"{bs}_{t}")
        assert x["status"] == "PENDING" and x["made"] is False, x
    assert counts(d, b) == {"COMPLETED": 2, "CANCELED": 1, "PENDING": 2}
    d.rnx("job", "cancel", f"{bs}_[3-4]", check=True)
    x = d.job(f"{bs}_4")
    assert x["status"] == "CANCELED" and x["made"] is False, x
    assert counts(d, b) == {"COMPLETED": 2, "CANCELED": 2, "PENDING": 1}
    release(d, d.job(f"{as_}_4")["id"])
    assert d.wait(f"{as_}_4")["status"] == "COMPLETED"
    release(d, d.job(f"{as_}_0")["id"])
    done = wait_array(d, b)
    assert done["array"]["counts"] == {"COMPLETED": 3, "CANCELED": 2}, done
    tasks = tasks_of(d, b)
    assert sorted(j["array"]["task"] for j in tasks) == [0, 1, 2, 3], tasks   # B_4 never made
    assert d.output(d.job(f"{bs}_0")["id"]) == "0\n"


def test_corr_tasks_made_ahead_outlive_kill9(d):
    """B's tasks 1-5 are made ahead of B_0 (their own tasks completed, A_0 waits) and run; joblet
    is killed (-9) and started again: none is made again, B_0 still waits for A_0, and every task
    ends, each made once."""
    a = run(d, "--array=0-5", "sh", "-c", gated(0))
    as_ = a[:8]
    b = run(d, "--array=0-5", f"--after={a}:corr", "sh", "-c", f"{GATE}; echo $SLURM_ARRAY_TASK_ID")
    bs = b[:8]
    running = {}
    for t in (1, 2, 3, 4, 5):
        running[t] = d.wait_status(f"{bs}_{t}", "RUNNING")["id"]
    assert counts(d, b) == {"RUNNING": 5, "PENDING": 1}
    d.kill9()
    d.start()
    assert counts(d, b) == {"RUNNING": 5, "PENDING": 1}
    x = d.job(f"{bs}_0")
    assert x["status"] == "PENDING" and x["made"] is False, x
    assert d.job(b)["array"]["made"] == 5
    for t in (1, 2):
        release(d, running[t])
        assert d.wait(f"{bs}_{t}")["status"] == "COMPLETED"
    # again, with B_0 still waiting and tasks ended out of order
    d.kill9()
    d.start()
    assert counts(d, b) == {"COMPLETED": 2, "RUNNING": 3, "PENDING": 1}
    release(d, d.job(f"{as_}_0")["id"])
    b0 = d.wait_status(f"{bs}_0", "RUNNING")
    for jid in (b0["id"], running[3], running[4], running[5]):
        release(d, jid)
    done = wait_array(d, b)
    assert done["array"]["counts"] == {"COMPLETED": 6}, done
    tasks = tasks_of(d, b)
    assert sorted(j["array"]["task"] for j in tasks) == [0, 1, 2, 3, 4, 5], tasks
    for j in tasks:
        assert d.output(j["id"]) == f"{j['array']['task']}\n", j
    wait_for(lambda: "arrays: the counts per owner differ" not in d.log(), "consistent counts")


def test_holding_a_corr_task_not_made_yet_keeps_it_waiting_for_its_own_task(d):
    """`rnx job hold B_0` of a task not made yet made it at once, HELD, as a job of its own with
    nothing to wait for (a task made waits for nothing: its --after=A:corr was the array's): once
    released it ran while A_0, its own task, still ran, --after=ARRAY:corr undone by a hold and
    a release. A hold of such a task is refused while its own task has not completed (as while
    the whole array waits for its --after), and nothing is made; B_0 goes once A_0 completes."""
    a = run(d, "--array=0-1", "sh", "-c", gated(0))
    as_ = a[:8]
    b = run(d, "--array=0-1", f"--after={a}:corr", "sh", "-c", "echo $SLURM_ARRAY_TASK_ID")
    bs = b[:8]
    assert d.wait(f"{bs}_1")["status"] == "COMPLETED"
    a0 = d.wait_status(f"{as_}_0", "RUNNING")
    r = d.rnx("job", "hold", f"{bs}_0")
    made = {j["array"]["task"]: j["status"] for j in tasks_of(d, b)}
    assert r.returncode != 0 and f"waits for task 0 of array {as_}" in r.stderr, (r.stdout, r.stderr, made)
    assert made == {1: "COMPLETED"}, made
    release(d, a0["id"])
    done = wait_array(d, b)
    assert done["array"]["counts"] == {"COMPLETED": 2}, done
    assert d.job(f"{bs}_0")["started_at"] >= d.job(f"{as_}_0")["ended_at"]


def test_tasks_canceled_while_waiting_to_go_ahead_keep_none_behind_them_waiting(fresh_daemon):
    """B waits task by task on A, whose task 0 runs on and 1-99 COMPLETED: B's 1-64 (a pass's
    worth) are found to go ahead of the cursor and wait for room (their owner runs
    limits.max_running_per_user jobs), B's 65-99 behind them to be looked at. Its owner cancels
    B's 1-64 and ends the job that took the room: B's 65-99 go. Before, the canceled ones stayed
    counted among those to go: the pass offered them, made none, and asked for no other, and B's
    65-99 waited QUEUED for an unrelated event (here: an account look-up answered, within the
    hour's account_cache_s)."""
    user = 4361
    # (answers kept an hour: an account look-up answered is a pass too, and with answers kept 60 s
    # one came within a minute and hid the stall)
    d = fresh_daemon(LIMITS + "  max_running_per_user: 2\nserver:\n  account_cache_s: 3600\n")

    def rnx(*args):
        p = rnx_as(d, user, "job", *args)
        assert p.returncode == 0, p.stderr
        return p.stdout.strip()

    a = rnx("run", "--array=0-99", "sh", "-c", 'if [ "$SLURM_ARRAY_TASK_ID" = 0 ]; then exec sleep 1000; fi')
    wait_for(lambda: counts(d, a) == {"RUNNING": 1, "COMPLETED": 99}, "A's tasks 1-99 end", timeout=300)
    x = rnx("run", "sleep", "1000")
    d.wait_status(x, "RUNNING")
    b = rnx("run", "--array=0-99", f"--after={a}:corr", "true")
    time.sleep(1)   # (B's first pass, at its submission, found its 1-64 may go: they wait for room)
    rnx("cancel", f"{b[:8]}_[1-64]")
    assert counts(d, b) == {"CANCELED": 64, "QUEUED": 35, "PENDING": 1}
    rnx("stop", x)
    wait_for(lambda: counts(d, b) == {"CANCELED": 64, "COMPLETED": 35, "PENDING": 1}, "B's 65-99 go", timeout=180)
    rnx("stop", a)
    wait_for(lambda: counts(d, b) == {"CANCELED": 65, "COMPLETED": 35}, "B decided", timeout=120)


def test_tasks_waiting_for_their_own_task_are_pending_the_others_queued(d):
    """As Slurm's squeue shows a task waiting on its own task PD (reason Dependency): B waits on A
    task by task, %1. A's 1, 3, 5 COMPLETED, its 0, 2, 4 run on: one of B's 1, 3, 5 runs, the
    other two wait QUEUED for room under the %1, B_0, B_2 and B_4 PENDING, in the counts, the task's own status,
    its reason, its line in the listing, and the listings and cancels by state; the same after a kill -9 of joblet. A_2
    completing makes B_2 QUEUED; a cancel --status=QUEUED takes only those two and B_2, a cancel
    --status=PENDING only those still waiting."""
    a = run(d, "--array=0-5", "sh", "-c", gated(0, 2, 4))
    as_ = a[:8]
    b = run(d, "--array=0-5%1", f"--after={a}:corr", "sh", "-c", f"{GATE}; echo $SLURM_ARRAY_TASK_ID")
    bs = b[:8]
    for t in (0, 2, 4):
        d.wait_status(f"{as_}_{t}", "RUNNING")
    wait_for(lambda: counts(d, b) == {"RUNNING": 1, "QUEUED": 2, "PENDING": 3}, "B's counts split")
    # (the first of A's 1, 3, 5 to complete: its task of B runs)
    [first] = tasks_of(d, b)
    ran = first["array"]["task"]
    rest = sorted({1, 3, 5} - {ran})

    def states():
        return {t: d.job(f"{bs}_{t}")["status"] for t in (0, 2, 4, *rest)}

    def listed(status):
        out = d.rnx("job", "list", f"--status={status}", "--json", check=True).stdout
        return [x["id"] for x in json.loads(out)]

    for _ in range(2):
        assert states() == {0: "PENDING", 2: "PENDING", 4: "PENDING", rest[0]: "QUEUED", rest[1]: "QUEUED"}
        assert d.job(b)["status"] == "RUNNING"
        x = d.job(f"{bs}_2")
        assert x["made"] is False and x["wait_reason"] == \
            f"not started yet: task 2 waits for task 2 of array {as_} to end COMPLETED (it is RUNNING)", x
        assert "its own task completed" in d.job(f"{bs}_{rest[0]}")["wait_reason"]
        assert b in listed("PENDING") and b in listed("QUEUED")
        line = next(x for x in d.rnx("job", "list", check=True).stdout.splitlines() if x.startswith(bs))
        assert "1 RUNNING, 2 QUEUED, 3 PENDING" in line, line
        d.kill9()
        d.start()
    release(d, d.job(f"{as_}_2")["id"])
    wait_for(lambda: counts(d, b) == {"RUNNING": 1, "QUEUED": 3, "PENDING": 2}, "B_2 no longer waits")
    assert d.job(f"{bs}_2")["status"] == "QUEUED"
    d.rnx("job", "cancel", "--status=QUEUED", bs, check=True)
    assert counts(d, b) == {"RUNNING": 1, "CANCELED": 3, "PENDING": 2}
    assert states() == {0: "PENDING", 2: "CANCELED", 4: "PENDING", rest[0]: "CANCELED", rest[1]: "CANCELED"}
    d.rnx("job", "cancel", "--status=PENDING", f"{bs}_[0-3]", check=True)   # (B_0 of B_0 and B_4)
    assert counts(d, b) == {"RUNNING": 1, "CANCELED": 4, "PENDING": 1}
    assert b not in listed("QUEUED") and b in listed("PENDING")
    release(d, d.job(f"{as_}_4")["id"])
    release(d, first["id"])
    b4 = d.wait_status(f"{bs}_4", "RUNNING")
    release(d, b4["id"])
    done = wait_array(d, b)
    assert done["array"]["counts"] == {"COMPLETED": 2, "CANCELED": 4}, done
    release(d, d.job(f"{as_}_0")["id"])
    assert wait_array(d, a)["array"]["counts"] == {"COMPLETED": 6}
