"""Workflows against the real daemon, through the API: the seed's ML pipeline on the 4-GPU
fixture stage by stage, DAG parallelism, failure propagation, cancel, and kill -9 in the middle.
(The YAML front end, rnx workflow, is tested in test_workflow_cli.py.)"""
import os
import time

from conftest import ROOT

FIX = os.path.join(ROOT, "tests", "fixtures")
# A job that runs until the test drops a file in its /work: the test decides when each ends.
GATE = "while [ ! -e /work/go ]; do sleep 0.02; done; test ! -e /work/fail"


def sim(fresh_daemon, name="a100-pcie-4"):
    return fresh_daemon(f"gpu:\n  fixture: {FIX}/{name}/machine.json\n  scrub: 0\n")


def job(name, cmd=GATE, requires=(), **fields):
    d = {"name": name, "request": {"command": "sh", "args": ["-c", cmd], **fields}}
    if requires:
        d["requires"] = [{"job": k, "status": v} for k, v in requires]
    return d


def submit(d, name, *jobs, status=201):
    code, wf = d.api("POST", "/v1/workflows", {"name": name, "jobs": list(jobs)})
    assert code == status, wf
    return wf


def wf_get(d, wid):
    code, wf = d.api("GET", f"/v1/workflows/{wid}")
    assert code == 200, wf
    return wf


def states(d, wid):
    return {j["name"]: j["status"] for j in wf_get(d, wid)["jobs"]}


def by_name(d, wid, name):
    return next(j for j in wf_get(d, wid)["jobs"] if j["name"] == name)


def release(d, wid, name, fail=False):
    j = by_name(d, wid, name)
    work = d.work(j["job_id"])
    if fail:
        open(os.path.join(work, "fail"), "w").close()
    open(os.path.join(work, "go"), "w").close()
    return j["job_id"]


