"""A hostile user against the lookups by index (common/idindex.c), the scheduler's list of open
arrays (core/arrays.c arrays_open) and rnx job update ARRAY (docs/batch.md, docs/api.md): a
reference must name what the old scan named (full id, then a name exactly one visible object
has, then a unique id prefix; another user's objects invisible but for "full id is another
user's"), an array must never fall off the scheduler's list while it has tasks to make (the
daemon runs at log level debug, where a list that differs from a scan aborts it), and an
array's update must be refused with the field named, for the right caller, and kept across
kill -9.

One daemon for the module; the tests that kill it have their own."""
import os
import shutil
import tempfile
import time
import uuid

import pytest

from conftest import TERMINAL, api_as, rnx_as, submit_array, tasks_of, wait_for

LIMITS = "limits:\n  max_queued_per_user: 200000\n  max_jobs_per_user: 200000\n"
UID = 4322  # a user who is not root (no account needed: joblet reads the peer's uid)
GATE = "while [ ! -e /work/go ]; do sleep 0.02; done"


@pytest.fixture(scope="module")
def d():
    from conftest import Daemon, need_root
    need_root()
    dm = Daemon(LIMITS).start()
    yield dm
    dm.cleanup()


def alive(d):
    assert d.proc.poll() is None, "joblet died:\n" + d.log()[-4000:]


def counts(d, aid):
    return d.job(aid)["array"]["counts"]


def task(d, aid, t):
    return next((j for j in tasks_of(d, aid) if j["array"]["task"] == t), None)


def end_all(d, *ids):
    for i in ids:
        d.api("POST", f"/v1/jobs/{i}/kill")
    for i in ids:
        wait_for(lambda: d.api("GET", f"/v1/jobs/{i}")[1]["status"] in TERMINAL, f"{i} ends")


# ---- array_throttle: values ---------------------------------------------------------------

def test_array_throttle_values_are_refused_naming_array_throttle(d):
    aid = submit_array(d, "0-3", "sleep", "60", max_runtime_s=120)["id"]
    d.api("POST", f"/v1/jobs/{aid}/hold")
    try:
        bad = [4000001, 4000002, -1, -2**63, 2.0, 2.5, "3", None, True, {"n": 3}, [3]]
        for v in bad:
            code, e = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": v})
            assert code == 400, (v, e)
            assert e["error"]["field"] == "array_throttle", (v, e)
            msg = e["error"]["message"]
            assert msg.startswith("array_throttle:") and "from 1 to 4000000" in msg and "0 for no limit" in msg, (v, e)
        assert d.job(aid)["array"]["throttle"] == 0  # nothing changed by a refusal
        # the largest that is accepted is what a submission's %N accepts
        code, r = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": 4000000})
        assert code == 200 and r["array"]["array"]["throttle"] == 4000000, r
        p = d.rnx("job", "update", aid, "--throttle=4000001")
        assert p.returncode == 2 and "--throttle: '4000001'" in p.stderr and "4000000" in p.stderr, p.stderr
        # a refusal of another field names it, and leaves the throttle as it was
        code, e = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": 2, "max_runtime_s": -5})
        assert code == 400 and e["error"]["field"] == "max_runtime_s", e
        code, e = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": 2, "gpu_count": 10000})
        assert code == 400 and e["error"]["field"] == "gpu_count", e
        assert d.job(aid)["array"]["throttle"] == 4000000
        # 0 takes the limit away; the same value again changes nothing (acted 0)
        code, r = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": 0})
        assert code == 200 and r["array"]["array"]["throttle"] == 0 and r["array"]["request"]["array"] == "0-3", r
        code, r = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": 0})
        assert code == 200 and r["acted"] == 0, r
    finally:
        d.api("POST", f"/v1/jobs/{aid}/cancel")
    alive(d)


# ---- array update: who may ------------------------------------------------------------------

