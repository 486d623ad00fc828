"""A name shared by an ended job and a running one, against the real daemon (docs/cli.md "Naming
a job"): an action that applies only to a job not ended (kill, stop, cancel, signal, suspend,
resume, hold, release, requeue, update, attach, exec) resolves the name among the jobs not ended,
as `docker kill NAME` reaches the one container of that name and Slurm's `scancel --name` acts on
jobs pending or running; a delete, among the ended ones; status, log and wait keep refusing the
name as ambiguous. Several not ended: refused, each listed with its state; none not ended: the
ended ones are named with their states. Arrays and workflows resolve their names the same way.
(Every message word for word: tests/unit/test_idref.c.)"""
import os
import re
import subprocess
import time
import uuid

from conftest import BUILD, ROOT, submit_array, wait_array

def unique(stem):
    return f"{stem}-{uuid.uuid4().hex[:6]}"   # the shared daemon: a name no other test uses


def ended(d, name):
    jid = d.submit("true", name=name)
    assert d.wait(jid)["status"] == "COMPLETED"
    return jid


def running(d, name):
    jid = d.submit("sh", "-c", "sleep 300", name=name)
    d.wait_status(jid, "RUNNING")
    return jid


def test_kill_reaches_the_running_one(daemon):
    """kill, exec and a status asked with ?live=1 (rnx job attach's) take the running job of the
    name, the ended one left alone; status and log still call the name ambiguous."""
    d = daemon
    name = unique("x")
    old = ended(d, name)
    new = running(d, name)
    p = d.rnx("job", "status", name)
    assert p.returncode != 0
    assert f"'{name}' names 2 jobs: " in p.stderr, p.stderr
    assert f"{old[:8]} (COMPLETED)" in p.stderr and f"{new[:8]} (RUNNING)" in p.stderr, p.stderr
    assert d.rnx("job", "log", name).returncode != 0
    code, j = d.api("GET", f"/v1/jobs/{name}?live=1")
    assert code == 200 and j["id"] == new, j
    p = d.rnx("job", "exec", name, "--", "sh", "-c", "echo in-the-running-one")
    assert p.returncode == 0 and "in-the-running-one" in p.stdout, p.stderr
    p = d.rnx("job", "kill", name)
    assert p.returncode == 0, p.stderr
    assert d.wait(new)["status"] == "STOPPED"
    assert d.job(old)["status"] == "COMPLETED"


def test_attach_by_name(daemon):
    """rnx job attach NAME attaches to the running job of the name (its status read with
    ?live=1, then the attach): its exit code is the running one's."""
    d = daemon
    name = unique("att")
    ended(d, name)
    new = d.submit("sh", "-c", "while [ ! -e /work/go ]; do sleep 0.02; done; exit 7", name=name,
                   stdin=True)   # (its command waits QUEUED for a client at its terminal)
    rnx = subprocess.Popen([os.path.join(BUILD, "rnx"), "job", "attach", "--no-stdin", name],
                           env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock}, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        d.wait_status(new, "RUNNING")
        open(os.path.join(d.work(new), "go"), "w").close()
        out, err = rnx.communicate(timeout=60)
    finally:
        if rnx.poll() is None:
            rnx.kill()
            rnx.wait()
    assert rnx.returncode == 7, err
    assert d.wait(new)["exit_code"] == 7


def test_stop_and_suspend_by_name(daemon):
    """stop and the job control actions resolve as kill does."""
    d = daemon
    name = unique("s")
    ended(d, name)
    new = running(d, name)
    code, j = d.api("POST", f"/v1/jobs/{name}/suspend")
    assert code == 200 and j["id"] == new, j
    d.wait_status(new, "SUSPENDED")
    code, j = d.api("POST", f"/v1/jobs/{name}/resume")
    assert code == 200 and j["id"] == new, j
    d.wait_status(new, "RUNNING")
    p = d.rnx("job", "stop", name)
    assert p.returncode == 0, p.stderr
    assert d.wait(new)["status"] == "STOPPED"


def test_delete_takes_the_ended_one(daemon):
    """Only an ended job can be deleted: the name's ended job is the one deleted, the running one
    is left running."""
    d = daemon
    name = unique("d")
    old = ended(d, name)
    new = running(d, name)
    p = d.rnx("job", "delete", name)
    assert p.returncode == 0, p.stderr
    assert d.api("GET", f"/v1/jobs/{old}")[0] == 404
    assert d.job(new)["status"] == "RUNNING"
    # the name is one job's now: everything reaches it
    assert d.rnx("job", "status", name).returncode == 0
    assert d.rnx("job", "kill", name).returncode == 0
    d.wait(new)


def test_two_running_are_listed(daemon):
    """Two jobs of the name not ended: refused, both listed with their states (the ended one
    counted apart); nothing is killed."""
    d = daemon
    name = unique("two")
    old = ended(d, name)
    a, b = running(d, name), running(d, name)
    p = d.rnx("job", "kill", name)
    assert p.returncode != 0
    assert f"'{name}' names 2 jobs not ended (and 1 ended): " in p.stderr, p.stderr
    assert f"{a[:8]} (RUNNING)" in p.stderr and f"{b[:8]} (RUNNING)" in p.stderr, p.stderr
    assert old[:8] not in p.stderr
    assert "give one's id" in p.stderr
    assert d.job(a)["status"] == "RUNNING" and d.job(b)["status"] == "RUNNING"
    for jid in (a, b):
        assert d.rnx("job", "kill", jid).returncode == 0
        d.wait(jid)


