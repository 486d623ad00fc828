"""A hostile local user against the workflow engine (a second uid through setpriv): one
workflow request, however shaped, may neither end the daemon nor hold its loop for a time
that grows faster than the request."""
import json
import subprocess
import threading
import time

from conftest import _API_CLIENT, api_as, setpriv

MALLORY = 4321


def start_as(d, user, method, path, body):
    """api_as, started in the background: the process, its body sent, its answer read by a
    thread of its own (an answer larger than a pipe holds would stop it otherwise);
    answer_of(p) waits for it."""
    p = subprocess.Popen([*setpriv(user), "/usr/bin/python3", "-c", _API_CLIENT, d.sock, method, path,
                          "application/json"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin"})
    p.stdin.write(json.dumps(body).encode())
    p.stdin.close()
    p.stdin = None
    p.got = {}
    p.reader = threading.Thread(target=lambda: p.got.update(zip(("out", "err"), p.communicate())), daemon=True)
    p.reader.start()
    return p


def answer_of(p, timeout=300):
    """(status, answer) of a request start_as started; AssertionError when none came."""
    p.reader.join(timeout)
    assert not p.reader.is_alive(), "no answer in time"
    out, err = p.got["out"], p.got["err"]
    assert p.returncode == 0, f"no answer: {err.decode(errors='replace')[-2000:]}"
    return tuple(json.loads(out))


def worst_wait_while(d, p):
    """The longest another user's GET /v1/version waited while request p ran (seconds)."""
    worst = 0.0
    while p.reader.is_alive():
        t = time.monotonic()
        code, _ = d.api("GET", "/v1/version", timeout=600)
        assert code == 200
        worst = max(worst, time.monotonic() - t)
        time.sleep(0.1)
    return worst


def test_a_long_dependency_chain_is_refused_or_checked_never_a_crash(fresh_daemon):
    # job i requires job i+1: the cycle search walked it 10,000 calls deep on the daemon's
    # stack (~900 bytes a frame: past 8 MiB) and the daemon died of SIGSEGV
    d = fresh_daemon()
    n = 10000
    jobs = [{"name": f"j{i}", "request": {"command": "true"},
             "requires": [{"job": f"j{i + 1}", "status": "COMPLETED"}] if i < n - 1 else []} for i in range(n)]
    p = start_as(d, MALLORY, "POST", "/v1/workflows?dry_run=1", {"name": "chain", "jobs": jobs})
    p.wait(timeout=300)
    assert d.proc.poll() is None, f"joblet died (exit {d.proc.returncode}) checking a 10,000-job chain"
    code, ans = answer_of(p)
    assert code in (200, 429), ans   # checked, or over max_queued_per_user: either, an answer
    code, _ = d.api("GET", "/v1/version")
    assert code == 200


def test_many_requires_items_cost_the_loop_what_they_weigh(fresh_daemon):
    # each requires item looked its job up by a walk over every job's name: 100,000 items in a
    # workflow of 10,000 jobs (4.6 MB, under the request's object bound) held the loop ~25 s;
    # the same workflow without them takes the time of its 10,000 job checks
    d = fresh_daemon()
    n = 10000

    def body(items):
        jobs = [{"name": f"j{i}", "request": {"command": "true"}} for i in range(n)]
        jobs[0]["requires"] = [{"job": f"j{n - 1}", "status": "COMPLETED"}] * items
        return {"name": "wide", "jobs": jobs}

    p = start_as(d, MALLORY, "POST", "/v1/workflows?dry_run=1", body(0))
    base = max(worst_wait_while(d, p), 0.5)
    answer_of(p)
    p = start_as(d, MALLORY, "POST", "/v1/workflows?dry_run=1", body(100000))
    wide = worst_wait_while(d, p)
    code, ans = answer_of(p)
    assert code in (200, 400, 429), ans
    # (the walk was ~25 s here; the items' own weight under the sanitizers, 4.6 MB of JSON, is
    # ~3.5 s: CI run 73's sanitizer pass saw 3.54 s against a bound of 3.5)
    assert wide < 4 * base + 6, f"100,000 requires items held others {wide:.1f}s; without them {base:.1f}s"


def test_canceling_a_workflow_costs_no_more_than_its_jobs_and_items(fresh_daemon):
    # refresh() asked handled() -- a walk over every requires item of the workflow -- for each
    # ended job, at each job's change: a workflow of 1,000 jobs and 60,000 items (2.2 MB),
    # canceled, held the loop for tens of seconds (jobs x jobs x items)
    d = fresh_daemon()
    n, filler = 1000, 60000
    jobs = [{"name": "gate", "request": {"command": "sleep", "args": ["300"]}}]
    jobs += [{"name": f"w{i}", "request": {"command": "true"}, "requires": [{"job": "gate", "status": "COMPLETED"}]}
             for i in range(1, n - 2)]
    jobs.append({"name": "filler", "request": {"command": "true"},
                 "requires": [{"job": "gate", "status": "COMPLETED"}] * filler})
    jobs.append({"name": "handler", "request": {"command": "true"},
                 "requires": [{"job": f"w{i}", "status": "CANCELED"} for i in range(1, n - 2)]})
    code, wf = api_as(d, MALLORY, "POST", "/v1/workflows", {"name": "handled", "jobs": jobs}, timeout=300)
    assert code == 201, wf
    code, _ = d.api("GET", "/v1/version")
    assert code == 200
    p = start_as(d, MALLORY, "POST", f"/v1/workflows/{wf['id']}/cancel", {})
    worst = worst_wait_while(d, p)
    code, ans = answer_of(p)
    assert code == 200, ans
    assert worst < 8, f"canceling one workflow of {n} jobs held another user's request {worst:.1f}s"