def test_another_users_array_cannot_be_updated_or_found(d):
    name = "root-array-" + uuid.uuid4().hex[:6]
    aid = submit_array(d, "0-3%1", "sleep", "60", name=name, priority=0)["id"]
    d.api("POST", f"/v1/jobs/{aid}/hold")
    try:
        # a name or a prefix of another user's array matches nothing: the same 404 as a missing one
        for ref in (name, aid[:8], aid[:13]):
            code, e = api_as(d, UID, "POST", f"/v1/jobs/{ref}/update", {"array_throttle": 3})
            assert code == 404, (ref, e)
            assert "another user" not in e["error"]["message"], e
        # its full id: "another user's" (idref.h), never the update
        code, e = api_as(d, UID, "POST", f"/v1/jobs/{aid}/update", {"array_throttle": 3, "priority": -5})
        assert code in (403, 404), e
        a = d.job(aid)
        assert (a["array"]["throttle"], a["request"].get("priority", 0)) == (1, 0), a
        p = rnx_as(d, UID, "job", "update", aid[:8], "--throttle=3")
        assert p.returncode != 0 and "another user" not in p.stderr, p.stderr
    finally:
        d.api("POST", f"/v1/jobs/{aid}/cancel")
    # the user's own array: lowering its priority is theirs, raising it is an admin's
    code, r = api_as(d, UID, "POST", "/v1/jobs", {"command": "sleep", "args": ["60"], "array": "0-3%1",
                                                  "name": name, "priority": 0})
    assert code == 201, r
    mine = r["id"]
    try:
        code, e = api_as(d, UID, "POST", f"/v1/jobs/{mine}/update", {"priority": 5})
        assert code == 403 and "priority" in e["error"]["message"], e
        code, e = api_as(d, UID, "POST", f"/v1/jobs/{mine}/update", {"priority": 5, "array_throttle": 4})
        assert code == 403, e
        assert d.job(mine)["array"]["throttle"] == 1  # nothing of a refused update
        # by its name: the user's own array, though root's has the same name
        code, r = api_as(d, UID, "POST", f"/v1/jobs/{name}/update", {"priority": -2, "array_throttle": 2})
        assert code == 200 and r["array"]["id"] == mine, r
        assert (r["array"]["array"]["throttle"], r["array"]["request"]["priority"]) == (2, -2), r
        code, e = api_as(d, UID, "POST", f"/v1/jobs/{mine}/update", {"priority": -1})
        assert code == 403, e  # -2 -> -1 is a raise too
        # root sees both arrays of that name: ambiguous, both listed
        code, e = d.api("POST", f"/v1/jobs/{name}/update", {"array_throttle": 3})
        assert code == 409 and aid[:8] in e["error"]["message"] and mine[:8] in e["error"]["message"], e
        code, r = d.api("POST", f"/v1/jobs/{mine}/update", {"priority": 7})
        assert code == 200 and r["array"]["request"]["priority"] == 7, r
    finally:
        d.api("POST", f"/v1/jobs/{mine}/cancel")
    alive(d)


# ---- references: the index answers as the scan did -------------------------------------------

