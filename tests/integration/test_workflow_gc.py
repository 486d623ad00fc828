"""A workflow's lifetime (docs/workflows.md "How long a workflow is kept"): one that ended and
whose every job and array was deleted is dropped, from memory and from the database, and its id
is then not found; one with a job still kept stays; a restart gives the same answer. Before, a
user's loop of submit, cancel, delete kept every workflow and its row for ever (150 MB at
20,000), and GET /v1/workflows walked every user's."""
import datetime
import os
import sqlite3
import time

from conftest import api_as

USER = 4247   # a local user with no role (sees its own workflows only)


def later():
    return (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=300)).strftime("%Y-%m-%dT%H:%M:%SZ")


def body(name, array=None):
    """One job that waits for a time far ahead (nothing runs), or an array of such tasks."""
    req = {"command": "true", "schedule_at": later()}
    if array:
        req["array"] = array
    return {"name": name, "jobs": [{"name": "a", "requires": [], "request": req}]}


def canceled(d, name, array=None):
    """A canceled workflow: (its id, its job's or array's id)."""
    st, wf = d.api("POST", "/v1/workflows", body(name, array))
    assert st == 201, wf
    st, wf = d.api("POST", f"/v1/workflows/{wf['id']}/cancel")
    assert st == 200 and wf["state"] == "CANCELED", wf
    st, wf = d.api("GET", f"/v1/workflows/{wf['id']}")
    assert st == 200, wf
    return wf["id"], wf["jobs"][0]["job_id"]


def rows(d):
    db = sqlite3.connect(os.path.join(d.state, "joblet.db"), timeout=30)
    try:
        return [r[0] for r in db.execute("SELECT id FROM workflows")]
    finally:
        db.close()


def listed(d):
    st, out = d.api("GET", "/v1/workflows")
    assert st == 200, out
    return [w["id"] for w in out["workflows"]]


def test_submit_cancel_delete_in_a_loop_keeps_no_workflow(fresh_daemon):
    d = fresh_daemon("limits:\n  max_queued_per_user: 0\n  max_jobs_per_user: 0\n")
    for i in range(30):
        wid, jid = canceled(d, f"loop{i}")
        st, out = d.api("DELETE", f"/v1/jobs/{jid}")
        assert st == 200, out
        # gone at once: the next request does not find it
        st, out = d.api("GET", f"/v1/workflows/{wid}")
        assert st == 404, out
    # the same through DELETE /v1/jobs (every ended job at once) and an array's delete
    ids = [canceled(d, f"many{i}")[0] for i in range(20)]
    awid, aid = canceled(d, "sweep", array="0-3")
    st, out = d.api("DELETE", "/v1/jobs")
    assert st == 200 and out["deleted"] == 20, out
    assert all(d.api("GET", f"/v1/workflows/{w}")[0] == 404 for w in ids)
    # the array, not made (canceled before its time): deleted whole on its own
    st, a = d.api("GET", f"/v1/workflows/{awid}")
    if st == 200:
        st, out = d.api("DELETE", f"/v1/jobs/{aid}")
        assert st == 200, out
    assert d.api("GET", f"/v1/workflows/{awid}")[0] == 404
    assert listed(d) == []
    assert rows(d) == []
    assert "dropped: it ended CANCELED and each of its jobs was deleted" in d.log()
    d.stop()
    d.start()
    assert listed(d) == [] and rows(d) == []


