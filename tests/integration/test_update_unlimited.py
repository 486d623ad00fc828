"""`rnx job update ID --max-runtime=UNLIMITED` (Slurm's `scontrol update TimeLimit=UNLIMITED`)
was refused (`'UNLIMITED' must be a duration ...`), and the API's `"max_runtime_s": null` too: a
waiting or running job's limit could not be taken away. It now is, the shim told at once, the
event saying `max_runtime_s N -> none`; who may is one rule (AUTHZ_RAISE_RUNTIME): raising or
taking away the limit of a job that runs is an admin's, as in Slurm (the scheduler started it,
and backfilled others, by that limit), its owner may lower it, and change a waiting job's."""
from conftest import api_as, rnx_as, submit_array, wait_for

USER = 65534  # nobody: an owner who is not root


def events(d, jid):
    code, j = d.api("GET", f"/v1/jobs/{jid}?detail=1")
    assert code == 200, j
    return [(e["event"], e.get("uid"), e.get("detail") or "") for e in j["detail"]["events"]]


def log(d, jid):
    return d.rnx("job", "log", "--no-follow", jid).stdout


def test_a_running_jobs_limit_taken_away_lets_it_run_past_it(daemon):
    d = daemon
    # it says so a second past its limit, which the limit would not let it reach; the update
    # comes once it has started, before the limit (a machine too slow for that: a longer one)
    for limit in (3, 15, 60):
        jid = d.submit("sh", "-c", f"echo started; sleep {limit + 1}; echo past-the-old-limit; exec sleep 1000",
                       max_runtime_s=limit)
        wait_for(lambda: "started" in log(d, jid), "the job to start")
        p = d.rnx("job", "update", jid, "--max-runtime=UNLIMITED")
        if p.returncode == 0 or "is FAILED" not in p.stderr:
            break
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"updated {jid} (RUNNING)\n", p.stdout
    wait_for(lambda: "past-the-old-limit" in log(d, jid) or d.job(jid)["status"] != "RUNNING",
             "the job past its old limit, or ended by it")
    j = d.job(jid)
    assert j["status"] == "RUNNING" and j["limits"].get("max_runtime_s") is None, j
    assert ("updated", 0, f"by uid 0: max_runtime_s {limit} -> none") in events(d, jid)
    st = d.rnx("job", "status", "--detail", jid, check=True).stdout
    assert f"max_runtime_s {limit} -> none" in st, st
    # taken away again: no change, no event
    n = len(events(d, jid))
    d.rnx("job", "update", jid, "--max-runtime=infinite", check=True)
    assert len(events(d, jid)) == n
    # a limit given back ends it as any: one already past ends it now
    # (a bare number is seconds, said: scontrol's TimeLimit=1 is a minute)
    p = d.rnx("job", "update", jid, "--max-runtime=1", check=True)
    assert "rnx: note: --max-runtime=1 means 1 s" in p.stderr and "--max-runtime=1min" in p.stderr, p.stderr
    assert (d.wait(jid)["end_reason"]) == "time_limit"


def test_the_words_the_api_and_the_refusals(daemon):
    d = daemon
    jid = d.submit("true", max_runtime_s=600, hold=True)
    for word in ("none", "INFINITE"):
        p = d.rnx("job", "update", jid, "--max-runtime=2h", check=True)
        assert p.stderr == "", p.stderr                     # (a unit given: nothing to say)
        d.rnx("job", "update", jid, f"--max-runtime={word}", check=True)
        assert d.job(jid)["limits"].get("max_runtime_s") is None, word
    code, j = d.api("POST", f"/v1/jobs/{jid}/update", {"max_runtime_s": 60})
    assert code == 200 and j["limits"]["max_runtime_s"] == 60, j
    code, j = d.api("POST", f"/v1/jobs/{jid}/update", {"max_runtime_s": None})
    assert code == 200 and j["limits"].get("max_runtime_s") is None, j
    # 0 is a duration (rnx's bare numbers are seconds), refused, naming what takes it away
    p = d.rnx("job", "update", jid, "--max-runtime=0")
    assert p.returncode == 2 and "or UNLIMITED to take the limit away" in p.stderr, p.stderr
    code, e = d.api("POST", f"/v1/jobs/{jid}/update", {"max_runtime_s": 0})
    assert code == 400 and e["error"]["field"] == "max_runtime_s", e
    assert "or null to take the limit away" in e["error"]["message"], e
    # a job told to be signaled before its limit needs one (as at submission)
    sig = d.submit("true", max_runtime_s=600, signal="USR1@60", hold=True)
    code, e = d.api("POST", f"/v1/jobs/{sig}/update", {"max_runtime_s": None})
    assert code == 400 and e["error"]["field"] == "signal", e
    assert d.job(sig)["limits"]["max_runtime_s"] == 600
    for x in (jid, sig):
        d.rnx("job", "cancel", x, check=True)