def test_references_by_id_name_and_prefix(d):
    a = d.submit("sleep", "60")
    b = d.submit("sleep", "60")
    try:
        # a name that is another job's id prefix: the name wins (it shadows the prefix)
        n1 = d.submit("true", name=a[:8])
        assert d.job(a[:8])["id"] == n1
        # a name that is another job's full id: the full id wins
        n2 = d.submit("true", name=b)
        assert d.job(b)["id"] == b
        assert d.job(n2[:13])["id"] == n2
        # ids are lowercase: an uppercase id names nothing (not even by prefix)
        code, e = d.api("GET", f"/v1/jobs/{a.upper()}")
        assert code == 404, e
        # (a prefix with a letter in it: one of digits alone is the same in upper and lower case)
        cut = max(8, next(i for i, ch in enumerate(a) if ch in "abcdef") + 1)
        code, e = d.api("GET", f"/v1/jobs/{a[:cut].upper()}")
        assert code == 404, e
        # a prefix with its dash, and through the dash
        assert d.job(a[:9])["id"] == a
        assert d.job(a[:20])["id"] == a
        # a prefix longer than an id, an id with a character more: nothing
        code, e = d.api("GET", f"/v1/jobs/{a}0")
        assert code == 404, e
        # 1 to 3 hex characters with many jobs: ambiguous ones list candidates that all start so
        ids = [d.submit("true") for _ in range(40)] + [a, b, n1, n2]
        for ref in {i[:k] for i in ids for k in (1, 2, 3)}:
            code, r = d.api("GET", f"/v1/jobs/{ref}")
            code2, lst = d.api("GET", "/v1/jobs?expand=1")   # (an array and its tasks too)
            every = {j["id"] for j in lst["jobs"] if j["id"].startswith(ref)}
            named = [j["id"] for j in lst["jobs"] if j.get("name") == ref]
            if named:
                continue
            if ref.isdigit() and ref[0] != "0" and int(ref) <= max(j["number"] for j in lst["jobs"]):
                # digits alone are a job's number (Slurm's job id) once that number was given, never
                # an id prefix then
                numbered = [j["id"] for j in lst["jobs"] if j["number"] == int(ref)]
                assert (code, r["id"] if code == 200 else None) == \
                    ((200, numbered[0]) if numbered else (404, None)), (ref, numbered, r)
                continue
            if len(every) == 1:
                assert code == 200 and r["id"] in every, (ref, r)
            else:
                assert code == 409 and f"matches {len(every)} jobs" in r["error"]["message"], (ref, every, r)
        # a 36-character name that is no id, and a name with a dash like an id's
        long_name = "x" * 36
        n3 = d.submit("true", name=long_name)
        assert d.job(long_name)["id"] == n3
        n4 = d.submit("true", name=a[:8] + "-")
        assert d.job(a[:8] + "-")["id"] == n4
        # deleted: nothing, by id, prefix or name
        d.wait(n3)
        code, _ = d.api("DELETE", f"/v1/jobs/{n3}")
        assert code == 200
        for ref in (n3, n3[:10], long_name):
            code, e = d.api("GET", f"/v1/jobs/{ref}")
            assert code == 404, (ref, e)
        # another user: root's jobs by name or prefix match nothing, by full id "another user's"
        code, e = api_as(d, UID, "GET", f"/v1/jobs/{a[:8]}-")
        assert code == 404, e
        code, e = api_as(d, UID, "GET", f"/v1/jobs/{a}")
        assert code == 403 and "another user" in e["error"]["message"], e
        code, r = api_as(d, UID, "POST", "/v1/jobs", {"command": "true", "name": a[:8] + "-"})
        assert code == 201, r
        code, got = api_as(d, UID, "GET", f"/v1/jobs/{a[:8]}-")
        assert code == 200 and got["id"] == r["id"], got   # the user's own, not a 409 with root's
        code, e = d.api("GET", f"/v1/jobs/{a[:8]}-")
        assert code == 409, e
    finally:
        end_all(d, a, b)
    alive(d)


def test_array_references_tasks_and_after(d):
    name = "sweep-" + uuid.uuid4().hex[:6]
    aid = submit_array(d, "0-2", "true", name=name)["id"]
    wait_for(lambda: d.job(aid)["status"] in TERMINAL, "the array ends")
    t1 = task(d, aid, 1)["id"]
    # the array's name names the array, not one of its tasks (which share the name)
    assert d.job(name)["id"] == aid
    assert d.job(aid[:8])["id"] == aid
    # a task answers to its own id and prefix
    assert d.job(t1)["id"] == t1
    assert d.job(t1[:12])["id"] == t1
    assert d.job(f"{name}_1")["id"] == t1
    assert d.job(f"{aid[:8]}_1")["id"] == t1
    # --after by the array's name and by a prefix: the array (all its tasks)
    for ref in (name, aid[:8]):
        p = d.rnx("job", "run", f"--after={ref}:ok", "true", check=True)
        j = d.wait(p.stdout.strip())
        assert j["status"] == "COMPLETED", j
        assert j["after"][0]["job"] == aid, j
    # --after by a task's prefix: that task
    p = d.rnx("job", "run", f"--after={t1[:10]}:ok", "true", check=True)
    j = d.wait(p.stdout.strip())
    assert j["after"][0]["job"] == t1, j
    # another user: the array by name, prefix or full id is no dependency of theirs
    for ref in (name, aid[:8], aid):
        p = rnx_as(d, UID, "job", "run", f"--after={ref}:ok", "true")
        assert p.returncode != 0 and "another user" not in p.stderr, (ref, p.stderr)
    alive(d)


