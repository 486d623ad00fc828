"""Slurm's '?' dependency list, any one of (`--dependency=afterok:A?afterok:B`, `--after=A:ok?B:ok`),
against the real daemon: the job goes as soon as one of the jobs has gone as asked, while the others
still run; it is CANCELED only once none of them can; ',' and '?' are never mixed; a job made to
wait for any one of by `rnx job update` behaves the same; it outlives kill -9 of joblet. (The text's
forms and the rules between fields: tests/unit/test_jobreq.c; the rule: depend_rule_any.)"""
import json
import os

from conftest import wait_for

# A job that runs until the test drops a file in its /work: the test decides when it ends, and how.
GATE = "while [ ! -e /work/go ]; do sleep 0.02; done; exit $(cat /work/go)"


def run(d, *args):
    return d.rnx("job", "run", *args, check=True).stdout.strip()


def gated(d):
    jid = run(d, "sh", "-c", GATE)
    d.wait_status(jid, "RUNNING")
    return jid


def end(d, jid, code=0):
    with open(os.path.join(d.work(jid), "go"), "w") as f:
        f.write(str(code))
    return d.wait(jid)


def test_the_first_to_go_lets_it_go(daemon):
    """C waits for any one of A and B ending COMPLETED: PENDING while both run, its wait reason and
    status say "any one of"; B completes and C runs at once, A still running."""
    d = daemon
    a, b = gated(d), gated(d)
    c = run(d, f"--dependency=afterok:{a}?afterok:{b}", "true")
    j = d.job(c)
    assert j["status"] == "PENDING" and j["after_any"] is True, j
    assert j["wait_reason"].startswith(f"waiting for any one of job {a[:8]} to end COMPLETED (it is RUNNING), "
                                       f"job {b[:8]}"), j["wait_reason"]
    p = d.rnx("job", "status", c, check=True)
    assert f"any one of: {a[:8]} ok (RUNNING) or {b[:8]} ok (RUNNING)" in p.stdout, p.stdout
    end(d, b)
    assert d.wait(c)["status"] == "COMPLETED"
    assert d.job(a)["status"] == "RUNNING"
    released = [detail for ev, detail in d.events(c) if ev == "released"]
    assert released and f"one of the jobs it waited for went as it needs: job {b[:8]} did end COMPLETED" in \
        released[0], d.events(c)
    end(d, a)


def test_it_is_canceled_only_once_none_can(daemon):
    """A fails: C still waits for B. B fails too: C is CANCELED (end reason dependency), naming both."""
    d = daemon
    a, b = gated(d), gated(d)
    c = run(d, f"--after={a}:ok?{b}:ok", "true")
    end(d, a, 3)
    j = d.job(c)
    assert j["status"] == "PENDING", j
    end(d, b, 4)
    j = d.wait(c)
    assert j["status"] == "CANCELED" and j["end_reason"] == "dependency", j
    assert j["error"] == (f"needed one of job {a[:8]} to end COMPLETED (it ended FAILED), job {b[:8]} to end "
                          "COMPLETED (it ended FAILED); none can any more"), j["error"]


def test_an_array_after_any_one_of(daemon):
    """--array with a '?' list: no task is made until one of the jobs went as asked (here notok: it
    failed)."""
    d = daemon
    a, b = gated(d), gated(d)
    arr = run(d, "--array=0-2", f"--after={a}:notok?{b}:ok", "true")
    assert d.api("GET", f"/v1/jobs/{arr}")[1]["array"]["made"] == 0
    end(d, a, 1)
    wait_for(lambda: d.api("GET", f"/v1/jobs/{arr}")[1]["array"]["counts"] == {"COMPLETED": 3},
             "the array's tasks to run")
    end(d, b)


def test_mixed_lists_are_refused(daemon):
    d = daemon
    a = gated(d)
    for flags, why in [([f"--after={a}?{a}:ok,{a}"], "',' (all of them) and '?' (any one of them) cannot be mixed"),
                       ([f"--after={a}?{a}", f"--after={a}"], "a '?' list (any one of) is the job's only dependency"),
                       ([f"--after={a}:corr?{a}"], "task by task (corr) cannot be one of a '?' list"),
                       (["--name=x", f"--dependency=singleton?afterok:{a}"], "singleton cannot be one of a '?' list")]:
        p = d.rnx("job", "run", *flags, "true")
        assert p.returncode == 2 and why in p.stderr, (flags, p.stderr)
    code, r = d.api("POST", "/v1/jobs", {"command": "true", "after_any": True})
    assert code == 400 and r["error"]["field"] == "after_any", r
    end(d, a)


def test_update_to_any_one_of_and_back(daemon):
    """A job waiting for A (all of one) is made to wait for any one of A and B: B completes and it
    runs. Another made to wait for any one of is given none: it runs at once, after_any gone."""
    d = daemon
    a, b = gated(d), gated(d)
    c = run(d, f"--after={a}:ok", "true")
    d.rnx("job", "update", c, f"--after={a}:ok?{b}:ok", check=True)
    j = d.job(c)
    assert j["after_any"] is True and j["status"] == "PENDING", j
    assert any(ev == "updated" and "after_any false -> true" in detail for ev, detail in d.events(c)), d.events(c)
    end(d, b)
    assert d.wait(c)["status"] == "COMPLETED"
    e = run(d, f"--after={a}:ok?{b}:notok", "true")
    assert d.job(e)["status"] == "PENDING"
    d.rnx("job", "update", e, "--after=none", check=True)
    j = d.wait(e)
    assert j["status"] == "COMPLETED" and j["after_any"] is False and j["after"] == [], j
    end(d, a)


def test_any_one_of_survives_kill9(fresh_daemon):
    """kill -9 of joblet while C waits for any one of A and B: after the restart C still waits, and
    goes when one of them completes."""
    d = fresh_daemon()
    a, b = gated(d), gated(d)
    c = run(d, f"--dependency=afterok:{a}?afterok:{b}", "true")
    d.kill9()
    d.start()
    j = d.job(c)
    assert j["status"] == "PENDING" and j["after_any"] is True, j
    end(d, a)
    assert d.wait(c)["status"] == "COMPLETED"
    end(d, b)
    assert json.loads(d.rnx("--json", "job", "status", c, check=True).stdout)["after_any"] is True
