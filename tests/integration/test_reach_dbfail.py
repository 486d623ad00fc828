"""Commit-failure paths that a coverage run found no test reached, driven through the real
daemon and its API: submit.c's submit_commit and submit_undo, arrays.c's submission undo,
workflow.c's workflow_create rollback, array_ctl.c's and job_ctl.c's commit_delete, and
retention.c's pass while the database is locked.

Two ways to make a commit fail: another process holding the database's write lock
(conftest.DbLock), and the state filesystem full to the block (test_hostile_disk's small_state).
With the lock held, a submission's or a delete's first write fails busy, so the route refuses
(503, "nothing was ...") before its commit; with the disk full, the writes go through into
SQLite's cache and the commit alone fails (507), which is what the rollbacks above take back.

What each checks: the answer is not 2xx; nothing half-made is listed or left in the jobs
directory, and what a refused delete named is still whole; once the lock goes or there is room
again, asking again succeeds exactly once (no duplicate); after a kill -9 and a restart, the
state is what was answered."""
import os

import pytest

from conftest import DbLock, wait_for
from test_hostile_disk import small_state  # noqa: F401 (a fixture: a daemon on a small filesystem of its own)


def names(d, path, key, mark):
    code, ans = d.api("GET", path)
    assert code == 200, ans
    return [x["id"] for x in ans[key] if x.get("name") == mark]


def job_dirs(d):
    top = os.path.join(d.state, "jobs")
    return set(os.listdir(top)) if os.path.isdir(top) else set()


def refused(d, method, path, body=None):
    """The answer to a request made while the database is locked: never 2xx, and one that says
    nothing was done or that it was not saved (the database's words)."""
    status, retry, ans = d.api_retry_after(method, path, body)
    assert not 200 <= status < 300, (path, status, ans)
    assert status in (500, 503), (path, status, ans)
    assert "database" in ans["error"]["message"], ans
    return status, retry, ans


def test_submissions_refused_while_locked_leave_nothing_and_go_through_once(fresh_daemon):
    """A job, an array and a workflow submitted while the database is locked: refused, nothing of
    them in the listings or under the jobs directory; once the lock goes each, asked again, is
    made once and runs; a restart after kill -9 shows exactly those."""
    d = fresh_daemon()
    d.wait(d.submit("true"), 60)  # the jobs directory and root's /work exist
    mark = "dbf" + os.urandom(3).hex()
    tries = [("job", {"command": "sh", "args": ["-c", "echo ran"], "name": mark + "-j"}),
             ("array", {"command": "true", "array": "0-2", "name": mark + "-a"}),
             ("workflow", {"name": mark + "-w", "jobs": [{"name": "a", "request": {"command": "true"}},
                                                          {"name": "b", "request": {"command": "true"},
                                                           "requires": [{"job": "a", "status": "COMPLETED"}]}]})]
    dirs = job_dirs(d)
    lock = DbLock(d.state)
    try:
        for what, body in tries:
            path = "/v1/workflows" if what == "workflow" else "/v1/jobs"
            status, retry, ans = refused(d, "POST", path, body)
            assert status == 503 and retry == "1" and "nothing was submitted" in ans["error"]["message"], ans
        # nothing half-made: not listed while the lock is still held, no directory left
        assert names(d, "/v1/jobs", "jobs", mark + "-j") == []
        assert names(d, "/v1/jobs", "jobs", mark + "-a") == []
        assert names(d, "/v1/workflows", "workflows", mark + "-w") == []
        assert job_dirs(d) == dirs
    finally:
        lock.release()
    assert job_dirs(d) == dirs
    made = {}
    for what, body in tries:
        path = "/v1/workflows" if what == "workflow" else "/v1/jobs"
        code, ans = d.api("POST", path, body)
        assert code == 201, (what, code, ans)
        made[what] = ans["id"]
    assert d.wait(made["job"])["status"] == "COMPLETED"
    assert d.output(made["job"]) == "ran\n"
    code, wf = d.api("GET", f"/v1/workflows/{made['workflow']}")
    assert code == 200 and len(wf["jobs"]) == 2, wf
    for j in wf["jobs"]:
        assert d.wait(j["job_id"])["status"] == "COMPLETED"
    a = wait_for(lambda: d.job(made["array"])["status"] == "COMPLETED" and d.job(made["array"]), "the array ended")
    assert a["status"] == "COMPLETED", a

    def seen():
        return (names(d, "/v1/jobs", "jobs", mark + "-j"), names(d, "/v1/jobs", "jobs", mark + "-a"),
                names(d, "/v1/workflows", "workflows", mark + "-w"))
    want = ([made["job"]], [made["array"]], [made["workflow"]])
    assert seen() == want
    d.kill9()
    d.start()
    assert seen() == want