# ---- array update: states -------------------------------------------------------------------

def test_update_reaches_made_tasks_as_their_own_update_would(d):
    """A task running gets only its time limit; a task made and waiting (requeued and held) gets
    every field; the tasks made later have the array's new request."""
    aid = submit_array(d, "0-4%3", "sh", "-c", GATE, max_runtime_s=600, priority=0)["id"]
    wait_for(lambda: counts(d, aid).get("RUNNING", 0) == 3, "three tasks run")
    t0, t1, t2 = (task(d, aid, k)["id"] for k in range(3))
    d.rnx("job", "requeue", "--hold", t1, check=True)
    wait_for(lambda: d.job(t1)["status"] == "HELD", "task 1 held")
    # as in Slurm, a held task takes no place under the %N: task 3 is made in its place
    wait_for(lambda: (task(d, aid, 3) or {}).get("status") == "RUNNING", "task 3 runs")
    t3 = task(d, aid, 3)["id"]
    code, r = d.api("POST", f"/v1/jobs/{aid}/update", {"priority": -4, "max_runtime_s": 300, "max_cpu": 50,
                                                      "array_throttle": 1})
    assert code == 200 and r["acted"] == 5, r   # the array, t0, t1 (HELD), t2, t3
    for t in (t0, t2, t3):
        j = d.job(t)
        assert (j["priority"], j["limits"]["max_runtime_s"]) == (0, 300), j
        assert j["limits"].get("max_cpu", 0) != 50, j
    j = d.job(t1)
    assert (j["priority"], j["limits"]["max_runtime_s"], j["limits"]["max_cpu"]) == (-4, 300, 50), j
    assert d.job(aid)["array"]["throttle"] == 1
    # throttle 1 with three running: task 4 is not made while they run
    from test_dependencies import release
    release(d, t0)
    time.sleep(0.5)
    assert task(d, aid, 4) is None, counts(d, aid)
    release(d, t2)
    release(d, t3)
    # none runs: task 4 is made (the held one takes no place), with the array's new request
    wait_for(lambda: task(d, aid, 4) and task(d, aid, 4)["status"] == "RUNNING", "task 4 runs")
    j = task(d, aid, 4)
    assert (j["priority"], j["limits"]["max_runtime_s"], j["limits"]["max_cpu"]) == (-4, 300, 50), j
    # task 1 let go (a task that ran: PREEMPTED, not QUEUED) waits for its %1, then runs
    d.rnx("job", "release", t1, check=True)
    time.sleep(0.5)
    j1 = d.job(t1)
    assert j1["status"] == "PREEMPTED" and "waits for its array's %1: 1 of its tasks run" in j1["wait_reason"], j1
    release(d, j["id"])
    wait_for(lambda: d.job(t1)["status"] == "RUNNING", "task 1 runs again")
    j = d.job(t1)
    release(d, j["id"])
    wait_for(lambda: d.job(aid)["status"] in TERMINAL, "the array ends")
    code, e = d.api("POST", f"/v1/jobs/{aid}/update", {"max_runtime_s": 10})
    assert code == 409 and "has ended" in e["error"]["message"], e
    alive(d)