def test_none_live_names_the_ended_ones(daemon):
    """Every job of the name ended: the refusal names each with its state, not "no job"; one alone
    is taken, and the action says it ended."""
    d = daemon
    name = unique("gone")
    a, b = ended(d, name), ended(d, name)
    p = d.rnx("job", "kill", name)
    assert p.returncode != 0
    assert f"'{name}' names 2 jobs, each of which has ended: " in p.stderr, p.stderr
    assert f"{a[:8]} (COMPLETED)" in p.stderr and f"{b[:8]} (COMPLETED)" in p.stderr, p.stderr
    assert "this acts only on a job that has not ended" in p.stderr
    code, err = d.api("POST", f"/v1/jobs/{name}/stop")
    assert code == 409 and err["error"]["code"] == "conflict", err   # a state's conflict, not an ambiguity
    one = unique("once")
    c = ended(d, one)
    p = d.rnx("job", "kill", one)
    assert p.returncode != 0
    assert f"job {c} is COMPLETED; only a running job can be killed" in p.stderr, p.stderr
    # and a delete of two ended ones of a name is ambiguous among them
    p = d.rnx("job", "delete", name)
    assert p.returncode != 0
    assert f"'{name}' names 2 jobs that ended: " in p.stderr, p.stderr


def test_array_and_job_of_a_name(daemon):
    """An ended array and a running job of one name: kill reaches the job; an array whose tasks
    run is reached over an ended job of its name."""
    d = daemon
    name = unique("arr")
    arr = submit_array(d, "1-2", "true", name=name)["id"]
    wait_array(d, arr)
    new = running(d, name)
    assert d.rnx("job", "kill", name).returncode == 0
    assert d.wait(new)["status"] == "STOPPED"
    name2 = unique("arr2")
    ended(d, name2)
    arr2 = submit_array(d, "1-2", "sh", "-c", "sleep 300", name=name2)["id"]
    # a task by NAME_T: of the array of the name not ended
    arr3 = submit_array(d, "1-2", "true", name=name2)["id"]
    wait_array(d, arr3)
    code, t = d.api("POST", f"/v1/jobs/{name2}_1/kill")
    assert code == 200 and t["array"]["id"] == arr2 and t["array"]["task"] == 1, t
    code, a = d.api("POST", f"/v1/jobs/{name2}/kill")
    assert code == 200 and a["array"]["id"] == arr2, a
    wait_array(d, arr2)


def test_workflow_cancel_by_name(daemon):
    """A workflow's cancel resolves its name among the workflows not ended; its status keeps
    calling the name ambiguous."""
    d = daemon
    name = unique("wf")
    code, w1 = d.api("POST", "/v1/workflows", {"name": name, "jobs": [{"name": "a", "request": {"command": "true"}}]})
    assert code == 201, w1
    done = None
    for _ in range(600):
        done = d.api("GET", f"/v1/workflows/{w1['id']}")[1]
        if done["state"] in ("COMPLETED", "FAILED", "CANCELED"):
            break
        time.sleep(0.05)
    assert done["state"] == "COMPLETED", done
    code, w2 = d.api("POST", "/v1/workflows", {"name": name, "jobs": [
        {"name": "a", "request": {"command": "sh", "args": ["-c", "sleep 300"]}}]})
    assert code == 201, w2
    code, e = d.api("GET", f"/v1/workflows/{name}")
    assert code == 409, e
    code, w = d.api("POST", f"/v1/workflows/{name}/cancel")
    assert code == 200 and w["id"] == w2["id"], w


def test_docs_samples_are_what_rnx_prints(daemon):
    """docs/cli.md's three `rnx job kill train` samples, their ids and name aside, are rnx's words."""
    d = daemon
    shown = [l for l in open(os.path.join(ROOT, "docs", "cli.md")).read().splitlines()
             if l.startswith("rnx: 'train' names 2 jobs")][1:]
    assert len(shown) == 2, shown

    def like(sample, name):
        pat = re.escape(sample).replace("train", re.escape(name))
        return re.sub(r"[0-9a-f]{8}", "[0-9a-f]{8}", pat)

    name = unique("t")
    ended(d, name)
    a, b = running(d, name), running(d, name)
    p = d.rnx("job", "kill", name)
    assert re.fullmatch(like(shown[0], name), p.stderr.strip()), (shown[0], p.stderr)
    for jid in (a, b):
        d.rnx("job", "kill", jid, check=True)
        d.wait(jid)
    name = unique("t")
    ended(d, name)
    c = running(d, name)
    d.rnx("job", "kill", c, check=True)
    d.wait(c)
    p = d.rnx("job", "kill", name)
    assert re.fullmatch(like(shown[1], name), p.stderr.strip()), (shown[1], p.stderr)
