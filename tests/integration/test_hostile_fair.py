"""A hostile local user against the daemon's fair share (no user's share starves another's; no
request makes the daemon hold unbounded memory).

1. Each job kept holds its command, args and env in the daemon's memory and in its database. Every
   variable was bounded (128 KiB) and the body (16 MiB), but not their number: 120 variables of
   128 KiB, 15 MiB a job, were taken; 20 such jobs (scheduled far off, never run) grew the
   daemon's RSS by 330 MiB, and limits.max_jobs_per_user (10,000) of them would be 150 GiB.
   limits.max_request_bytes_per_user bounds what one user's kept jobs' requests hold together
   (an array's tasks not made yet count each): past it, 429 naming the key."""
import json
import os
import time

from conftest import api_as

USER, OTHER = 4391, 4392
MIB = 1 << 20


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(l for l in f if l.startswith("VmRSS:")).split()[1])


def big_request(nvars, **more):
    """A job that never runs (scheduled far off), with nvars variables of 128 KiB."""
    return {"command": "true", "env": {f"PAD{k}": "p" * (128 << 10) for k in range(nvars)},
            "schedule_at": "2036-01-01T00:00:00Z", **more}


def test_a_users_kept_requests_are_bounded_in_bytes(fresh_daemon):
    d = fresh_daemon("limits:\n  max_request_bytes_per_user: 40000000\n")
    before = rss_kb(d.proc.pid)
    ids = []
    for _ in range(2):   # 2 x 15 MiB: within the 40 MB
        st, body = api_as(d, USER, "POST", "/v1/jobs", big_request(120))
        assert st == 201, body
        ids.append(body["id"])
    # the third (45 MiB in all) is refused, naming the limit; so is an array of such tasks
    for req in (big_request(120), big_request(40, array="0-9")):
        st, body = api_as(d, USER, "POST", "/v1/jobs", req)
        assert st == 429 and "limits.max_request_bytes_per_user" in json.dumps(body), (st, body)
    # many small ones still fit; another user has a share of their own
    st, body = api_as(d, USER, "POST", "/v1/jobs", big_request(0, env={"A": "b"}))
    assert st == 201, body
    st, body = api_as(d, OTHER, "POST", "/v1/jobs", big_request(120))
    assert st == 201, body
    # an array's tasks count each, made or not: 4 tasks of 5 MiB fit beside the 15 MiB kept, 5 do not
    for spec, want in (("0-4", 429), ("0-3", 201)):
        st, body = api_as(d, OTHER, "POST", "/v1/jobs", big_request(40, array=spec))
        assert st == want, (spec, st, body)
    # deleting a job gives its bytes back
    st, body = api_as(d, USER, "POST", f"/v1/jobs/{ids[0]}/cancel")
    assert st == 200, body
    st, body = api_as(d, USER, "DELETE", f"/v1/jobs/{ids[0]}")
    assert st == 200, body
    st, body = api_as(d, USER, "POST", "/v1/jobs", big_request(120))
    assert st == 201, body
    # the daemon holds what the budget allows (2 users x 40 MB, and the copies a submission
    # makes on its way), not what the requests asked for
    grown = (rss_kb(d.proc.pid) - before) << 10
    print("rss grew", grown // MIB, "MiB")
    # (under ASan the allocator keeps what was freed in its quarantine: RSS says nothing there)
    if os.environ.get("JOBLET_PASS") != "sanitizers":
        assert grown < 200 * MIB, grown


def test_a_workflows_description_and_source_are_bounded(daemon):
    """A workflow keeps its description and source (the file's path) as long as it is kept, in
    memory and in the database: each is bounded, the refusal names the field, nothing is made."""
    job = [{"name": "a", "request": {"command": "true"}}]
    before = daemon.api("GET", "/v1/workflows")[1]["workflows"]
    code, err = daemon.api("POST", "/v1/workflows", {"name": "w", "description": "d" * (64 << 10 | 1), "jobs": job})
    assert code == 400 and err["error"]["field"] == "description", err
    code, err = daemon.api("POST", "/v1/workflows", {"name": "w", "source": "/" * 4097, "jobs": job})
    assert code == 400 and err["error"]["field"] == "source", err
    assert daemon.api("GET", "/v1/workflows")[1]["workflows"] == before
    code, wf = daemon.api("POST", "/v1/workflows", {"name": "w", "description": "d" * (64 << 10),
                                                    "source": "/" * 4096, "jobs": job})
    assert code == 201, wf


def test_a_listing_of_an_arrays_tasks_is_bounded_in_bytes(daemon):
    """GET /v1/jobs/ID_[LIST] is made in one loop turn, each task that ran with its request: at
    most 1,000 tasks, and none more once their requests pass 16 MiB (`truncated` says so). 20
    tasks of a 1.5 MiB request (what exec takes) were a 30 MiB answer."""
    env = {f"PAD{k}": "p" * ((128 << 10) - 64) for k in range(12)}
    code, a = daemon.api("POST", "/v1/jobs", {"command": "true", "env": env, "array": "0-19"}, timeout=120)
    assert code == 201, a
    code, small = daemon.api("POST", "/v1/jobs", {"command": "true", "array": "0-99", "hold": True})
    assert code == 201, small
    try:
        for _ in range(600):
            if daemon.api("GET", f"/v1/jobs/{a['id']}", timeout=120)[1]["status"] in ("COMPLETED", "FAILED"):
                break
            time.sleep(0.2)
        code, got = daemon.api("GET", f"/v1/jobs/{a['id']}_[0-19]", timeout=120)
        assert code == 200 and got["truncated"] is True, (code, {k: v for k, v in got.items() if k != "tasks"})
        assert 1 <= len(got["tasks"]) <= 12, len(got["tasks"])
        assert all(t["env"] == env and t["status"] == "COMPLETED" for t in got["tasks"])
        # tasks not made yet carry no request: a listing of them is not cut
        code, got = daemon.api("GET", f"/v1/jobs/{small['id']}_[0-99]")
        assert code == 200 and got["truncated"] is False and len(got["tasks"]) == 100, got["truncated"]
    finally:
        for x in (a, small):
            daemon.api("POST", f"/v1/jobs/{x['id']}/cancel")
            daemon.api("DELETE", f"/v1/jobs/{x['id']}")
