"""Commit-failure paths that a coverage run found no test reached (submit.c's submit_commit and
submit_undo, workflow.c's workflow_create rollback, array_ctl.c's commit_delete, retention.c's
pass while the database is locked), driven through the real daemon and its API while another
process holds the database's write lock (conftest.DbLock).

What each checks: the answer is not 2xx; nothing half-made is listed or left on disk; after the
lock goes, asking again succeeds exactly once (no duplicate); after a kill -9 and a restart, the
state is what was answered. (With the lock held, the first write of a submission or a delete
fails busy, so the route refuses before its commit: the refusal, not the commit's rollback, is
what answers. The rollback after writes that went through needs a commit that fails by itself,
a full disk: test_hostile_disk.)"""
import json
import os

import pytest

from conftest import DbLock, wait_for


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
    lock goes a later pass deletes it; a restart does not bring it back."""
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
    assert d.job(keep)["status"] == "RUNNING"
    assert d.api("POST", f"/v1/jobs/{keep}/kill")[0] == 200
    d.kill9()
    d.start()
    assert d.api("GET", f"/v1/jobs/{j}")[0] == 404
