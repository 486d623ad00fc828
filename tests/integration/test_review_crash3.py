"""Review (crash consistency, third round: deletes spread over several requests, big commits,
array control; "lose nothing when something fails"). The daemon is killed with SIGKILL at
chosen moments and what the next start finds is looked at.

1. The orphan sweep at start (core/orphans.c) took every entry of <state>/jobs and of the /work
   filesystems named by an ID that no job has for a leftover of a killed joblet, and removed it.
   An array with uploads keeps its files in <state>/jobs/<array id> (and its /work copy), which
   its tasks' shims copy into their /work as they start: any restart of joblet (a SIGKILL, a
   plain stop too) removed them, and every task that had not started yet failed. The sweep
   knows the arrays' IDs now."""
import base64
import os

from conftest import tasks_of, wait_array


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