def wait_states(d, wid, want, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        s = states(d, wid)
        if all(s[k] == v for k, v in want.items()):
            return s
        time.sleep(0.02)
    raise AssertionError(f"workflow {wid}: wanted {want}, have {states(d, wid)}")


def wait_wf(d, wid, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        wf = wf_get(d, wid)
        if wf["state"] in ("COMPLETED", "FAILED", "CANCELED") and wf["ended_at"]:
            return wf
        time.sleep(0.02)
    raise AssertionError(f"workflow {wid} did not end: {wf_get(d, wid)}")


def test_seed_pipeline_stage_by_stage_on_four_gpus(fresh_daemon):
    d = sim(fresh_daemon)
    wf = submit(d, "ml-training-pipeline",
                job("data-preprocessing", max_memory_mb=4096, max_cpu=200),
                job("model-training", requires=[("data-preprocessing", "COMPLETED")], max_memory_mb=16384,
                    max_cpu=200, gpu_count=2, gpu_memory_mb=8192),
                job("model-evaluation", requires=[("model-training", "COMPLETED")], max_memory_mb=8192,
                    gpu_count=1, gpu_memory_mb=4096))
    wid = wf["id"]
    assert wf["state"] in ("PENDING", "RUNNING")
    wait_states(d, wid, {"data-preprocessing": "RUNNING", "model-training": "PENDING", "model-evaluation": "PENDING"})
    assert wf_get(d, wid)["state"] == "RUNNING"
    assert by_name(d, wid, "data-preprocessing")["gpus"] == []
    # a PENDING job is an ordinary job, waiting for its dependencies, holding nothing
    t = d.job(by_name(d, wid, "model-training")["job_id"])
    assert t["status"] == "PENDING" and t["gpus"] == [] and t["workflow"] == {
        "id": wid, "name": "ml-training-pipeline", "job": "model-training"}
    release(d, wid, "data-preprocessing")
    wait_states(d, wid, {"data-preprocessing": "COMPLETED", "model-training": "RUNNING"})
    assert len(by_name(d, wid, "model-training")["gpus"]) == 2
    assert states(d, wid)["model-evaluation"] == "PENDING"
    release(d, wid, "model-training")
    wait_states(d, wid, {"model-training": "COMPLETED", "model-evaluation": "RUNNING"})
    assert len(by_name(d, wid, "model-evaluation")["gpus"]) == 1
    assert d.job(by_name(d, wid, "model-training")["job_id"])["gpus"] != []  # its grant stays in its history
    release(d, wid, "model-evaluation")
    done = wait_wf(d, wid)
    assert done["state"] == "COMPLETED" and done["reason"] is None
    assert all(j["status"] == "COMPLETED" and j["exit_code"] == 0 for j in done["jobs"])
    # the GPUs are all free again
    gpus = d.api("GET", "/v1/gpus")[1]["gpus"]
    assert all(g["state"] == "available" for g in gpus)


def test_diamond_and_fan_out_fan_in_run_with_maximal_parallelism(fresh_daemon):
    d = sim(fresh_daemon)
    wf = submit(d, "diamond", job("a"), job("b", requires=[("a", "COMPLETED")]),
                job("c", requires=[("a", "COMPLETED")]), job("d", requires=[("b", "COMPLETED"), ("c", "COMPLETED")]))
    wid = wf["id"]
    wait_states(d, wid, {"a": "RUNNING", "b": "PENDING", "c": "PENDING", "d": "PENDING"})
    release(d, wid, "a")
    wait_states(d, wid, {"b": "RUNNING", "c": "RUNNING", "d": "PENDING"})  # both at once
    release(d, wid, "b")
    wait_states(d, wid, {"b": "COMPLETED"})
    time.sleep(0.2)
    assert states(d, wid)["d"] == "PENDING"  # all of its conditions, not one
    release(d, wid, "c")
    wait_states(d, wid, {"d": "RUNNING"})
    release(d, wid, "d")
    assert wait_wf(d, wid)["state"] == "COMPLETED"

    fan = [job("src")] + [job(f"w{i}", requires=[("src", "COMPLETED")], gpu_count=1) for i in range(4)] + \
          [job("sink", requires=[(f"w{i}", "COMPLETED") for i in range(4)])]
    wf = submit(d, "fan", *fan)
    wid = wf["id"]
    wait_states(d, wid, {"src": "RUNNING"})
    release(d, wid, "src")
    wait_states(d, wid, {f"w{i}": "RUNNING" for i in range(4)})  # four GPU jobs on four GPUs at once
    assert sorted(g for i in range(4) for g in by_name(d, wid, f"w{i}")["gpus"]) == [0, 1, 2, 3]
    for i in range(4):
        release(d, wid, f"w{i}")
    wait_states(d, wid, {"sink": "RUNNING"})
    release(d, wid, "sink")
    assert wait_wf(d, wid)["state"] == "COMPLETED"


def test_failure_cancels_exactly_what_can_no_longer_run(fresh_daemon):
    d = sim(fresh_daemon)
    wf = submit(d, "failing", job("a"), job("b", requires=[("a", "COMPLETED")]),
                job("c", requires=[("b", "COMPLETED")]),          # can no longer hold
                job("e", requires=[("c", "COMPLETED")]),          # nor this, one further
                job("on-b-failed", "echo cleaning up", requires=[("b", "FAILED")]),  # runs
                job("f"))                                         # unrelated: runs
    wid = wf["id"]
    wait_states(d, wid, {"a": "RUNNING", "f": "RUNNING"})
    release(d, wid, "a")
    wait_states(d, wid, {"b": "RUNNING"})
    release(d, wid, "b", fail=True)
    s = wait_states(d, wid, {"b": "FAILED", "c": "CANCELED", "e": "CANCELED", "on-b-failed": "COMPLETED"})
    assert s["f"] == "RUNNING"
    c = by_name(d, wid, "c")
    assert c["end_reason"] == "dependency" and c["error"] == "needed 'b' to end COMPLETED; it ended FAILED"
    assert by_name(d, wid, "e")["error"] == "needed 'c' to end COMPLETED; it ended CANCELED"
    assert d.output(by_name(d, wid, "on-b-failed")["job_id"]) == "cleaning up\n"
    assert wf_get(d, wid)["state"] == "RUNNING"
    release(d, wid, "f")
    done = wait_wf(d, wid)
    # b's failure was expected by on-b-failed: the workflow handled it
    assert done["state"] == "COMPLETED", done

    # without a handler the same failure fails the workflow, and says which job
    wf = submit(d, "unhandled", job("x", "exit 4"), job("y", "true", requires=[("x", "COMPLETED")]))
    done = wait_wf(d, wf["id"])
    assert done["state"] == "FAILED" and done["reason"] == "job 'x' ended FAILED (exit, exit code 4)"
    assert [j["status"] for j in done["jobs"]] == ["FAILED", "CANCELED"]


def test_cancel_a_workflow(fresh_daemon):
    d = sim(fresh_daemon)
    wf = submit(d, "to-cancel", job("a"), job("b", requires=[("a", "COMPLETED")]), job("c"))
    wid = wf["id"]
    wait_states(d, wid, {"a": "RUNNING", "c": "RUNNING"})
    code, w = d.api("POST", f"/v1/workflows/{wid[:8]}/cancel")
    assert code == 200 and w["state"] == "CANCELED" and w["canceled_by"] == 0
    done = wait_wf(d, wid)
    assert done["state"] == "CANCELED"
    s = {j["name"]: (j["status"], j["end_reason"]) for j in done["jobs"]}
    assert s == {"a": ("STOPPED", "stopped"), "b": ("CANCELED", "canceled"), "c": ("STOPPED", "stopped")}
    code, w = d.api("POST", f"/v1/workflows/{wid}/cancel")
    assert code == 409


def test_invalid_workflows_create_nothing(fresh_daemon):
    d = sim(fresh_daemon)
    cases = [
        ({"name": "x", "jobs": []}, "jobs", "jobs: a workflow needs a list of 1 to 10000 jobs"),
        ({"name": "x", "jobs": [job("a"), job("a")]}, "jobs[1].name", "two jobs are named 'a'"),
        ({"name": "x", "jobs": [job("a", requires=[("zz", "COMPLETED")])]}, "jobs[0].requires[0]",
         "no job 'zz' in this workflow"),
        ({"name": "x", "jobs": [job("a", requires=[("a", "COMPLETED")])]}, "jobs[0].requires[0]",
         "a job cannot wait for itself"),
        ({"name": "x", "jobs": [job("a", requires=[("c", "COMPLETED")]), job("b", requires=[("a", "COMPLETED")]),
                                job("c", requires=[("b", "COMPLETED")])]}, "jobs[1].requires",
         "dependency cycle: a -> c -> b -> a"),
        ({"name": "x", "jobs": [job("a"), job("b", requires=[("a", "RUNNING")])]}, "jobs[1].requires[0]",
         "'RUNNING' is not a state a job ends in"),
        ({"name": "x", "jobs": [job("a"), job("b", gpu_count=5)]}, "jobs[1].request.gpu_count",
         "job 'b': gpu_count: asks for 5 GPUs; this machine has 4 usable GPUs"),
        ({"name": "x", "jobs": [job("a", max_memory_mb="lots")]}, "jobs[0].request.max_memory_mb", "max_memory_mb"),
        ({"name": "x", "jobs": [job("a", runtime="python-3.11-ml")]}, "jobs[0].request.runtime",
         "job 'a': runtime: no runtime 'python-3.11-ml' on this machine"),
        ({"name": "x", "jobs": [job("a", volumes=["data"])]}, "jobs[0].request.volumes",
         "job 'a': volumes: no volume 'data'"),
        ({"name": "x", "jobs": [{**job("a"), "runtime": "python-3.11-ml"}]}, "jobs[0].runtime", "unknown field"),
        ({"name": "x", "jobs": [job("a")], "color": "red"}, "color", "color: unknown field"),
        ({"name": "x", "jobs": [{**job("a"), "retries": 3}]}, "jobs[0].retries", "unknown field"),
    ]
    for body, field, msg in cases:
        code, err = d.api("POST", "/v1/workflows", body)
        assert code == 400, (body, err)
        assert err["error"]["field"] == field and msg in err["error"]["message"], (body, err)
    assert d.job_count() == 0 and d.job_dirs() == []
    assert d.api("GET", "/v1/workflows")[1] == {"workflows": []}


def test_kill9_in_the_middle_of_a_ten_job_workflow(fresh_daemon):
    d = sim(fresh_daemon)
    # a chain of five, then a fan of four into a sink: ten jobs, two GPU ones
    jobs = [job("j0")] + [job(f"j{i}", requires=[(f"j{i - 1}", "COMPLETED")]) for i in range(1, 5)]
    jobs += [job(f"f{i}", requires=[("j4", "COMPLETED")], gpu_count=1 if i < 2 else 0) for i in range(4)]
    jobs += [job("sink", "exit 0", requires=[(f"f{i}", "COMPLETED") for i in range(4)])]
    wid = submit(d, "ten", *jobs)["id"]
    for i in range(3):
        wait_states(d, wid, {f"j{i}": "RUNNING"})
        release(d, wid, f"j{i}")
    wait_states(d, wid, {"j3": "RUNNING"})
    j3 = by_name(d, wid, "j3")["job_id"]
    d.kill9()
    # while the daemon is down, j3 ends: its shim records it, and the restarted daemon decides j4
    open(os.path.join(d.work(j3), "go"), "w").close()
    time.sleep(0.3)
    d.start()
    for name in ["j4"]:
        wait_states(d, wid, {name: "RUNNING"})
        release(d, wid, name)
    wait_states(d, wid, {f"f{i}": "RUNNING" for i in range(4)})
    d.kill9()
    d.start()
    for i in range(4):
        release(d, wid, f"f{i}")
    done = wait_wf(d, wid)
    assert done["state"] == "COMPLETED", done
    assert all(j["status"] == "COMPLETED" for j in done["jobs"])
    assert len(done["jobs"]) == 10
