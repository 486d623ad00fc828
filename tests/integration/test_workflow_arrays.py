"""Arrays in workflows against the real daemon (docs/workflows.md "Arrays in a workflow"): a
workflow job with `array:` waits for what it requires before any task is made, the jobs that
require it wait for every task, a failing task fails the workflow naming the array, a failed
requirement cancels the whole array with no task made, workflow cancel stops the tasks that run
and cancels the rest, a kill -9 of joblet mid-array runs each task once; the same through
`rnx workflow run FILE.yaml` and `rnx workflow status`."""
import base64
import os
import re
import subprocess
import time

import pytest

from conftest import BUILD, ROOT, Daemon, api_seconds as ms, need_root, tasks_of, wait_for
from test_dependencies import GATE, release
from test_workflows import job, submit, wf_get



@pytest.fixture(scope="module")
def d():
    need_root()
    dm = Daemon("limits:\n  max_queued_per_user: 60\n").start()
    yield dm
    dm.cleanup()


def entry(wf, name):
    return next(j for j in wf["jobs"] if j["name"] == name)


def wait_wf(d, wid, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        wf = wf_get(d, wid)
        if wf["state"] in ("COMPLETED", "FAILED", "CANCELED") and wf["ended_at"]:
            return wf
        time.sleep(0.05)
    raise AssertionError(f"workflow {wid} did not end: {wf_get(d, wid)}")


def sweep_array(d, wid):
    e = entry(wf_get(d, wid), "sweep")
    assert e["kind"] == "array" and e["job_id"], e
    return e


def test_prep_sweep_report_runs_in_order(d):
    wid = submit(d, "pipeline",
                 job("prep", GATE),
                 job("sweep", "sleep 0.2; echo task $JOBLET_ARRAY_TASK_ID", requires=[("prep", "COMPLETED")],
                     array="0-5%2"),
                 job("report", "true", requires=[("sweep", "COMPLETED")]))["id"]
    # while prep runs (until the test opens its gate), the array waits and no task of it is made
    prep_id = wait_for(lambda: entry(wf_get(d, wid), "prep")["job_id"], "prep to be made", 60)
    d.wait_status(prep_id, "RUNNING")
    e = sweep_array(d, wid)
    assert e["status"] == "PENDING" and e["array"]["made"] == 0, e
    assert e["array"]["wait"] and "workflow" in e["array"]["wait"], e
    release(d, prep_id)
    # no more than two at once (sampled), and the workflow is RUNNING meanwhile
    aid = e["job_id"]
    most = 0
    while True:
        wf = wf_get(d, wid)
        running = [t for t in tasks_of(d, aid) if t["status"] == "RUNNING"]
        most = max(most, len(running))
        if wf["state"] in ("COMPLETED", "FAILED", "CANCELED"):
            break
        if running:
            assert wf["state"] == "RUNNING", wf
        time.sleep(0.05)
    wf = wait_wf(d, wid)
    assert wf["state"] == "COMPLETED", wf
    assert most <= 2
    prep, sweep, report = entry(wf, "prep"), entry(wf, "sweep"), entry(wf, "report")
    assert sweep["status"] == "COMPLETED" and sweep["array"]["counts"] == {"COMPLETED": 6}, sweep
    assert sweep["array"]["ref"].startswith(aid[:8] + "_[0-5%2]"), sweep
    assert sweep["exit_code"] == 0
    tasks = tasks_of(d, aid)
    assert sorted(t["array"]["task"] for t in tasks) == list(range(6))
    for t in tasks:
        assert t["status"] == "COMPLETED", t
        # a task is no workflow job itself
        assert not t.get("workflow_id"), t
        assert ms(t["started_at"]) >= ms(prep["ended_at"]), (t, prep)
        assert ms(report["started_at"]) >= ms(t["ended_at"]), (t, report)
        assert d.output(t["id"]) == f"task {t['array']['task']}\n"
    assert ms(sweep["started_at"]) == min(ms(t["started_at"]) for t in tasks)
    assert ms(sweep["ended_at"]) == max(ms(t["ended_at"]) for t in tasks)
    assert wf["counts"] == {"COMPLETED": 3}, wf


def test_a_failing_task_cancels_what_requires_the_array(d):
    wid = submit(d, "one-fails",
                 job("prep", "true"),
                 job("sweep", "test $JOBLET_ARRAY_TASK_ID != 2 || exit 3", requires=[("prep", "COMPLETED")],
                     array="0-3"),
                 job("report", "true", requires=[("sweep", "COMPLETED")]),
                 job("on-fail", "true", requires=[("sweep", "FAILED")]))["id"]
    wf = wait_wf(d, wid)
    assert wf["state"] == "COMPLETED", wf  # on-fail handled the array's failure
    sweep, report = entry(wf, "sweep"), entry(wf, "report")
    assert sweep["status"] == "FAILED" and sweep["array"]["counts"] == {"COMPLETED": 3, "FAILED": 1}, sweep
    assert sweep["exit_code"] == 3
    assert report["status"] == "CANCELED" and report["end_reason"] == "dependency", report
    assert "needed 'sweep' to end COMPLETED; it ended FAILED" in report["error"], report
    assert entry(wf, "on-fail")["status"] == "COMPLETED"
    # without a job handling it, the workflow FAILED, naming the array
    wid = submit(d, "one-fails-unhandled",
                 job("sweep", "test $JOBLET_ARRAY_TASK_ID != 1 || exit 3", array="0-2"),
                 job("report", "true", requires=[("sweep", "COMPLETED")]))["id"]
    wf = wait_wf(d, wid)
    assert wf["state"] == "FAILED", wf
    assert wf["reason"].startswith("job 'sweep' ended FAILED (array ") and "1 FAILED" in wf["reason"], wf
    assert entry(wf, "report")["status"] == "CANCELED"


def test_prep_failing_cancels_the_whole_array_with_no_task_made(d):
    wid = submit(d, "prep-fails",
                 job("prep", "exit 1"),
                 job("sweep", "true", requires=[("prep", "COMPLETED")], array="0-49%5"),
                 job("report", "true", requires=[("sweep", "COMPLETED")]))["id"]
    wf = wait_wf(d, wid)
    assert wf["state"] == "FAILED" and "job 'prep' ended FAILED" in wf["reason"], wf
    sweep = entry(wf, "sweep")
    assert sweep["status"] == "CANCELED" and sweep["end_reason"] == "dependency", sweep
    assert "needed 'prep' to end COMPLETED; it ended FAILED" in sweep["error"], sweep
    assert sweep["array"]["made"] == 0 and sweep["array"]["counts"] == {"CANCELED": 50}, sweep
    assert not tasks_of(d, sweep["job_id"])
    assert entry(wf, "report")["status"] == "CANCELED"
    # the array's own status says the same
    code, a = d.api("GET", f"/v1/jobs/{sweep['job_id']}")
    assert code == 200 and a["status"] == "CANCELED" and a["array"]["made"] == 0, a
    assert a["workflow"] == {"id": wid, "name": "prep-fails", "job": "sweep"}, a


def test_workflow_cancel_stops_running_tasks_and_cancels_the_rest(d):
    wid = submit(d, "to-cancel",
                 job("sweep", "sleep 60", array="0-9%2"),
                 job("report", "true", requires=[("sweep", "COMPLETED")]))["id"]
    aid = sweep_array(d, wid)["job_id"]
    wait_for(lambda: len([t for t in tasks_of(d, aid) if t["status"] == "RUNNING"]) == 2)
    assert wf_get(d, wid)["state"] == "RUNNING"
    code, r = d.api("POST", f"/v1/workflows/{wid}/cancel")
    assert code in (200, 202), r
    wf = wait_wf(d, wid, timeout=60)
    assert wf["state"] == "CANCELED", wf
    sweep = entry(wf, "sweep")
    assert sweep["array"]["made"] == 2, sweep
    tasks = tasks_of(d, aid)
    assert len(tasks) == 2 and all(t["status"] in ("STOPPED", "CANCELED") for t in tasks), tasks
    assert sweep["array"]["counts"].get("CANCELED", 0) >= 8, sweep
    assert entry(wf, "report")["status"] == "CANCELED"
    # nothing more is made afterwards
    time.sleep(0.5)
    assert len(tasks_of(d, aid)) == 2


def test_limits_count_the_arrays_tasks(d):
    # max_queued_per_user 60: 100 tasks are refused, in a dry run too, and nothing is created
    before = len(d.api("GET", "/v1/workflows")[1]["workflows"])
    body = {"name": "too-big", "jobs": [job("sweep", "true", array="0-99")]}
    for path in ("/v1/workflows?dry_run=1", "/v1/workflows"):
        code, e = d.api("POST", path, body)
        assert code == 429 and "max_queued_per_user is 60" in e["error"]["message"], e
    assert len(d.api("GET", "/v1/workflows")[1]["workflows"]) == before
    # a bad task list names the field
    code, e = d.api("POST", "/v1/workflows", {"name": "bad", "jobs": [job("sweep", "true", array="5-2")]})
    assert code == 400 and e["error"]["field"] == "jobs[0].request.array", e


def test_uploads_of_an_array_job_are_every_tasks_work(d):
    data = base64.b64encode(b"shared input\n").decode()
    wid = submit(d, "uploads",
                 job("sweep", "cat /work/in.txt; echo $JOBLET_ARRAY_TASK_ID > /work/mine", array="1-3",
                     uploads=[{"path": "in.txt", "content_b64": data}]))["id"]
    wf = wait_wf(d, wid)
    assert wf["state"] == "COMPLETED", wf
    for t in tasks_of(d, entry(wf, "sweep")["job_id"]):
        assert d.output(t["id"]) == "shared input\n"


def rnx(d, *args, cwd=None):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    p = subprocess.run([os.path.join(BUILD, "rnx"), *args], capture_output=True, text=True, timeout=120, env=env,
                       cwd=cwd or ROOT)
    for mark in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        assert mark not in p.stderr, p.stderr
    return p


YAML = """name: yaml-sweep
jobs:
  prep:
    command: 'true'
  sweep:
    command: sh
    args: [-c, 'echo $JOBLET_ARRAY_TASK_ID; cat /work/in.txt']
    uploads: [in.txt]
    array: 0-5%2
    requires:
      - prep: COMPLETED
  report:
    command: 'true'
    requires:
      - sweep: COMPLETED
"""


def test_rnx_workflow_run_and_status_of_an_array(d, tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text(YAML)
    (tmp_path / "in.txt").write_text("streamed input\n")
    p = rnx(d, "workflow", "validate", str(path))
    assert p.returncode == 0, p.stdout + p.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(YAML.replace("0-5%2", "0-5%x"))
    p = rnx(d, "workflow", "validate", str(bad))
    assert p.returncode != 0 and "array" in p.stderr and ":9:" in p.stderr, p.stderr
    p = rnx(d, "workflow", "run", str(path))
    assert p.returncode == 0, p.stderr
    wid = p.stdout.strip()
    wf = wait_wf(d, wid)
    assert wf["state"] == "COMPLETED", wf
    sweep = entry(wf, "sweep")
    assert sweep["array"]["counts"] == {"COMPLETED": 6}
    # the uploads, streamed by rnx, are every task's /work
    for t in tasks_of(d, sweep["job_id"]):
        assert d.output(t["id"]) == f"{t['array']['task']}\nstreamed input\n", t
    p = rnx(d, "workflow", "status", wid)
    assert p.returncode == 0, p.stderr
    line = next(l for l in p.stdout.splitlines() if l.lstrip().startswith("sweep"))
    assert re.search(r"COMPLETED .*array %s_\[0-5%%2\] \(6 COMPLETED\)" % sweep["job_id"][:8], line), p.stdout


def test_kill9_mid_array_runs_each_task_once(fresh_daemon):
    dm = fresh_daemon()
    wid = submit(dm, "kill9",
                 job("prep", "sleep 1"),
                 job("sweep", "sleep 1; echo $JOBLET_ARRAY_TASK_ID", requires=[("prep", "COMPLETED")],
                     array="0-5%2"),
                 job("report", "true", requires=[("sweep", "COMPLETED")]))["id"]
    # killed while prep runs: the array, no task made, waits again after the restart
    wait_for(lambda: entry(wf_get(dm, wid), "prep")["status"] == "RUNNING")
    dm.kill9()
    dm.start()
    e = sweep_array(dm, wid)
    assert e["array"]["made"] == 0 or entry(wf_get(dm, wid), "prep")["status"] == "COMPLETED", e
    aid = wait_for(lambda: (lambda e: e["job_id"] if e["array"]["made"] else None)(sweep_array(dm, wid)))
    wait_for(lambda: any(t["status"] == "RUNNING" for t in tasks_of(dm, aid)))
    dm.kill9()
    time.sleep(0.5)
    dm.start()
    # once more, in the middle
    wait_for(lambda: sweep_array(dm, wid)["array"]["made"] >= 4, timeout=120)
    dm.kill9()
    dm.start()
    wf = wait_wf(dm, wid, timeout=180)
    assert wf["state"] == "COMPLETED", wf
    tasks = tasks_of(dm, aid)
    assert sorted(t["array"]["task"] for t in tasks) == list(range(6)), tasks
    prep = entry(wf, "prep")
    assert prep["status"] == "COMPLETED" and all(ms(t["started_at"]) >= ms(prep["ended_at"]) for t in tasks)
    for t in tasks:
        assert t["status"] == "COMPLETED" and dm.output(t["id"]) == f"{t['array']['task']}\n", t
    assert ms(entry(wf, "report")["started_at"]) >= max(ms(t["ended_at"]) for t in tasks)
    # and a restart of a workflow that ended keeps it so, its array linked
    dm.kill9()
    dm.start()
    wf = wf_get(dm, wid)
    assert wf["state"] == "COMPLETED" and entry(wf, "sweep")["array"]["counts"] == {"COMPLETED": 6}, wf


def test_an_ended_arrays_counts_follow_its_task_jobs_deleted(d):
    """An ended array's counts are kept for the workflow's step (not counted again at every change
    of another of its jobs), and a task job deleted since still counts as it ended (the array's
    record stays whole, docs/batch.md): the workflow that ends later names the array's tasks as
    they ended (the daemon, at log level debug, checks what was kept against a count at every
    use)."""
    from test_dependencies import release
    wid = submit(d, "kept-counts",
                 job("sweep", "test $JOBLET_ARRAY_TASK_ID != 1 || exit 3", array="0-2"),
                 job("gate"))["id"]
    sweep = wait_for(lambda: (lambda e: e if e["status"] == "FAILED" else None)(sweep_array(d, wid)))
    assert sweep["array"]["counts"] == {"COMPLETED": 2, "FAILED": 1}, sweep
    gate = entry(wf_get(d, wid), "gate")["job_id"]
    d.wait_status(gate, "RUNNING")
    assert wf_get(d, wid)["state"] == "RUNNING"
    done = sorted((t for t in tasks_of(d, sweep["job_id"]) if t["status"] == "COMPLETED"),
                  key=lambda t: t["array"]["task"])
    assert len(done) == 2
    assert d.api("DELETE", f"/v1/jobs/{done[0]['id']}")[0] == 200
    release(d, gate)
    wf = wait_wf(d, wid)
    assert wf["state"] == "FAILED", wf
    assert "2 COMPLETED, 1 FAILED" in wf["reason"], wf
    assert "differ from a count" not in d.log()
