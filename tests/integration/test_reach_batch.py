"""Batch paths a coverage run of the whole suite found no test reaching (gcov, every module):
refusals of arrays, workflows, uploads and dependencies that a user or an admin can hit with one
request, each checked for its status, the field and the words it names, and that nothing was
created or changed by it (docs/api.md, docs/batch.md, docs/workflows.md).

One daemon for the module: each test makes its own jobs, arrays and workflows, and ends them.
Every probe is a request to the daemon, or a job of `sleep`/`true` run as root or as a uid with
no account (OTHER), which writes nothing outside its /work."""
import json

import pytest

from conftest import api_as, submit_array, tasks_of, wait_array, wait_for
from test_workflows import wait_wf

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


def wf_job(job_name, command="true", *args, requires=(), **fields):
    j = {"name": job_name, "request": {"command": command, "args": list(args), **fields}}
    if requires:
        j["requires"] = [{"job": n, "status": st} for n, st in requires]
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


WF_REFUSED = [
    # (body, field, words in the message)
    ([], "", "a workflow is a JSON object: {name, description, source, yaml, jobs}"),
    ({"jobs": [wf_job("a")]}, "name", "name: a workflow needs a name of 1 to 200 characters"),
    ({"name": "", "jobs": [wf_job("a")]}, "name", "a workflow needs a name of 1 to 200 characters"),
    ({"name": "w", "jobs": ["a"]}, "jobs[0]", "jobs[0]: must be an object"),
    ({"name": "w", "jobs": [{"name": "a b", "request": {"command": "true"}}]}, "jobs[0].name",
     "a job needs a name of letters, digits, '.', '_' and '-' (at most 128)"),
    ({"name": "w", "jobs": [{"name": "a", "request": "true"}]}, "jobs[0].request",
     "jobs[0].request: must be an object: the job's request, as POST /v1/jobs takes"),
    ({"name": "w", "jobs": [wf_job("a", name="b")]}, "jobs[0].request.name",
     "jobs[0].request.name: must be the job's name or absent"),
    ({"name": "w", "jobs": [wf_job("a", singleton=True)]}, "jobs[0].request.singleton",
     "singleton: not accepted in a workflow's job; use requires:"),
    ({"name": "w", "jobs": [wf_job("a")], "volumes": {"name": "v"}}, "volumes",
     "volumes: must be a list of at most"),
    ({"name": "w", "jobs": [wf_job("a")], "volumes": ["v"]}, "volumes[0]",
     "volumes[0]: must be an object {name, size_mb, type}"),
    ({"name": "w", "jobs": [wf_job("a")], "volumes": [{"name": 3, "size_mb": 1}]}, "volumes[0].name",
     "volumes[0].name: must be a string"),
    ({"name": "w", "jobs": [wf_job("a")], "volumes": [{"name": "v", "size_mb": 0}]}, "volumes[0].size_mb",
     "volumes[0].size_mb: must be a whole number from 1 to"),
    ({"name": "w", "jobs": [wf_job("a")], "volumes": [{"name": "v", "size_mb": 1, "color": "red"}]},
     "volumes[0].color", "volumes[0].color: unknown field"),
    ({"name": "w", "jobs": [wf_job("a")], "volumes": [{"name": "a/b", "size_mb": 1}]}, "volumes[0].name",
     "volumes[0].name: must be a volume name (letters, digits, '.', '_', '-')"),
    ({"name": "w", "jobs": [wf_job("a")], "volumes": [{"name": "v", "size_mb": 1}, {"name": "v", "size_mb": 2}]},
     "volumes[1].name", "volumes[1].name: volume 'v' is listed twice"),
    ({"name": "w", "jobs": [wf_job("a")], "volumes": [{"name": "v"}]}, "volumes[0].size_mb",
     "volumes[0].size_mb: a volume to create needs a size in MB"),
    ({"name": "w", "jobs": [wf_job("a")], "volumes": [{"name": "v", "size_mb": 1, "type": "tape"}]},
     "volumes[0].type", "volumes[0].type: 'tape' is not a volume type; use filesystem or memory"),
    ({"name": "w", "jobs": [wf_job("a")], "networks": "n"}, "networks", "networks: must be a list of at most"),
    ({"name": "w", "jobs": [wf_job("a")], "networks": [7]}, "networks[0]",
     "networks[0]: must be an object {name, cidr}"),
    ({"name": "w", "jobs": [wf_job("a")], "networks": [{"name": "n", "cidr": "10.218.10.0/24", "mtu": 9000}]},
     "networks[0].mtu", "networks[0].mtu: unknown field"),
    ({"name": "w", "jobs": [wf_job("a")], "networks": [{"name": "n", "cidr": 24}]}, "networks[0].cidr",
     "networks[0].cidr: must be a string"),
    ({"name": "w", "jobs": [wf_job("a")], "networks": [{"name": "-n", "cidr": "10.218.10.0/24"}]},
     "networks[0].name", "networks[0].name: must be a network name: 1 to"),
    ({"name": "w", "jobs": [wf_job("a")], "networks": [{"name": "bridge", "cidr": "10.218.10.0/24"}]},
     "networks[0].name", "networks[0].name: 'bridge' is joblet's own; a workflow creates networks of other names"),
    ({"name": "w", "jobs": [wf_job("a")], "networks": [{"name": "n", "cidr": "10.218.10.0/24"},
                                                       {"name": "n", "cidr": "10.218.11.0/24"}]},
     "networks[1].name", "networks[1].name: network 'n' is listed twice"),
    ({"name": "w", "jobs": [wf_job("a")], "networks": [{"name": "n"}]}, "networks[0].cidr",
     "networks[0].cidr: a network to create needs its addresses, e.g. 10.218.10.0/24"),
]


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_workflow_that_does_not_read_is_refused_naming_the_field(daemon, dry_run):
    """Each refusal of a workflow's body (its shape, its jobs' names and requests, the volumes and
    networks it would create): 400 naming the field and what it takes, as rnx workflow validate
    (?dry_run=1) says it too; no workflow, job, volume or network is left of any."""
    d = daemon
    wfs, jobs = d.api("GET", "/v1/workflows")[1], d.job_count()
    vols, nets = d.api("GET", "/v1/volumes")[1], d.api("GET", "/v1/networks")[1]
    path = "/v1/workflows?dry_run=1" if dry_run else "/v1/workflows"
    for body, field, words in WF_REFUSED:
        code, e = d.api("POST", path, body)
        assert code == 400, (body, e)
        assert e["error"].get("field", "") == field and words in e["error"]["message"], (body, e)
    assert d.api("GET", "/v1/workflows")[1] == wfs and d.job_count() == jobs
    assert d.api("GET", "/v1/volumes")[1] == vols and d.api("GET", "/v1/networks")[1] == nets