def test_update_held_waiting_canceled_and_workflow_arrays(d):
    gate = d.submit("sh", "-c", GATE)
    # waiting on a job: its request and %N change, it still waits
    w = submit_array(d, "0-5%1", "true", after=[{"job": gate, "state": "ok"}])["id"]
    code, r = d.api("POST", f"/v1/jobs/{w}/update", {"array_throttle": 3, "priority": -1})
    assert code == 200 and r["acted"] == 1 and r["array"]["array"]["throttle"] == 3, r
    assert d.job(w)["status"] == "PENDING"
    # held: the same, and released it runs as updated
    h = submit_array(d, "0-5%1", "sh", "-c", GATE)["id"]
    d.api("POST", f"/v1/jobs/{h}/hold")
    code, r = d.api("POST", f"/v1/jobs/{h}/update", {"array_throttle": 2})
    assert code == 200, r
    # some tasks canceled before they are made
    code, r = d.api("POST", f"/v1/jobs/{h}_[3-5]/cancel")
    assert code == 200, r
    d.api("POST", f"/v1/jobs/{h}/release")
    wait_for(lambda: counts(d, h).get("RUNNING", 0) == 2, "two of the held array run")
    time.sleep(0.3)
    assert counts(d, h).get("RUNNING", 0) == 2
    # canceled: 409, whatever the field
    c = submit_array(d, "0-3", "true", after=[{"job": gate, "state": "ok"}])["id"]
    d.api("POST", f"/v1/jobs/{c}/cancel")
    for body in ({"array_throttle": 1}, {"priority": -1}):
        code, e = d.api("POST", f"/v1/jobs/{c}/update", body)
        assert code == 409 and "canceled" in e["error"]["message"], e
    # the gate: the waiting array runs with its new %N, every task once
    from test_dependencies import release
    release(d, gate)
    wait_for(lambda: d.job(w)["status"] in TERMINAL, "the waiting array ends")
    assert sorted(j["array"]["task"] for j in tasks_of(d, w)) == list(range(6))
    assert {j["priority"] for j in tasks_of(d, w)} == {-1}

    def go():
        for t in tasks_of(d, h):
            if t["status"] == "RUNNING":
                release(d, t["id"])
        return d.job(h)["status"] in TERMINAL
    wait_for(go, "the held array ends")
    assert sorted(j["array"]["task"] for j in tasks_of(d, h)) == [0, 1, 2]
    alive(d)


def test_update_a_workflows_array_while_it_waits(d):
    from test_workflows import job, submit, wf_get
    wf = submit(d, "wf-upd", job("first", GATE), job("sweep", "true", requires=[("first", "COMPLETED")],
                                                       array="0-5%1"))
    sweep = next(j for j in wf_get(d, wf["id"])["jobs"] if j["name"] == "sweep")
    aid = sweep["job_id"]
    code, r = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": 3, "priority": -2})
    assert code == 200 and r["array"]["array"]["throttle"] == 3, r
    first = next(j for j in wf_get(d, wf["id"])["jobs"] if j["name"] == "first")["job_id"]
    wait_for(lambda: d.job(first)["status"] == "RUNNING", "the workflow's first job runs")
    from test_dependencies import release
    release(d, first)
    wait_for(lambda: wf_get(d, wf["id"])["state"] in ("COMPLETED", "FAILED", "CANCELED"), "the workflow ends")
    assert wf_get(d, wf["id"])["state"] == "COMPLETED"
    ts = tasks_of(d, aid)
    assert sorted(j["array"]["task"] for j in ts) == list(range(6)) and {j["priority"] for j in ts} == {-2}, ts
    code, e = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": 1})
    assert code == 409, e
    alive(d)