def test_a_workflow_with_a_job_kept_stays(fresh_daemon):
    d = fresh_daemon()
    st, wf = d.api("POST", "/v1/workflows", {"name": "two", "jobs": [
        {"name": "a", "requires": [], "request": {"command": "true", "schedule_at": later()}},
        {"name": "b", "requires": [], "request": {"command": "true", "schedule_at": later()}}]})
    assert st == 201, wf
    wid = wf["id"]
    assert d.api("POST", f"/v1/workflows/{wid}/cancel")[0] == 200
    jobs = {j["name"]: j["job_id"] for j in d.api("GET", f"/v1/workflows/{wid}")[1]["jobs"]}
    assert d.api("DELETE", f"/v1/jobs/{jobs['a']}")[0] == 200
    st, wf = d.api("GET", f"/v1/workflows/{wid}")
    assert st == 200 and [j["status"] for j in wf["jobs"]] == ["DELETED", "CANCELED"], wf
    # one still running is kept too, whatever is deleted of the others
    st, run = d.api("POST", "/v1/workflows", {"name": "runs", "jobs": [
        {"name": "a", "requires": [], "request": {"command": "true"}},
        {"name": "b", "requires": [{"job": "a", "status": "COMPLETED"}], "request": {"command": "sleep", "args": ["60"]}}]})
    assert st == 201, run
    rid = run["id"]
    for _ in range(600):
        st, run = d.api("GET", f"/v1/workflows/{rid}")
        if [j["status"] for j in run["jobs"]] == ["COMPLETED", "RUNNING"]:
            break
        time.sleep(0.05)
    assert [j["status"] for j in run["jobs"]] == ["COMPLETED", "RUNNING"], run
    assert d.api("DELETE", f"/v1/jobs/{run['jobs'][0]['job_id']}")[0] == 200
    assert d.api("GET", f"/v1/workflows/{rid}")[0] == 200
    assert sorted(rows(d)) == sorted([wid, rid])
    # a restart keeps both, and drops the first once its last job goes
    assert d.api("POST", f"/v1/workflows/{rid}/cancel")[0] == 200
    d.stop()
    d.start()
    assert sorted(listed(d)) == sorted([wid, rid]) and sorted(rows(d)) == sorted([wid, rid])
    assert d.api("DELETE", f"/v1/jobs/{jobs['b']}")[0] == 200
    assert d.api("GET", f"/v1/workflows/{wid}")[0] == 404
    assert listed(d) == [rid] and rows(d) == [rid]
    d.stop()
    d.start()
    assert listed(d) == [rid] and rows(d) == [rid]


def test_a_row_left_by_a_delete_not_committed_is_dropped_at_start(fresh_daemon):
    """A workflow ended with every job deleted whose own row is still there (a crash between
    the job's delete and the turn's commit): dropped when joblet starts."""
    d = fresh_daemon()
    wid, jid = canceled(d, "left")
    d.stop()
    db = sqlite3.connect(os.path.join(d.state, "joblet.db"), timeout=30)
    db.execute("DELETE FROM jobs WHERE id = ?", (jid,))
    db.commit()
    db.close()
    d.start()
    assert d.api("GET", f"/v1/workflows/{wid}")[0] == 404
    assert rows(d) == [] and listed(d) == []


def test_a_user_lists_its_own_workflows_alone(fresh_daemon):
    d = fresh_daemon()
    os.chmod(d.dir, 0o755)
    os.chmod(d.sock, 0o666)
    mine = [canceled(d, f"root{i}")[0] for i in range(3)]
    st, wf = api_as(d, USER, "POST", "/v1/workflows", body("users"))
    assert st == 201, wf
    st, out = api_as(d, USER, "GET", "/v1/workflows")
    assert st == 200 and [w["id"] for w in out["workflows"]] == [wf["id"]], out
    assert sorted(listed(d)) == sorted(mine + [wf["id"]])
    # the user's workflow, canceled and its job deleted, goes from its list too
    assert api_as(d, USER, "POST", f"/v1/workflows/{wf['id']}/cancel")[0] == 200
    st, full = api_as(d, USER, "GET", f"/v1/workflows/{wf['id']}")
    assert st == 200, full
    assert api_as(d, USER, "DELETE", f"/v1/jobs/{full['jobs'][0]['job_id']}")[0] == 200
    st, out = api_as(d, USER, "GET", "/v1/workflows")
    assert st == 200 and out["workflows"] == [], out
    assert sorted(listed(d)) == sorted(mine)