def test_a_workflow_file_over_1_mib_is_refused(daemon):
    """The yaml kept with a workflow is bounded (1 MiB): one byte more is refused naming yaml, by
    the body's bound on a string (api/body.c), which is the workflow's (workflow_json.c's check
    of it is not reached while the two agree); 1 MiB is taken."""
    code, e = daemon.api("POST", "/v1/workflows", {"name": "w", "yaml": "#" * ((1 << 20) + 1),
                                                   "jobs": [wf_job("a")]})
    assert code == 413 and e["error"].get("field") == "yaml", e
    assert "a string of 1048577 bytes; joblet takes strings of at most 1048576 bytes" in e["error"]["message"], e
    assert not [w for w in daemon.api("GET", "/v1/workflows")[1]["workflows"] if w["name"] == "w"]
    code, wf = daemon.api("POST", "/v1/workflows", {"name": "w", "yaml": "#" * (1 << 20), "jobs": [wf_job("a")]})
    assert code == 201, wf
    assert wait_wf(daemon, wf["id"])["state"] == "COMPLETED"


def test_inline_uploads_that_cannot_be_written_create_no_job(daemon):
    """An inline upload whose content is not base64, or a file in a directory not uploaded
    before it: 400 naming uploads and the path; no job, no directory left behind."""
    d = daemon
    jobs, dirs = d.job_count(), d.job_dirs()
    for uploads, words in (
            ([{"path": "f", "type": "file", "content_b64": "%%%not base64%%%"}],
             "uploads: 'f': content_b64 is not valid base64"),
            ([{"path": "d/f", "type": "file", "content_b64": "aGVsbG8="}],
             "uploads: 'd/f': its directory 'd' must be listed before it, as a directory"),
            ([{"path": "f", "type": "file", "content_b64": "aGVsbG8=", "size": 9}],
             "uploads: 'f': size 9 does not match its content_b64 (5 bytes)")):
        for array in (None, "0-1"):
            body = {"command": "true", "uploads": uploads, **({"array": array} if array else {})}
            code, e = d.api("POST", "/v1/jobs", body)
            assert code == 400, (uploads, array, e)
            assert e["error"]["field"] == "uploads" and words in e["error"]["message"], (uploads, e)
    assert d.job_count() == jobs and d.job_dirs() == dirs