def test_an_array_delete_while_locked_keeps_it_whole_and_goes_once(fresh_daemon):
    """An ended array deleted while the database is locked: refused (its tasks' jobs are deleted
    first, and that write fails), the array and every task still there, on disk too; a delete of a
    job alone is refused so as well. Once the lock goes each delete goes through once (asked again:
    404), and a restart does not bring them back."""
    d = fresh_daemon()
    code, a = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-3"})
    assert code == 201, a
    aid = a["id"]
    wait_for(lambda: d.job(aid)["status"] == "COMPLETED", "the array ended")
    job = d.submit("true")
    d.wait(job)
    code, lst = d.api("GET", "/v1/jobs?expand=1")
    tasks = sorted(j["id"] for j in lst["jobs"] if (j.get("array") or {}).get("id") == aid)
    assert len(tasks) == 4, lst
    dirs = job_dirs(d)
    lock = DbLock(d.state)
    try:
        for path in (f"/v1/jobs/{aid}", f"/v1/jobs/{job}"):
            status, retry, ans = refused(d, "DELETE", path)
            assert status == 503 and retry == "1" and "nothing was deleted" in ans["error"]["message"], ans
        assert d.api("GET", f"/v1/jobs/{aid}")[0] == 200
        assert d.api("GET", f"/v1/jobs/{job}")[0] == 200
        for t in tasks:
            assert d.api("GET", f"/v1/jobs/{t}")[0] == 200, t
        assert job_dirs(d) == dirs
    finally:
        lock.release()
    for path in (f"/v1/jobs/{aid}", f"/v1/jobs/{job}"):
        code, ans = d.api("DELETE", path)
        assert code == 200, (path, code, ans)
        assert d.api("DELETE", path)[0] == 404
    gone = [aid, job, *tasks]
    for i in gone:
        assert d.api("GET", f"/v1/jobs/{i}")[0] == 404, i
    d.kill9()
    d.start()
    for i in gone:
        assert d.api("GET", f"/v1/jobs/{i}")[0] == 404, i


def test_a_retention_pass_while_locked_deletes_nothing_then_deletes_once(fresh_daemon):
    """jobs.keep_ended_s with the database locked: the pass that finds an ended job due cannot
    delete it; it says so in the log, the job stays (listed, its output readable), and once the
    lock goes a later pass deletes it. So for an ended array with no job left, which the pass reaps
    after its jobs. A restart does not bring either back."""
    d = fresh_daemon("jobs:\n  keep_ended_s: 2\n")
    keep = d.submit("sleep", "600")  # running: never due
    j = d.submit("sh", "-c", "echo kept; sleep 1")
    lock = DbLock(d.state)
    try:
        wait_for(lambda: "ended jobs could not be deleted" in d.log(), "a retention pass found the lock", 90)
        assert d.job(j)["status"] == "COMPLETED"
        assert d.output(j) == "kept\n"
    finally:
        lock.release()
    wait_for(lambda: d.api("GET", f"/v1/jobs/{j}")[0] == 404, "the ended job deleted once the lock went", 60)
    # an ended array none of whose tasks was made (held, canceled): no job is due, and the pass's
    # reap of arrays with no job left finds the lock
    code, a = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-3", "hold": True})
    assert code == 201, a
    assert d.api("POST", f"/v1/jobs/{a['id']}/cancel")[0] == 200
    lock = DbLock(d.state)
    try:
        wait_for(lambda: "arrays with no job left could not be deleted" in d.log(), "a reap found the lock", 90)
        assert d.job(a["id"])["status"] == "CANCELED"
    finally:
        lock.release()
    wait_for(lambda: d.api("GET", f"/v1/jobs/{a['id']}")[0] == 404, "the array deleted once the lock went", 60)
    assert d.job(keep)["status"] == "RUNNING"
    assert d.api("POST", f"/v1/jobs/{keep}/kill")[0] == 200
    d.kill9()
    d.start()
    assert d.api("GET", f"/v1/jobs/{j}")[0] == 404
    assert d.api("GET", f"/v1/jobs/{a['id']}")[0] == 404