def test_a_lowered_throttle_holds_back_a_made_task_let_go(d):
    aid = submit_array(d, "0-2%3", "sh", "-c", GATE)["id"]
    wait_for(lambda: counts(d, aid).get("RUNNING", 0) == 3, "three tasks run")
    t0, t1, t2 = (task(d, aid, k)["id"] for k in range(3))
    try:
        d.rnx("job", "requeue", "--hold", t1, check=True)
        wait_for(lambda: d.job(t1)["status"] == "HELD", "task 1 held")
        d.rnx("job", "update", aid, "--throttle=1", check=True)
        d.rnx("job", "release", t1, check=True)
        time.sleep(1)
        assert [d.job(t)["status"] for t in (t0, t1, t2)].count("RUNNING") <= 2, counts(d, aid)
        j1 = d.job(t1)
        assert j1["status"] == "PREEMPTED" and "waits for its array's %1: 2 of its tasks run" in j1["wait_reason"], j1
        # the two running end: it is the array's one task to run now
        end_all(d, t0, t2)
        wait_for(lambda: d.job(t1)["status"] == "RUNNING", "task 1 starts once fewer than %1 run")
    finally:
        end_all(d, t0, t1, t2)


def test_a_held_task_takes_no_place_under_the_throttle(d):
    """As in Slurm, a task made and held (or waiting again) does not count toward its array's %N:
    the next task is made in its place; let go, it waits until fewer than %N run."""
    aid = submit_array(d, "0-3%2", "sh", "-c", GATE)["id"]
    wait_for(lambda: counts(d, aid).get("RUNNING", 0) == 2, "two tasks run")
    t0, t1 = (task(d, aid, k)["id"] for k in range(2))
    try:
        d.rnx("job", "requeue", "--hold", t0, check=True)
        wait_for(lambda: d.job(t0)["status"] == "HELD", "task 0 held")
        wait_for(lambda: (task(d, aid, 2) or {}).get("status") == "RUNNING", "task 2 made in its place")
        assert counts(d, aid).get("RUNNING", 0) == 2, counts(d, aid)
        d.rnx("job", "release", t0, check=True)
        time.sleep(1)
        j0 = d.job(t0)
        assert j0["status"] == "PREEMPTED" and "waits for its array's %2: 2 of its tasks run" in j0["wait_reason"], j0
        assert counts(d, aid).get("RUNNING", 0) == 2, counts(d, aid)
    finally:
        d.api("POST", f"/v1/jobs/{aid}/cancel")
        end_all(d, *[j["id"] for j in tasks_of(d, aid)])


# ---- restarts, delete-all -------------------------------------------------------------------

