"""Review (crash consistency, third round: deletes spread over several requests, big commits,
array control; "lose nothing when something fails"). The daemon is killed with SIGKILL at
chosen moments and what the next start finds is looked at.

1. The orphan sweep at start (core/orphans.c) took every entry of <state>/jobs and of the /work
   filesystems named by an ID that no job has for a leftover of a killed joblet, and removed it.
   An array with uploads keeps its files in <state>/jobs/<array id> (and its /work copy), which
   its tasks' shims copy into their /work as they start: any restart of joblet (a SIGKILL, a
   plain stop too) removed them, and every task that had not started yet failed. The sweep
   knows the arrays' IDs now.
2. rnx job update --max-runtime of a running job tells its shim the new limit (job_launch_runtime:
   a file in its directory, then SIGUSR2) before the turn's commit. A joblet killed in between
   left a shim holding a limit that no row has; the start told the shim the row's limit again
   only when the row had one (job_ctl_resume_all), so a job whose row has none was killed at a
   limit never committed nor answered. The start tells every running job's shim its row's limit,
   none included."""
import base64
import os
import signal
import time

from conftest import tasks_of, wait_array
from test_restart import alive, shim_pid


def test_an_arrays_uploads_outlive_a_restart_of_joblet(fresh_daemon):
    d = fresh_daemon()
    data = base64.b64encode(b"shared input\n").decode()
    code, a = d.api("POST", "/v1/jobs", {"command": "sh", "args": ["-c", "cat /work/in.txt && sleep 1"],
                                         "array": "0-3%1", "uploads": [{"path": "in.txt", "content_b64": data}]})
    assert code == 201, a
    aid = a["id"]
    assert os.path.isdir(os.path.join(d.state, "jobs", aid)), d.job_dirs()
    d.kill9()
    d.start()
    assert os.path.isdir(os.path.join(d.state, "jobs", aid)), \
        f"the array's uploads were swept at start as a killed joblet's leftover:\n{d.log()[-2000:]}"
    wait_array(d, aid, 120)
    tasks = sorted(tasks_of(d, aid), key=lambda t: t["array"]["task"])
    assert [t["array"]["task"] for t in tasks] == [0, 1, 2, 3]
    for t in tasks:
        assert t["status"] == "COMPLETED" and d.output(t["id"]) == "shared input\n", \
            (t, d.output(t["id"]), d.output(t["id"], "stderr"))
    # deleted, its files go with it (and what a killed delete left is swept at the next start)
    code, body = d.api("DELETE", f"/v1/jobs/{aid}")
    assert code == 200 and not body["more"], body
    assert not os.path.exists(os.path.join(d.state, "jobs", aid))


def test_a_run_time_limit_told_to_the_shim_but_never_committed_is_taken_back_at_start(fresh_daemon):
    d = fresh_daemon()
    jid = d.submit("sleep", "600")
    d.wait_status(jid, "RUNNING")
    shim = shim_pid(d, jid)
    t0 = time.time()
    d.kill9()
    # what job_ctl_update had done when joblet was killed before its commit: the shim told a
    # limit of 20 s (the file joblet writes, then SIGUSR2: a word without its value is the file's;
    # 20 s: a restart under a whole sanitizer run's load takes seconds)
    with open(os.path.join(d.state, "jobs", jid, "runtime_limit"), "w") as f:
        f.write("20\n")
    os.kill(shim, signal.SIGUSR2)
    d.start()
    assert time.time() - t0 < 17, "joblet took too long to start again for this test to tell"
    time.sleep(max(0.0, t0 + 22 - time.time()))
    job = d.job(jid)
    assert job["status"] == "RUNNING" and alive(shim), \
        f"killed by a run-time limit its row does not have: {job}\n{d.log()[-2000:]}"
    assert not (job.get("limits") or {}).get("max_runtime_s"), job.get("limits")
    # a limit committed is told again, and holds
    code, body = d.api("POST", f"/v1/jobs/{jid}/update", {"max_runtime_s": 1})
    assert code == 200, body
    assert d.wait(jid, 30)["status"] != "COMPLETED"
