"""A dependency that held stays held (Slurm: once satisfied, a job's dependency is gone): the job or
array it let go is not decided again later, neither by a restart of joblet (kill -9 included) nor
by `rnx job release`, so deleting the job it named afterwards changes nothing. A job held while it
still waited (PENDING) is decided on release as before (test_dependencies.py)."""
import json
import time

from conftest import submit_array, tasks_of
from test_arrays import LIMITS, wait_array
from test_dependencies import GATE, gated, release, run, wait_running


def wait_not_pending(d, jid, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        j = d.job(jid)
        if j["status"] != "PENDING":
            return j
        time.sleep(0.05)
    raise AssertionError(f"{jid} still PENDING: {d.job(jid)}")


def complete(d, prep):
    release(d, prep)
    assert d.wait(prep)["status"] == "COMPLETED"


def test_held_array_let_go_survives_deleted_dependency_and_kill9(fresh_daemon):
    """An array after prep:ok, held while it waits: prep completes (the array is let go, still
    held: no task made), prep is deleted, joblet is killed (-9) and started again. The array is
    still HELD, not canceled; released, every task runs."""
    d = fresh_daemon(LIMITS)
    prep = gated(d, "prep")
    wait_running(d, prep)
    arr = run(d, "--array=0-9%1", "--after=prep:ok", "/bin/true")
    assert d.job(arr)["status"] == "PENDING"
    d.rnx("job", "hold", arr, check=True)
    complete(d, prep)
    a = wait_not_pending(d, arr)
    assert a["status"] == "HELD" and a["array"]["made"] == 0, a
    d.rnx("job", "delete", prep, check=True)
    d.kill9()
    d.start()
    a = d.job(arr)
    assert a["status"] == "HELD" and "CANCELED" not in a["array"]["counts"], a
    d.rnx("job", "release", arr, check=True)
    done = wait_array(d, arr)
    assert done["array"]["counts"] == {"COMPLETED": 10}, done


def test_scheduled_array_let_go_survives_deleted_dependency_and_restart(fresh_daemon):
    """The same for an array scheduled for later (--schedule): let go, it is SCHEDULED (no task
    made before its time); prep deleted; joblet stopped and started again: still SCHEDULED, and
    its tasks run at their time."""
    d = fresh_daemon(LIMITS)
    prep = gated(d)
    wait_running(d, prep)
    arr = submit_array(d, "0-3%1", "/bin/true", after=[{"job": prep, "state": "ok"}],
                       # (40 s ahead: a stop and a start come first, under a whole run's load)
                       schedule_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 40)))["id"]
    assert d.job(arr)["status"] == "PENDING"
    complete(d, prep)
    a = wait_not_pending(d, arr)
    assert a["status"] == "SCHEDULED" and a["array"]["made"] == 0, a
    d.rnx("job", "delete", prep, check=True)
    d.stop()
    d.start()
    a = d.job(arr)
    assert a["status"] == "SCHEDULED" and "CANCELED" not in a["array"]["counts"], a
    done = wait_array(d, arr, timeout=120)
    assert done["array"]["counts"] == {"COMPLETED": 4}, done
    assert len(tasks_of(d, arr)) == 4


def test_queued_job_held_after_its_dependency_held_is_not_decided_again(fresh_daemon):
    """A job whose --after held, waiting for its --schedule time, is held; the job it named is
    deleted; released (across a kill -9 as well) it is SCHEDULED again, not CANCELED, and runs."""
    d = fresh_daemon()
    prep = gated(d)
    wait_running(d, prep)
    later = run(d, f"--after={prep}:ok", "--schedule=1h", "/bin/true")
    again = run(d, f"--after={prep}:ok", "--schedule=1h", "/bin/true")
    assert d.job(later)["status"] == "PENDING"
    complete(d, prep)
    for j in (later, again):
        assert wait_not_pending(d, j)["status"] == "SCHEDULED"
        d.rnx("job", "hold", j, check=True)
    d.rnx("job", "delete", prep, check=True)
    d.rnx("job", "release", later, check=True)
    j = d.job(later)
    assert j["status"] == "SCHEDULED", j
    d.kill9()
    d.start()
    assert d.job(again)["status"] == "HELD"
    d.rnx("job", "release", again, check=True)
    assert d.job(again)["status"] == "SCHEDULED", d.job(again)
    for j in (later, again):
        d.rnx("job", "update", j, "--schedule=now", check=True)
        assert d.wait(j)["status"] == "COMPLETED", d.job(j)