def test_kill9_keeps_the_update_the_open_arrays_and_the_references(fresh_daemon):
    d = fresh_daemon(LIMITS)
    from test_dependencies import release
    gate = d.submit("sh", "-c", GATE)
    name = "sweep-" + uuid.uuid4().hex[:6]
    # one waits on the gate, one is held with tasks canceled before they were made, one is
    # canceled mid-way, one runs at %1
    w = submit_array(d, "0-9%1", "true", name=name, after=[{"job": gate, "state": "ok"}])["id"]
    h = submit_array(d, "0-9%1", "sh", "-c", GATE)["id"]
    wait_for(lambda: counts(d, h).get("RUNNING", 0) == 1, "the held array's first task")
    d.api("POST", f"/v1/jobs/{h}/hold")
    assert d.api("POST", f"/v1/jobs/{h}_[3-5,8]/cancel")[0] == 200
    c = submit_array(d, "0-9%2", "sh", "-c", GATE)["id"]
    wait_for(lambda: counts(d, c).get("RUNNING", 0) == 2, "the canceled array's first tasks")
    assert d.api("POST", f"/v1/jobs/{c}/cancel")[0] == 200
    r = submit_array(d, "0-4%1", "sh", "-c", GATE)["id"]
    for aid, body in ((w, {"array_throttle": 4, "max_runtime_s": 77, "priority": -3}),
                      (h, {"array_throttle": 2}), (r, {"max_runtime_s": 99})):
        code, out = d.api("POST", f"/v1/jobs/{aid}/update", body)
        assert code == 200, out
    d.kill9()
    d.start()
    a = d.job(name)
    assert a["id"] == w and a["array"]["spec"] == "0-9%4" and a["request"]["array"] == "0-9%4", a
    assert (a["request"]["max_runtime_s"], a["request"]["priority"]) == (77, -3), a
    assert d.job(w[:8])["id"] == w and d.job(f"{name}_3")["array"]["task"] == 3
    assert d.job(h)["array"]["throttle"] == 2
    assert d.job(r)["request"]["max_runtime_s"] == 99
    # every array goes on as it was: the open ones make their tasks, each once
    release(d, gate)
    d.api("POST", f"/v1/jobs/{h}/release")

    def go():
        for aid in (h, c, r):
            for t in tasks_of(d, aid):
                if t["status"] == "RUNNING":
                    release(d, t["id"])
        return all(d.job(aid)["status"] in TERMINAL for aid in (w, h, c, r))
    wait_for(go, "every array ends", timeout=120)
    assert sorted(j["array"]["task"] for j in tasks_of(d, w)) == list(range(10))
    assert {j["limits"]["max_runtime_s"] for j in tasks_of(d, w)} == {77}
    assert sorted(j["array"]["task"] for j in tasks_of(d, h)) == [0, 1, 2, 6, 7, 9]
    assert sorted(j["array"]["task"] for j in tasks_of(d, r)) == list(range(5))
    assert all(j["limits"]["max_runtime_s"] == 99 for j in tasks_of(d, r) if j["array"]["task"] > 0)
    assert d.job(c)["status"] == "CANCELED" or d.job(c)["status"] in TERMINAL
    # delete-all: nothing answers by the old names or prefixes; a new one of the same name does
    p = d.rnx("job", "delete-all")
    assert p.returncode == 0, p.stderr
    for ref in (name, w, w[:8], h[:8], f"{name}_3"):
        code, e = d.api("GET", f"/v1/jobs/{ref}")
        assert code == 404, (ref, e)
    again = submit_array(d, "0-1", "true", name=name)["id"]
    assert d.job(name)["id"] == again
    d.kill9()
    d.start()
    assert d.job(name)["id"] == again
    wait_for(lambda: d.job(again)["status"] in TERMINAL, "the new array ends")
    alive(d)


@pytest.fixture
def slow_runsc():
    """A daemon whose isolation.runsc is a wrapper that waits 2 s before `runsc ... run`: a gVisor
    task's shim is started and the task not RUNNING for that long, whatever the machine's speed
    (with runsc itself the window was often too short to find: the test skipped on a quiet
    machine). The wrapper lies in a directory anyone may read: runsc runs as the sandbox's uid."""
    from conftest import Daemon, need_root
    need_root()
    runsc = shutil.which("runsc")
    if not runsc:
        pytest.skip("runsc is not installed: no slow start to update a task in")
    wrap_dir = tempfile.mkdtemp(prefix="joblet-slow-runsc-")
    os.chmod(wrap_dir, 0o755)
    wrap = os.path.join(wrap_dir, "runsc")
    with open(wrap, "w") as f:
        f.write(f'#!/bin/sh\nfor a; do [ "$a" = run ] && sleep 2; done\nexec {runsc} "$@"\n')
    os.chmod(wrap, 0o755)
    dm = Daemon(LIMITS + f"isolation:\n  runsc: {wrap}\n").start()
    yield dm
    dm.cleanup()
    shutil.rmtree(wrap_dir, ignore_errors=True)


def _end_told(d, jid):
    """What a failure needs to be read: the job, its history, its shim's and runsc's logs, and
    the daemon's lines about it (the first CI failure kept only the job's end reason)."""
    parts = [f"job: {d.job(jid)}", "events:"] + [f"  {e}: {t}" for e, t in d.events(jid)]
    for name in ("shim.log", "runsc.log"):
        try:
            with open(os.path.join(d.state, "jobs", jid, name), errors="replace") as f:
                parts.append(f"{name}:\n{f.read()[-4000:]}")
        except OSError as e:
            parts.append(f"{name}: {e}")
    about = "\n".join(line for line in d.log().splitlines() if jid[:8] in line)
    parts.append(f"joblet's log about it:\n{about[-4000:]}")
    return "\n".join(parts)