def test_devices_all_with_other_gpus_is_refused(daemon):
    code, e = daemon.api("POST", "/v1/jobs", {"command": "true",
                                              "devices": ["nvidia.com/gpu=all", "nvidia.com/gpu=0"]})
    assert code == 400 and e["error"]["field"] == "devices", e
    assert "nvidia.com/gpu=all names every GPU; do not list others with it" in e["error"]["message"], e


def test_an_arrays_update_refused_changes_nothing(daemon):
    """An owner may lower their array's priority, not raise it (403, an admin's); a throttle whose
    %N would make the array's list longer than its 1024 bytes is refused naming array_throttle;
    the array keeps its priority and throttle either way."""
    d = daemon
    # tasks that no step's range writes shorter (gaps that grow: 0,1,3,6,10,...), ~1015 bytes
    ids, k = [], 0
    while len(",".join(map(str, ids + [k * (k + 1) // 2]))) <= 1024 - 3:
        ids.append(k * (k + 1) // 2)
        k += 1
    spec = ",".join(map(str, ids))
    code, a = api_as(d, OTHER, "POST", "/v1/jobs", {"command": "sleep", "args": ["600"], "array": spec + "%1",
                                                    "hold": True})
    assert code == 201, a
    aid = a["id"]
    try:
        code, e = api_as(d, OTHER, "POST", f"/v1/jobs/{aid}/update", {"priority": 5})
        assert code == 403 and "raising an array's priority (its owner may lower it)" in e["error"]["message"], e
        code, e = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": 3999999})
        assert code == 400 and e["error"]["field"] == "array_throttle", e
        assert "the array's list with its %N would be longer than 1024 bytes" in e["error"]["message"], e
        got = d.job(aid)
        assert "priority" not in got["request"] and got["array"]["throttle"] == 1, got
        # what is taken: root raises it, the owner lowers it again, a short throttle
        assert d.api("POST", f"/v1/jobs/{aid}/update", {"priority": 5})[0] == 200
        code, out = api_as(d, OTHER, "POST", f"/v1/jobs/{aid}/update", {"priority": 1, "array_throttle": 7})
        assert code == 200, out
        got = d.job(aid)
        assert got["request"]["priority"] == 1 and got["array"]["throttle"] == 7, got
    finally:
        end_array(d, aid)


def test_the_dependencies_of_an_array_task_or_a_workflow_job_do_not_change(daemon):
    """rnx job update --after of a task of an array, or of a workflow's job: 409 saying whose
    dependencies they are (the array's, the workflow's requires:); the job waits as it did."""
    d = daemon
    aid = submit_array(d, "0-1%1", "sleep", "600")["id"]
    code, wf = wf_post(d, {"name": "wdeps", "jobs": [wf_job("a", "sleep", "600"),
                                                     wf_job("b", requires=[("a", "COMPLETED")])]})
    assert code == 201, wf
    try:
        running_tasks(d, aid, 1)
        # task 1, not made (%1): made by its hold, HELD, a job of its own
        code, out = d.api("POST", f"/v1/jobs/{aid}_1/hold")
        assert code == 200 and out["acted"] == 1, out
        task = d.job(f"{aid}_1")["id"]
        assert d.job(task)["status"] == "HELD"
        other = d.submit("true")
        code, e = d.api("POST", f"/v1/jobs/{task}/update", {"after": [{"job": other}]})
        assert code == 409, e
        assert e["error"]["message"] == (f"job {task} is task 1 of array {aid}: its dependencies are the array's, "
                                         "which held before it was made"), e
        jobs = {j["name"]: j for j in d.api("GET", f"/v1/workflows/{wf['id']}")[1]["jobs"]}
        b = jobs["b"]["job_id"]
        assert d.job(b)["status"] == "PENDING"
        code, e = d.api("POST", f"/v1/jobs/{b}/update", {"after": []})
        assert code == 409 and f"job {b} is a workflow's job: its dependencies are the workflow's (its requires:)" \
            in e["error"]["message"], e
        assert d.job(b)["status"] == "PENDING" and d.job(task)["status"] == "HELD" and not d.job(task)["after"]
    finally:
        d.api("POST", f"/v1/workflows/{wf['id']}/cancel")
        end_array(d, aid)
        wait_wf(d, wf["id"])


def test_an_ended_array_task_or_workflow_job_is_not_requeued(daemon):
    """Slurm's requeue of an ended job is refused for a task of an array (its counts were taken)
    and for a workflow's job (the workflow's state and what it required were): 409 saying so and
    what to do; the job stays as it ended."""
    d = daemon
    aid = submit_array(d, "0", "true")["id"]
    code, wf = wf_post(d, {"name": "wrq", "jobs": [wf_job("a")]})
    assert code == 201, wf
    assert wait_array(d, aid)["array"]["counts"] == {"COMPLETED": 1}
    assert wait_wf(d, wf["id"])["state"] == "COMPLETED"
    task = tasks_of(d, aid)[0]["id"]
    code, e = d.api("POST", f"/v1/jobs/{task}/requeue")
    assert code == 409 and f"job {task} is COMPLETED, task 0 of array {aid[:8]}: the array's counts and state " \
        "were taken" in e["error"]["message"], e
    wj = d.api("GET", f"/v1/workflows/{wf['id']}")[1]["jobs"][0]["job_id"]
    p = d.rnx("job", "requeue", wj)
    assert p.returncode == 1 and f"a job of workflow {wf['id'][:8]}: the workflow's state" in p.stderr, p.stderr
    assert d.job(task)["status"] == "COMPLETED" and d.job(wj)["status"] == "COMPLETED"
    assert d.job(aid)["array"]["counts"] == {"COMPLETED": 1}


def test_tasks_of_an_array_waiting_task_by_task_are_released_only_whole(daemon):
    """B waits for A task by task (--after=A:corr) and is held whole: releasing some of its tasks
    is refused (409, naming the release of the whole array); the whole release is taken."""
    d = daemon
    a = submit_array(d, "0-1", "sleep", "600")["id"]
    b = submit_array(d, "0-1", "true", after=[{"job": a, "state": "corr"}], hold=True)["id"]
    try:
        code, e = d.api("POST", f"/v1/jobs/{b}_[0]/release")
        assert code == 409, e
        assert e["error"]["message"] == (f"array {b}: its tasks wait task by task for their own tasks "
                                         f"(--after=ARRAY:corr): they are released only with the whole array "
                                         f"(rnx job release {b[:8]})"), e
        assert d.job(b)["status"] == "HELD" and tasks_of(d, b) == []
        assert d.api("POST", f"/v1/jobs/{b}/release")[0] == 200
        assert d.job(b)["status"] != "HELD" and tasks_of(d, b) == []   # (its own tasks run)
    finally:
        end_array(d, b)
        end_array(d, a)
