"""Edges of the batch features found by a hostile review (docs/batch.md): an array's task named
before it is made (`rnx job wait ID_T`, `--after=ID_T`), a task updated by its own id, and
another user's array out of reach by a task reference exactly as by any other."""
import json
import os
import subprocess

import pytest

from conftest import BUILD, rnx_as, wait_for

UID = 4331


def run(d, *args):
    return d.rnx("job", "run", *args, check=True).stdout.strip()


def waiting(d, *refs):
    """rnx job wait REF... started in the background."""
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock,
           **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}}
    return subprocess.Popen([os.path.join(BUILD, "rnx"), "job", "wait", *refs], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def waited_past_gate(d, gate, ref, what):
    """rnx job wait REF started while the gate runs, then the gate stopped: (exit status, stdout,
    stderr) once the wait ended (what: the tasks it ends with, for the message)."""
    w = waiting(d, ref)
    try:
        d.rnx("job", "stop", gate, check=True)
        wait_for(lambda: w.poll() is not None, f"rnx job wait {ref} to end once {what} ended")
        out, err = w.communicate()
        return w.returncode, out, err
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()


def gated_array(d, spec, *command):
    """An array whose tasks wait for a gate job (--after=GATE): none is made until the gate is
    stopped. (gate id, array id)."""
    gate = run(d, "sleep", "1000")
    d.wait_status(gate, "RUNNING")
    return gate, run(d, f"--array={spec}", f"--after={gate}", *command)


def test_wait_for_a_task_not_made_yet_ends_with_its_job(daemon):
    """rnx job wait ID_T for a task not made yet followed ID_T, a name no event carries: it
    never ended, though the task's job did."""
    d = daemon
    gate, aid = gated_array(d, "0-1%1", "sh", "-c", "exit $((JOBLET_ARRAY_TASK_ID + 2))")
    ref = aid[:8] + "_1"
    assert d.api("GET", f"/v1/jobs/{ref}")[1]["made"] is False
    rc, out, err = waited_past_gate(d, gate, ref, "task 1")
    assert rc == 3, (rc, out, err)
    task = d.api("GET", f"/v1/jobs/{ref}")[1]
    assert task["status"] == "FAILED" and out.split() == [ref, "FAILED", "exit", "3"], (out, task)


@pytest.mark.parametrize("canceled", ["array", "task"])
def test_wait_for_a_task_canceled_before_it_was_made(daemon, canceled):
    """rnx job wait ID_1 of a task not made yet ends once it is canceled (CANCELED, 1): with its
    whole array, or alone while the array still waits (the code review's finding: the array's
    status did not change, so no event told rnx, which waited for the whole array)."""
    d = daemon
    gate, aid = gated_array(d, "0-3", "true")
    ref = aid[:8] + "_1"
    w = waiting(d, ref)
    try:
        d.rnx("job", "cancel", aid if canceled == "array" else ref, check=True)
        wait_for(lambda: w.poll() is not None, f"rnx job wait {ref} to end once the {canceled} was canceled")
        out, err = w.communicate()
        assert w.returncode == 1 and out.split() == [ref, "CANCELED"], (w.returncode, out, err)
        if canceled == "task":
            assert d.api("GET", f"/v1/jobs/{aid}")[1]["status"] == "PENDING"   # the array still waits
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
        d.rnx("job", "stop", gate)
        d.rnx("job", "cancel", aid)


def test_wait_for_several_tasks_not_made_yet_ends_with_theirs(daemon):
    """rnx job wait ID_[LIST] exited 125 without a word; then it named the tasks to give instead
    (ID_1 ID_2); now it waits for each task of the list (test_arrays.py), here tasks not made yet
    when the wait begins: it ends once both have ended, with the highest of their statuses."""
    d = daemon
    gate, aid = gated_array(d, "0-3", "sh", "-c", "exit $JOBLET_ARRAY_TASK_ID")
    ref = f"{aid[:8]}_[1-2]"
    rc, out, err = waited_past_gate(d, gate, ref, "tasks 1 and 2")
    assert rc == 2, (rc, out, err)
    assert sorted(ln.split()[1:] for ln in out.splitlines()) == [["FAILED", "exit", "1"], ["FAILED", "exit", "2"]], out


def test_update_of_a_task_is_reported_as_the_task(daemon):
    """rnx job update ID_T of a made task printed `updated array ... (?)`: the task's job, which
    names its array, was read as an array's answer."""
    d = daemon
    aid = run(d, "--array=0-1", "sleep", "1000")
    wait_for(lambda: d.api("GET", f"/v1/jobs/{aid[:8]}_0")[1].get("status") == "RUNNING", "task 0 to run")
    tid = d.api("GET", f"/v1/jobs/{aid[:8]}_0")[1]["id"]
    p = d.rnx("job", "update", f"{aid[:8]}_0", "--max-runtime=2h", check=True)
    assert p.stdout.strip() == f"updated {tid} (RUNNING)", p.stdout
    assert d.job(tid)["limits"]["max_runtime_s"] == 7200
    p = d.rnx("job", "update", aid, "--max-runtime=3h", check=True)
    assert p.stdout.startswith(f"updated array {aid} ({aid[:8]}_[0-1])"), p.stdout
    d.rnx("job", "stop", aid, check=True)


def test_after_a_task_of_an_array(daemon):
    """--after=ID_T (Slurm's afterok:123_7) was refused as `no job 'ID_T' among the jobs you may
    see`, though rnx job status ID_T shows it: a made task is its job; one not made, several, or
    one the array does not have are refused saying so; another user's array's task is refused
    exactly as a missing one."""
    d = daemon
    aid = run(d, "--array=0-2%1", "--name=edges-sweep", "sh", "-c", "exit $JOBLET_ARRAY_TASK_ID")
    wait_for(lambda: "made" not in d.api("GET", f"/v1/jobs/{aid[:8]}_0")[1], "task 0 to be made (its job)")
    t0 = d.api("GET", f"/v1/jobs/{aid[:8]}_0")[1]["id"]
    dep = run(d, f"--after={aid[:8]}_0:ok", "true")
    assert d.job(dep)["after"][0]["job"] == t0, d.job(dep)["after"]
    assert d.wait(dep)["status"] == "COMPLETED"
    dep2 = run(d, "--dependency=afterok:edges-sweep_0", "true")
    assert d.job(dep2)["after"][0]["job"] == t0
    d.wait(dep2)
    for ref, words in ((f"{aid[:8]}_[0-1]", "names several tasks"), (f"{aid[:8]}_7", "has no task 7")):
        p = d.rnx("job", "run", f"--after={ref}", "true")
        assert p.returncode != 0 and "--after:" in p.stderr and words in p.stderr, p.stderr
    d.wait(aid)
    theirs = rnx_as(d, UID, "job", "run", f"--after={aid[:8]}_0", "true")
    missing = rnx_as(d, UID, "job", "run", "--after=0123abcd_0", "true")
    assert theirs.returncode == missing.returncode != 0, (theirs.stderr, missing.stderr)
    assert theirs.stderr.replace(f"{aid[:8]}_0", "X") == missing.stderr.replace("0123abcd_0", "X"), \
        (theirs.stderr, missing.stderr)


def test_after_a_task_not_made_yet_is_refused_saying_so(daemon):
    d = daemon
    gate, aid = gated_array(d, "0-1", "true")
    p = d.rnx("job", "run", f"--after={aid[:8]}_1", "true")
    assert p.returncode != 0 and "task 1 of array" in p.stderr and "has not started yet" in p.stderr, p.stderr
    assert "rnx job hold" not in p.stderr, p.stderr         # (a waiting array's tasks are not held one by one)
    d.rnx("job", "cancel", aid, check=True)
    d.rnx("job", "stop", gate, check=True)
    # one that could be held is told so: held, the task is a job, and a job may wait on it (a
    # Slurm user's afterok:123_4 on a task still pending)
    aid = run(d, "--array=0-1%1", "sleep", "1000")
    p = d.rnx("job", "run", f"--after={aid[:8]}_1:ok", "true")
    assert p.returncode != 0 and f"or once held: rnx job hold {aid[:8]}_1, then release it" in p.stderr, p.stderr
    d.rnx("job", "hold", f"{aid[:8]}_1", check=True)
    waiter = run(d, f"--after={aid[:8]}_1:ok", "true")
    assert d.job(waiter)["status"] == "PENDING"
    d.rnx("job", "cancel", waiter, check=True)
    d.rnx("job", "cancel", f"{aid[:8]}_1", check=True)
    d.rnx("job", "stop", f"{aid[:8]}_0", check=True)


def test_a_users_job_named_as_anothers_short_id_does_not_take_roots_command(daemon):
    """User UID names a job after the 8 characters rnx job list shows of root's (or anyone's)
    job: root's `rnx job cancel SHORT`, meant for that job, cancels the decoy instead."""
    d = daemon
    target = run(d, "--schedule=2027-06-01T00:00:00Z", "true")
    p = rnx_as(d, UID, "job", "run", f"--name={target[:8]}", "--schedule=2027-06-01T00:00:00Z", "true")
    assert p.returncode == 0, p.stderr
    decoy = p.stdout.strip()
    try:
        p = d.rnx("job", "cancel", target[:8])
        assert d.job(decoy)["status"] == "SCHEDULED", "root's cancel of a short id took another user's decoy"
        assert d.job(target)["status"] == "SCHEDULED", p.stdout
        assert p.returncode != 0 and f"'{target[:8]}' is the name of job {decoy[:8]} (SCHEDULED) and the start of " \
            f"the id of {target[:8]} (SCHEDULED)" in p.stderr, p.stderr
        # the user's own name still names the user's job
        p = rnx_as(d, UID, "--json", "job", "status", target[:8])
        assert p.returncode == 0 and decoy in p.stdout, p.stderr
    finally:
        d.rnx("job", "cancel", target, decoy)


def test_a_users_array_named_as_the_start_of_anothers_job_name_does_not_take_roots_command(daemon):
    """Root's job is named train-<x>_3; user UID submits an array named train-<x>, so that
    train-<x>_3 also reads as its task 3. Root's `rnx job cancel train-<x>_3` is ambiguous (409,
    both named) instead of canceling the user's task; the user's own reference still names its task,
    and root's own array and job of such names go to the array's task, as before."""
    d = daemon
    stem = f"train-{os.urandom(3).hex()}"
    mine = run(d, f"--name={stem}_3", "--schedule=2027-06-01T00:00:00Z", "true")
    p = rnx_as(d, UID, "job", "run", f"--name={stem}", "--array=0-5", "--schedule=2027-06-01T00:00:00Z", "true")
    assert p.returncode == 0, p.stderr
    theirs = p.stdout.strip()
    try:
        p = d.rnx("job", "cancel", f"{stem}_3")
        assert p.returncode != 0 and f"'{stem}_3' names task(s) of array {theirs[:8]} and job {mine[:8]} (another " \
            "owner's)" in p.stderr, p.stderr
        assert d.job(mine)["status"] == "SCHEDULED"
        p = d.rnx("job", "run", f"--after={stem}_3", "true")
        assert p.returncode != 0 and f"'{stem}_3' names task(s) of array {theirs[:8]} and job {mine[:8]} (another " \
            "owner's)" in p.stderr, p.stderr

        def canceled(aid):
            return d.api("GET", f"/v1/jobs/{aid}")[1]["array"]["counts"].get("CANCELED", 0)
        assert canceled(theirs) == 0
        p = rnx_as(d, UID, "job", "cancel", f"{stem}_3")
        assert p.returncode == 0, p.stderr
        assert canceled(theirs) == 1
        # one owner's array and job: the array's task, as before
        own = run(d, f"--name={stem}-own", "--array=0-5", "--schedule=2027-06-01T00:00:00Z", "true")
        other = run(d, f"--name={stem}-own_3", "--schedule=2027-06-01T00:00:00Z", "true")
        d.rnx("job", "cancel", f"{stem}-own_3", check=True)
        assert canceled(own) == 1
        assert d.job(other)["status"] == "SCHEDULED"
        d.rnx("job", "cancel", own, other)
    finally:
        d.rnx("job", "cancel", mine, theirs)


def test_requeue_of_several_tasks_acts_on_those_named(daemon):
    """rnx job requeue ID_[0-1] was told `ID is a job array (N tasks): name one task`, though it
    had named tasks; it acts on the tasks named that run now, as scontrol requeue does on an
    array's (docs/batch.md), and leaves the others."""
    d = daemon
    aid = run(d, "--array=0-3", "sleep", "1000")
    wait_for(lambda: "made" not in d.api("GET", f"/v1/jobs/{aid[:8]}_1")[1], "task 1 to be made")
    for t in (0, 1):
        wait_for(lambda: d.api("GET", f"/v1/jobs/{aid[:8]}_{t}")[1].get("status") == "RUNNING", f"task {t} to run")
    p = d.rnx("--json", "job", "requeue", f"{aid[:8]}_[0-1]")
    assert p.returncode == 0 and json.loads(p.stdout)["acted"] >= 1, (p.stdout, p.stderr)
    for t in (0, 1):
        wait_for(lambda: d.api("GET", f"/v1/jobs/{aid[:8]}_{t}")[1].get("preemptions") == 1, f"task {t} requeued")
    for t in (2, 3):
        assert d.api("GET", f"/v1/jobs/{aid[:8]}_{t}")[1].get("preemptions", 0) == 0
    d.rnx("job", "stop", aid, check=True)


def test_a_refusal_of_a_task_names_the_task_not_only_its_job(daemon):
    """rnx job cancel sweep_0 of a running task was answered "job 9d3cb8c0-... is RUNNING": a job
    id its owner never saw, and of several tasks refused, not which one. A task is named as its
    owner knows it, then its job."""
    d = daemon
    aid = run(d, "--array=0-1", "--name=said-task", "sleep", "1000")
    tid = wait_for(lambda: (d.api("GET", f"/v1/jobs/{aid}_0")[1].get("status") == "RUNNING"
                            and d.api("GET", f"/v1/jobs/{aid}_0")[1]["id"]), "task 0 running")
    p = d.rnx("job", "cancel", "said-task_0")
    assert p.returncode != 0 and \
        f"task 0 of array {aid[:8]} (job {tid}) is RUNNING; only a pending, scheduled" in p.stderr, p.stderr
    p = d.rnx("job", "cancel", tid)                          # (by its job's id: the same words)
    assert f"task 0 of array {aid[:8]} (job {tid}) is RUNNING" in p.stderr, p.stderr
    plain = run(d, "sleep", "1000")
    d.wait_status(plain, "RUNNING")
    p = d.rnx("job", "cancel", plain)
    assert f"job {plain} is RUNNING; only" in p.stderr, p.stderr   # a job of its own: as before
    d.rnx("job", "stop", aid, check=True)
    d.rnx("job", "stop", plain, check=True)