def test_update_reaches_a_task_whose_shim_is_starting(slow_runsc):
    d = slow_runsc
    # the window (shim started, not yet RUNNING) held open: the shim stopped (SIGSTOP) while its
    # sandbox comes up, so it cannot say it runs until the update is answered
    import signal
    tried = 0
    for _ in range(5):
        aid = submit_array(d, "0", "sleep", "60", isolation="gvisor")["id"]
        t = wait_for(lambda: (lambda x: x if x and (x["shim_pid"] or x["status"] in TERMINAL | {"RUNNING"})
                              else None)(task(d, aid, 0)), "task 0's shim started")
        if t["status"] == "QUEUED":
            os.kill(t["shim_pid"], signal.SIGSTOP)
            try:
                time.sleep(0.3)  # (a word it sent before it stopped is read by now)
                if d.job(t["id"])["status"] == "QUEUED":
                    tried += 1
                    code, r = d.api("POST", f"/v1/jobs/{aid}/update", {"max_runtime_s": 1})
                    assert code == 200, r
                    j = d.job(t["id"])
                    assert (r["acted"], j["limits"]["max_runtime_s"]) == (2, 1), (r["acted"], j["status"], j["limits"])
            finally:
                os.kill(t["shim_pid"], signal.SIGCONT)
        if tried:
            # the word reached its shim: the task ends at its new limit, not at its 60 s
            j = d.wait(t["id"], timeout=60)
            assert (j["status"], j["end_reason"]) == ("FAILED", "time_limit"), _end_told(d, t["id"])
            break
        end_all(d, t["id"])
    if not tried:
        pytest.skip("every task started too quickly to update it while its shim started")

def test_cancel_of_a_task_whose_shim_is_starting_names_its_state(slow_runsc):
    """`rnx job cancel ID_0` of a task whose shim was launched and which shows QUEUED until it runs
    was refused as "job ... is QUEUED; only a pending, scheduled, queued ... job can be canceled
    (use stop)": refused for being queued, in the words of the state a cancel takes. It says the
    task is starting now, and `rnx job stop` ends it. The window held open as above (the shim
    stopped while its sandbox comes up)."""
    d = slow_runsc
    import signal
    for _ in range(5):
        aid = submit_array(d, "0", "sleep", "60", isolation="gvisor")["id"]
        t = wait_for(lambda: (lambda x: x if x and (x["shim_pid"] or x["status"] in TERMINAL | {"RUNNING"})
                              else None)(task(d, aid, 0)), "task 0's shim started")
        if t["status"] != "QUEUED":
            end_all(d, t["id"])
            continue
        os.kill(t["shim_pid"], signal.SIGSTOP)
        try:
            time.sleep(0.3)  # (a word it sent before it stopped is read by now)
            caught = d.job(t["id"])["status"] == "QUEUED"
            if not caught:
                end_all(d, t["id"])
                continue
            p = d.rnx("job", "cancel", f"{aid[:8]}_0")
            assert p.returncode != 0, p.stdout
            # (a task named as its owner knows it: the array's task, then its job)
            assert f"task 0 of array {aid[:8]} (job {t['id']}) is starting (its shim was launched; it shows QUEUED " \
                "until it runs)" in p.stderr, \
                p.stderr
            assert "use stop (rnx job stop" in p.stderr and "is QUEUED" not in p.stderr, p.stderr
            assert d.job(t["id"])["status"] == "QUEUED"
            d.rnx("job", "stop", f"{aid[:8]}_0", check=True)
        finally:
            os.kill(t["shim_pid"], signal.SIGCONT)
        assert d.wait(t["id"], timeout=60)["status"] in ("STOPPED", "CANCELED"), d.job(t["id"])
        return
    pytest.skip("every task started too quickly to cancel it while its shim started")