def test_requeued_held_job_survives_deleted_dependency(fresh_daemon):
    """A job that ran after its dependency held is requeued with --hold; the job it named is
    deleted; released, it runs again (not CANCELED)."""
    d = fresh_daemon()
    prep = gated(d)
    wait_running(d, prep)
    x = run(d, f"--after={prep}:ok", "sh", "-c", GATE)
    complete(d, prep)
    wait_running(d, x)
    d.rnx("job", "requeue", "--hold", x, check=True)
    d.wait_status(x, "HELD")
    d.rnx("job", "delete", prep, check=True)
    d.rnx("job", "release", x, check=True)
    j = d.job(x)
    assert j["status"] != "CANCELED", j
    wait_running(d, x)
    release(d, x)
    assert d.wait(x)["status"] == "COMPLETED", d.job(x)


def test_job_held_while_pending(fresh_daemon):
    """A job held while it still waits (PENDING) is decided on release: while its dependency runs,
    it waits again (PENDING), and goes once that completes. One whose dependency completed while
    it was held keeps that (Slurm: a dependency satisfied is gone): the job it named deleted, it
    is released into the queue and runs; one whose dependency was deleted before it ended is
    CANCELED."""
    d = fresh_daemon()
    prep, other = gated(d), gated(d)
    wait_running(d, prep)
    wait_running(d, other)
    x = run(d, f"--after={prep}:ok", "/bin/true")
    y = run(d, f"--after={prep}:ok", "/bin/true")
    z = run(d, f"--after={other}:ok", "/bin/true")
    for j in (x, y, z):
        d.rnx("job", "hold", j, check=True)
    d.rnx("job", "release", x, check=True)
    assert d.job(x)["status"] == "PENDING"
    complete(d, prep)
    assert d.wait(x)["status"] == "COMPLETED"
    assert d.job(y)["status"] == "HELD"
    d.rnx("job", "delete", prep, check=True)
    d.kill9()
    d.start()
    d.rnx("job", "release", y, check=True)
    assert d.wait(y)["status"] == "COMPLETED", d.job(y)
    # z: its dependency stopped, deleted; z was never let go: canceled on release
    d.rnx("job", "stop", other, check=True)
    assert d.wait(other)["status"] == "STOPPED"
    d.rnx("job", "delete", other, check=True)
    d.rnx("job", "release", z, check=True)
    j = d.wait(z)
    assert j["status"] == "CANCELED" and j["end_reason"] == "dependency", j
    assert "it was deleted" in j["error"], j


def test_a_dependency_deleted_after_it_held_cancels_a_job_still_waiting_on_another(fresh_daemon):
    """W after a:ok and b:ok. a completes (W still waits: b has not started), then a is deleted,
    then b starts: W is decided then and canceled (a job it needs is gone), as before
    depend.c still_waits, which skips a waiter whose need on the one that changed (b, started)
    still waits: it also looks whether any of its dependencies was deleted since."""
    d = fresh_daemon(LIMITS)
    a = gated(d, "a")
    wait_running(d, a)
    d.rnx("job", "run", "--hold", "--name=b", "sh", "-c", GATE, check=True)
    b = d.api("GET", "/v1/jobs")[1]["jobs"]
    b = [j["id"] for j in b if j.get("name") == "b"][0]
    w = run(d, f"--after={a}:ok", f"--after={b}:ok", "true")
    assert d.job(w)["status"] == "PENDING"
    complete(d, a)
    time.sleep(0.3)
    assert d.job(w)["status"] == "PENDING", d.job(w)
    d.rnx("job", "delete", a, check=True)
    d.rnx("job", "release", b, check=True)
    wait_running(d, b)
    j = wait_not_pending(d, w)
    assert j["status"] == "CANCELED" and "deleted" in json.dumps(j), j
    release(d, b)
    assert d.wait(b)["status"] == "COMPLETED"
