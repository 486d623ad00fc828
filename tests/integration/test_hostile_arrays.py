"""A hostile local user against job arrays, --after and job control (docs/batch.md, docs/api.md
"Job arrays"): the loop thread's time for a reference to an array's tasks must not grow with how
many tasks the array made before, and a chain of arrays waiting on one another must not make the
daemon recurse once per link. CPU time is compared between two sizes of the same request, with
generous factors; no test has a time limit."""
import os

from conftest import TERMINAL, need_setpriv, rnx_as, submit_array, wait_for


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_of_gets(d, path, times):
    before = cpu_s(d.proc.pid)
    for _ in range(times):
        code, body = d.api("GET", path, timeout=600)
        assert code == 200, body
    return cpu_s(d.proc.pid) - before, body


def test_a_reference_to_tasks_costs_the_same_early_or_late_in_a_big_array(fresh_daemon):
    """GET /v1/jobs/ID_[LIST] of tasks that were passed over (canceled before they were made):
    arrays_task looked for each task's place by walking every task made before it, so 1,000
    tasks near the end of a 100,000-task array cost 1,000 x 100,000 steps on the loop thread
    per request, where the same request near its start cost next to nothing."""
    d = fresh_daemon("limits:\n  max_queued_per_user: 0\n  max_jobs_per_user: 0\n")
    aid = submit_array(d, "0-99999", "true")["id"]
    code, r = d.api("POST", f"/v1/jobs/{aid}/hold")   # (a few tasks may have been made already)
    assert code == 200, r
    # every task but the last canceled before it was made: the array passes over them all
    code, r = d.api("POST", f"/v1/jobs/{aid}_[0-99998]/cancel")
    assert code == 200, r
    code, r = d.api("POST", f"/v1/jobs/{aid}/release")
    assert code == 200, r
    wait_for(lambda: d.api("GET", f"/v1/jobs/{aid}")[1]["status"] in TERMINAL, "the array's last task", timeout=120)
    early, body = cpu_of_gets(d, f"/v1/jobs/{aid}_[1000-1999]", 5)
    assert len(body["tasks"]) == 1000 and body["tasks"][0]["status"] == "CANCELED", body["tasks"][:2]
    late, body = cpu_of_gets(d, f"/v1/jobs/{aid}_[98000-98999]", 5)
    assert len(body["tasks"]) == 1000 and body["tasks"][-1]["status"] == "CANCELED", body["tasks"][-2:]
    print(f"5 x GET of 1,000 tasks: early {early:.2f}s, late {late:.2f}s of daemon CPU")
    assert late <= 4 * max(early, 0.1), (early, late)


def test_a_big_array_makes_one_pass_of_tasks_a_turn(fresh_daemon):
    """Each task the scheduler made asked for another pass of the scheduler (submit_create's
    state_want), so the settle step ran 64 passes of 64 tasks each in one turn of the loop: a
    100,000-task array of `true` made 4,096 tasks per turn and the daemon answered nothing
    else for 10-35 s at a time (every user's requests waited). A pass makes at most 64 tasks
    of an array and its next pass is at the next turn (docs/batch.md)."""
    d = fresh_daemon("limits:\n  max_queued_per_user: 0\n  max_jobs_per_user: 0\n")
    aid = submit_array(d, "0-99999", "true")["id"]
    for _ in range(3):
        code, _v = d.api("GET", "/v1/version", timeout=600)
        assert code == 200
    code, r = d.api("POST", f"/v1/jobs/{aid}/hold", timeout=600)
    assert code == 200, r
    made = d.log().count("submitted by uid")
    assert "work still asked for after 64 rounds" not in d.log(), made
    # 4 requests answered, each at the next turn: a few passes of 64 tasks, never thousands
    assert made < 4096, made


