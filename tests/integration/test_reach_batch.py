"""Batch paths a coverage run of the whole suite found no test reaching (gcov, every module):
refusals of arrays, workflows, uploads and dependencies that a user or an admin can hit with one
request, each checked for its status, the field and the words it names, and that nothing was
created or changed by it (docs/api.md, docs/batch.md, docs/workflows.md).

One daemon for the module: each test makes its own jobs, arrays and workflows, and ends them.
Every probe is a request to the daemon, or a job of `sleep`/`true` run as root or as a uid with
no account (OTHER), which writes nothing outside its /work."""
import json

import pytest

from conftest import TERMINAL, api_as, submit_array, tasks_of, wait_array, wait_for

OTHER = 4377  # a user who is not root (no account needed: joblet reads the peer's uid)


def end_array(d, aid):
    d.api("POST", f"/v1/jobs/{aid}/cancel")
    d.api("POST", f"/v1/jobs/{aid}/kill")
    wait_array(d, aid, timeout=60)


def running_tasks(d, aid, n):
    wait_for(lambda: sum(t["status"] == "RUNNING" for t in tasks_of(d, aid)) == n, f"{n} tasks of {aid} running")
    return {t["array"]["task"]: t["id"] for t in tasks_of(d, aid)}


def wf_post(d, body):
    return d.api("POST", "/v1/workflows", body)


def wf_job(name, command="true", *args, requires=(), **fields):
    j = {"name": name, "request": {"command": command, "args": list(args), **fields}}
    if requires:
        j["requires"] = [{"job": n, "state": s} for n, s in requires]
    return j


def test_an_action_no_job_takes_is_not_found_on_an_array_either(daemon):
    """POST ARRAY/bogus was answered 400 "name one task, e.g. X_0, for POST bogus", and the task
    named so was then answered 404 "no route": an action no job takes is a 404 for an array and
    tasks of it too, as for a job. Those a task does take (logs, metrics) say to name one task."""
    d = daemon
    aid = submit_array(d, "0-2", "sleep", "600")["id"]
    try:
        ids = running_tasks(d, aid, 3)
        code, e = d.api("POST", f"/v1/jobs/{ids[0]}/bogus")
        assert code == 404 and e["error"]["message"].startswith("no route POST"), e
        for method, action in (("POST", "bogus"), ("GET", "events"), ("POST", "logs"), ("PUT", "")):
            for ref in (aid, f"{aid}_[0-1]", f"{aid[:8]}_[1,2]"):
                code, e = d.api(method, f"/v1/jobs/{ref}/{action}")
                assert code == 404, (method, action, ref, e)
                msg = e["error"]["message"]
                assert msg.startswith(f"no route {method} /v1/jobs/{aid}") and msg.endswith(
                    f"/{action}: neither an array nor a job takes it; see docs/api.md"), msg
                assert "name one task" not in msg and "one task at a time" not in msg, msg
        # what a task has: name one (and the one named has it)
        code, e = d.api("GET", f"/v1/jobs/{aid}/logs")
        assert code == 400 and f"which has no output (rnx job log) of its own: name one task, e.g. {aid[:8]}_0" \
            in e["error"]["message"], e
        code, e = d.api("GET", f"/v1/jobs/{aid}_[0-1]/metrics")
        assert code == 400 and "each task has its own usage (rnx job metrics): name one" in e["error"]["message"], e
        assert d.api("GET", f"/v1/jobs/{aid}_1/metrics")[0] == 200
        assert all(t["status"] == "RUNNING" for t in tasks_of(d, aid))
    finally:
        end_array(d, aid)


def test_an_array_with_tasks_not_ended_is_not_deleted(daemon):
    """DELETE of an array whose tasks run: 409 naming the cancel to run first; the array and its
    running tasks are left as they were; once it ended, the delete takes it whole."""
    d = daemon
    aid = submit_array(d, "0-3%2", "sleep", "600")["id"]
    ids = running_tasks(d, aid, 2)
    code, e = d.api("DELETE", f"/v1/jobs/{aid}")
    assert code == 409, e
    assert e["error"]["message"] == (f"array {aid} has tasks not ended; stop or cancel it before deleting it "
                                     f"(rnx job cancel {aid[:8]})"), e
    p = d.rnx("job", "delete", aid)
    assert p.returncode == 1 and "has tasks not ended" in p.stderr, p.stderr
    assert {t["id"]: t["status"] for t in tasks_of(d, aid)} == {i: "RUNNING" for i in ids.values()}
    assert sum(d.job(aid)["array"]["counts"].values()) == 4
    end_array(d, aid)
    code, out = d.api("DELETE", f"/v1/jobs/{aid}")
    assert code == 200 and out == {"deleted": aid, "tasks": 2, "more": False}, out
    assert d.api("GET", f"/v1/jobs/{aid}")[0] == 404
    assert all(d.api("GET", f"/v1/jobs/{i}")[0] == 404 for i in ids.values())
