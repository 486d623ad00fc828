"""A job array held while it waits for its dependencies (docs/batch.md, "Holding, updating,
suspending and requeueing jobs"): HELD, as a job held while PENDING is, in its status, its tasks'
counts and the hold's answer; and, as a held job, not canceled by a dependency that can never hold
until it is released (then decided at once); one whose dependencies held while held stays held."""
from conftest import wait_for


def test_a_pending_array_held_is_held_and_decided_only_once_released(fresh_daemon):
    d = fresh_daemon()
    dep = d.submit("sleep", "2")
    code, a = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-3",
                                         "after": [{"job": dep, "state": "notok"}]})
    assert code == 201, a
    aid = a["id"]
    assert d.job(aid)["status"] == "PENDING"
    p = d.rnx("job", "hold", aid, check=True)
    assert "(4 HELD)" in p.stdout, p.stdout
    held = d.job(aid)
    assert held["status"] == "HELD" and held["array"]["counts"] == {"HELD": 4}, held
    assert held["array"]["wait"] == "held", held
    assert d.api("GET", f"/v1/jobs/{aid}_2")[1]["status"] == "HELD"
    # its dependency can never hold now: held, it waits for its release (a job held so does)
    d.wait(dep)
    p = d.rnx("job", "wait", "--timeout=2s", aid)
    assert p.returncode == 124, (p.stdout, p.stderr)
    assert d.job(aid)["status"] == "HELD", d.job(aid)
    p = d.rnx("job", "release", aid, check=True)
    assert "(4 CANCELED)" in p.stdout, p.stdout
    ended = d.job(aid)
    assert ended["status"] == "CANCELED" and ended["array"]["made"] == 0, ended
    # ended, though no task of it was made: it has an end time (sacct's End of a job canceled
    # while pending), kept over a restart
    assert ended["ended_at"] and ended["ended_at"] >= ended["created_at"], ended
    d.kill9()
    d.start()
    assert d.job(aid)["ended_at"] == ended["ended_at"]
    assert "needed job" in ended["array"]["wait"] and "it ended COMPLETED" in ended["array"]["wait"], ended
    p = d.rnx("job", "wait", "--timeout=10s", aid)
    assert p.returncode == 1 and "CANCELED" in p.stdout, (p.stdout, p.stderr)


def test_a_held_array_whose_dependencies_held_stays_held_then_runs(fresh_daemon):
    d = fresh_daemon()
    dep = d.submit("true")
    code, a = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-1", "hold": True,
                                         "after": [{"job": dep, "state": "ok"}]})
    assert code == 201, a
    aid = a["id"]
    d.wait(dep)
    wait_for(lambda: d.job(aid)["array"]["wait"] == "held", "the array held, its dependencies met")
    assert d.job(aid)["status"] == "HELD" and d.job(aid)["array"]["made"] == 0
    d.rnx("job", "release", aid, check=True)
    wait_for(lambda: d.job(aid)["status"] == "COMPLETED", "the array's tasks completed")


def test_an_array_whose_tasks_are_canceled_before_any_was_made_has_an_end(fresh_daemon):
    d = fresh_daemon()
    for how in ("whole", "by ids"):
        code, a = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-3", "hold": True})
        assert code == 201, a
        aid = a["id"]
        target = aid if how == "whole" else f"{aid}_[0-3]"
        d.rnx("job", "cancel", target, check=True)
        j = d.job(aid)
        assert j["status"] == "CANCELED" and j["array"]["made"] == 0, (how, j)
        assert j["ended_at"] and j["started_at"] is None, (how, j)