def test_a_long_chain_of_arrays_ends_without_recursing(fresh_daemon):
    """Arrays that wait on one another (--array with --after=the previous array): when the
    first can never go, decide_array canceled the next and called depend_array_changed, which
    decided the next, and so on, one stack frame set per link: 40,000 links (limits raised)
    overflowed joblet's 8 MiB stack (SIGSEGV, and again at every start while the chain was
    undecided). Shown here with a 1 MiB stack and 6,000 links; they are decided in a loop."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    resource.setrlimit(resource.RLIMIT_STACK, (1 << 20, hard))
    try:
        d = fresh_daemon("limits:\n  max_queued_per_user: 0\n  max_jobs_per_user: 0\n")
    finally:
        resource.setrlimit(resource.RLIMIT_STACK, (soft, hard))
    code, head = d.api("POST", "/v1/jobs", {"command": "sleep", "args": ["600"]})
    assert code == 201, head
    prev = head["id"]
    for _ in range(6000):
        code, a = d.api("POST", "/v1/jobs", {"command": "true", "array": "0", "after": [{"job": prev, "state": "ok"}]})
        assert code == 201, a
        prev = a["id"]
    code, r = d.api("POST", f"/v1/jobs/{head['id']}/kill", timeout=600)
    assert code == 200, r
    last = wait_for(lambda: (lambda a: a if a["status"] in TERMINAL else None)(d.api("GET", f"/v1/jobs/{prev}")[1]),
                    "the chain's last array", timeout=120)
    assert last["status"] == "CANCELED", last
    assert d.proc.poll() is None, d.log()[-2000:]


NOBODY = 65534


def test_another_users_array_is_out_of_reach_by_every_reference(fresh_daemon):
    """nobody names root's array by id, prefix, name, ID_T, ID_[LIST] through every command:
    each answers as for a job that does not exist and the array is untouched; nobody's own job
    named like a task of root's array ("secret_1") is still nobody's to reach."""
    need_setpriv()
    d = fresh_daemon()
    a = submit_array(d, "0-3", "sleep", "300", name="secret")
    aid = a["id"]
    code, r = d.api("POST", f"/v1/jobs/{aid}/hold")
    assert code == 200, r
    p = rnx_as(d, NOBODY, "--json", "job", "run", "--name=secret_1", "sleep", "300")
    assert p.returncode == 0, p.stderr
    mine = __import__("json").loads(p.stdout)["id"]
    refs = [aid, aid[:8], "secret", f"{aid}_1", f"{aid[:8]}_[0-2]", "secret_[1-3]", f"{aid}_[0-3]"]
    for ref in refs:
        for cmd in (["job", "status", ref], ["job", "cancel", ref], ["job", "stop", ref], ["job", "kill", ref],
                    ["job", "release", ref], ["job", "hold", ref], ["job", "delete", ref], ["job", "log", ref],
                    ["job", "update", ref, "--priority=5"]):
            p = rnx_as(d, NOBODY, *cmd, timeout=30)
            assert p.returncode != 0, (cmd, p.stdout)
            if not ref.startswith(aid):   # (given the whole id, the answer may say whose it is)
                assert aid not in p.stdout + p.stderr, (cmd, p.stdout, p.stderr)
        p = rnx_as(d, NOBODY, "job", "run", f"--after={ref}", "true", timeout=30)
        assert p.returncode != 0 and "after" in p.stderr, (ref, p.stdout, p.stderr)
    p = rnx_as(d, NOBODY, "job", "wait", aid, timeout=30)
    assert p.returncode != 0, p.stdout
    # nobody's own job answers to its name, though root's array is named "secret"
    p = rnx_as(d, NOBODY, "--json", "job", "status", "secret_1", timeout=30)
    assert p.returncode == 0 and mine in p.stdout, (p.stdout, p.stderr)
    a2 = d.api("GET", f"/v1/jobs/{aid}")[1]
    assert a2["array"]["counts"] == {"RUNNING": 4} and a2["array"]["held"], a2
    d.api("POST", f"/v1/jobs/{mine}/kill")
    d.api("POST", f"/v1/jobs/{aid}/kill")


def test_arrays_canceled_before_any_task_still_count_toward_kept_jobs(fresh_daemon):
    """An array canceled before any task was made kept its row, its ~7 KB in memory and its place
    in every pass of the scheduler and every listing until deleted, yet counted for neither
    limits.max_queued_per_user nor limits.max_jobs_per_user: submit, cancel, repeat, and one user
    held any number of them. Each array the user keeps counts one kept job at least."""
    d = fresh_daemon("limits:\n  max_jobs_per_user: 5\n")
    accepted = 0
    for _ in range(12):
        code, a = d.api("POST", "/v1/jobs", {"command": "/bin/true", "array": "0-1",
                                             "schedule_at": "2030-01-01T00:00:00Z"})
        if code == 429:
            assert "limits.max_jobs_per_user is 5" in a["error"]["message"], a
            break
        assert code == 201, a
        accepted += 1
        code, r = d.api("POST", f"/v1/jobs/{a['id']}/cancel")
        assert code == 200, r
    assert accepted <= 5, accepted