def test_who_may_raise_or_take_away_a_limit(daemon):
    d = daemon
    # a waiting job: its owner changes it as they like (submitted again, it could have any)
    p = rnx_as(d, USER, "job", "run", "--hold", "--max-runtime=60", "true")
    assert p.returncode == 0, p.stderr
    held = p.stdout.strip().split()[-1]
    p = rnx_as(d, USER, "job", "update", held, "--max-runtime=UNLIMITED")
    assert p.returncode == 0, p.stderr
    # a running one: lowered by its owner, raised or taken away by an admin only
    p = rnx_as(d, USER, "job", "run", "--max-runtime=600", "sleep", "1000")
    assert p.returncode == 0, p.stderr
    jid = p.stdout.strip().split()[-1]
    d.wait_status(jid, "RUNNING")
    for value, word in (("UNLIMITED", "taking away"), ("900", "raising")):
        p = rnx_as(d, USER, "job", "update", jid, f"--max-runtime={value}")
        assert p.returncode == 1, p
        assert (f"{word} the time limit of job {jid[:8]}, which runs (the scheduler started it, and others around "
                "it, by that limit; its owner may lower it) is for root") in p.stderr, p.stderr
        assert d.job(jid)["limits"]["max_runtime_s"] == 600
    p = rnx_as(d, USER, "job", "update", jid, "--max-runtime=500")
    assert p.returncode == 0, p.stderr
    d.rnx("job", "update", jid, "--max-runtime=UNLIMITED", check=True)  # root
    assert d.job(jid)["limits"].get("max_runtime_s") is None
    assert ("updated", 0, "by uid 0: max_runtime_s 500 -> none") in events(d, jid)
    for x in (held, jid):
        d.rnx("job", "stop", x, check=True)


def test_an_arrays_limit_taken_away_with_its_running_tasks(daemon):
    d = daemon
    aid = submit_array(d, "0-3%1", "sleep", "1000", max_runtime_s=600)["id"]
    t0 = d.wait_status(f"{aid[:8]}_0", "RUNNING")["id"]
    # root raises it, then takes it away: the array's request and its running task
    code, _ = d.api("POST", f"/v1/jobs/{aid}/update", {"max_runtime_s": 900})
    assert code == 200
    p = d.rnx("job", "update", aid, "--max-runtime=UNLIMITED")
    assert p.returncode == 0, p.stderr
    assert d.job(aid)["request"].get("max_runtime_s") is None, aid
    assert d.job(t0)["limits"].get("max_runtime_s") is None
    assert ("updated", 0, "by uid 0: max_runtime_s 900 -> none") in events(d, t0)
    d.rnx("job", "stop", aid, check=True)
    # another owner's array with a task running
    code, a = api_post_as(d, USER, {"command": "sleep", "args": ["1000"], "array": "0-3%1", "max_runtime_s": 600})
    t = d.wait_status(f"{a['id'][:8]}_0", "RUNNING")["id"]
    p = rnx_as(d, USER, "job", "update", a["id"], "--max-runtime=UNLIMITED")
    assert p.returncode == 1 and f"taking away the time limit of job {t[:8]}, which runs" in p.stderr, p.stderr
    assert d.job(t)["limits"]["max_runtime_s"] == 600
    assert d.job(a["id"])["request"]["max_runtime_s"] == 600
    p = rnx_as(d, USER, "job", "update", a["id"], "--max-runtime=300")  # lowered: theirs to
    assert p.returncode == 0, p.stderr
    assert d.job(t)["limits"]["max_runtime_s"] == 300
    d.rnx("job", "stop", a["id"], check=True)


def api_post_as(d, user, body):
    code, a = api_as(d, user, "POST", "/v1/jobs", body)
    assert code == 201, a
    return code, a