def test_commits_that_fail_on_a_full_state_disk_are_taken_back(small_state):
    """The commit failing alone (its writes went through): the state filesystem full to the
    block. A job's and a workflow's submission are answered 507, saying they were not created
    (submit_commit, workflow_create's rollback), an array of no made task and an ended job are
    not deleted (array_ctl.c's and job_ctl.c's commit_delete), nor an ended array's tasks' jobs,
    which go first (job_ctl_delete_many); nothing half-made is listed or
    left in the jobs directory, the deleted are still whole. Once there is room again each,
    asked again, goes through once, and a restart after kill -9 shows exactly that."""
    import shutil
    if not (os.path.exists("/dev/loop-control") and shutil.which("mkfs.ext4")):
        pytest.skip("no loop devices or mkfs.ext4 here: no small state filesystem to fill")
    from test_hostile_disk import fill, unfill
    d = small_state("jobs:\n  state_reserve: 0\n  work_quota: 0\n")
    d.start()
    mark = "full" + os.urandom(3).hex()
    job = d.submit("sh", "-c", "echo stays")
    d.wait(job)
    code, held = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-3", "hold": True})
    assert code == 201, held
    assert d.api("POST", f"/v1/jobs/{held['id']}/cancel")[0] == 200
    code, ran = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-2"})
    assert code == 201, ran
    wait_for(lambda: d.job(ran["id"])["status"] == "COMPLETED", "the array ended")
    ran_tasks = sorted(j["id"] for j in d.api("GET", "/v1/jobs?expand=1")[1]["jobs"]
                       if (j.get("array") or {}).get("id") == ran["id"])
    assert len(ran_tasks) == 3, ran_tasks
    tries = [("/v1/jobs", {"command": "sh", "args": ["-c", "echo ran"], "name": mark + "-j"}, "the job was not created"),
             ("/v1/workflows", {"name": mark + "-w", "jobs": [{"name": "a", "request": {"command": "true"}}]},
              "the workflow was not created"),
             ("/v1/jobs", {"command": "true", "array": "0-2", "name": mark + "-a"}, "the array was not created")]
    dirs = job_dirs(d)
    fill(d.state, 0)
    try:
        for path, body, words in tries:
            status, ans = d.api("POST", path, body)
            assert status == 507, (path, status, ans)
            msg = ans["error"]["message"]
            assert words in msg and "state filesystem" in msg and "full" in msg, ans
        for i in (held["id"], job, ran["id"]):
            status, ans = d.api("DELETE", f"/v1/jobs/{i}")
            assert status == 507, (i, status, ans)
            assert "deleted" in ans["error"]["message"] and "full" in ans["error"]["message"], ans
        assert names(d, "/v1/jobs", "jobs", mark + "-j") == []
        assert names(d, "/v1/workflows", "workflows", mark + "-w") == []
        assert names(d, "/v1/jobs", "jobs", mark + "-a") == []
        assert d.api("GET", f"/v1/jobs/{held['id']}")[0] == 200
        assert d.output(job) == "stays\n"
        for i in (ran["id"], *ran_tasks):  # its tasks' delete, committed first, failed: all of it stays
            assert d.api("GET", f"/v1/jobs/{i}")[0] == 200, i
        assert job_dirs(d) == dirs
    finally:
        unfill(d.state)
    assert "taken back (its submission could not be saved)" in d.log()
    made = []
    for path, body, _ in tries:
        code, ans = d.api("POST", path, body)
        assert code == 201, (path, code, ans)
        made.append(ans["id"])
    assert d.wait(made[0])["status"] == "COMPLETED" and d.output(made[0]) == "ran\n"
    wait_for(lambda: d.job(made[2])["status"] == "COMPLETED", "the array ended")
    for i in (held["id"], job, ran["id"]):
        assert d.api("DELETE", f"/v1/jobs/{i}")[0] == 200, i
        assert d.api("DELETE", f"/v1/jobs/{i}")[0] == 404, i

    def seen():
        return (names(d, "/v1/jobs", "jobs", mark + "-j"), names(d, "/v1/workflows", "workflows", mark + "-w"),
                names(d, "/v1/jobs", "jobs", mark + "-a"),
                [d.api("GET", f"/v1/jobs/{i}")[0] for i in (held["id"], job, ran["id"], *ran_tasks)])
    want = ([made[0]], [made[1]], [made[2]], [404] * 6)
    assert seen() == want
    d.kill9()
    d.start()
    assert seen() == want
