"""GET /v1/history (the console's History page): GPU-hours per user and per GPU, jobs per hour
and queue waits from the jobs; GPU samples kept in the database (schema 9) and there after a
restart; a user's figures are the user's own."""
import os
import time

from conftest import ROOT, api_as

FIX = os.path.join(ROOT, "tests", "fixtures")
UID = 4326


def test_history_figures_and_samples(fresh_daemon):
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n")
    jid = d.rnx("job", "run", "--gpu=2", "sleep", "600", check=True).stdout.split()[-1]
    gpus = sorted(g["index"] for g in d.wait_status(jid, "RUNNING")["gpus"])
    time.sleep(1.1)
    st, h = d.api("GET", "/v1/history?sample=1")
    assert st == 200 and h["keep_days"] == 30 and h["hours"] == 168
    held = {g["index"]: g["gpu_seconds"] for g in h["per_gpu"]}
    assert all(held[i] >= 1.0 for i in gpus) and all(held[i] == 0 for i in held if i not in gpus)
    me = next(u for u in h["per_user"] if u["uid"] == 0)
    assert me["gpu_seconds"] >= 2.0 and me["jobs"] == 1
    assert sum(p["jobs"] for p in h["jobs_per_hour"]) == 1 and len(h["queue_wait"]) == 1
    d.rnx("job", "stop", jid, check=True)
    # a restart writes the minute being gathered: one row per GPU
    d.stop()
    d.start()
    st, h = d.api("GET", "/v1/history")
    assert h["sample_rows"] >= 8
    allocated = [p["allocated_pct"] for p in h["utilization"]]
    assert allocated and max(allocated) > 0     # 2 of 8 simulated GPUs were held: from allocation
    assert h["utilization"][-1]["of"] == "allocation"
    st, e = d.api("GET", "/v1/history?hours=0")
    assert st == 400 and e["error"]["field"] == "hours"
    # another user sees only their own line
    h = api_as(d, UID, "GET", "/v1/history?sample=1")[1]
    assert h["per_user"] == [] and len(h["per_gpu"]) == 8


def test_history_counts_per_user_and_hour_and_the_waits(daemon):
    """The sums themselves: jobs per user (an admin sees every user's, a user only their own),
    jobs per hour of their start, and the mean wait of a job held before it ran."""
    d = daemon
    before = {u["uid"]: u["jobs"] for u in d.api("GET", "/v1/history?hours=1")[1]["per_user"]}
    mine_before = {u["uid"]: u["jobs"] for u in api_as(d, UID, "GET", "/v1/history?hours=1")[1]["per_user"]}
    held = d.submit("true", hold=True)
    ran = [d.submit("true") for _ in range(2)]
    code, theirs = api_as(d, UID, "POST", "/v1/jobs", {"command": "true"})
    assert code == 201, theirs
    time.sleep(1.5)
    assert d.api("POST", f"/v1/jobs/{held}/release")[0] == 200
    for jid in [held, *ran, theirs["id"]]:
        assert d.wait(jid)["status"] == "COMPLETED"
    st, h = d.api("GET", "/v1/history?hours=1")
    users = {u["uid"]: u["jobs"] for u in h["per_user"]}
    assert users.get(0, 0) - before.get(0, 0) == 3 and users.get(UID, 0) - before.get(UID, 0) == 1, (before, users)
    assert sum(p["jobs"] for p in h["jobs_per_hour"]) >= 4
    assert [p["t"] for p in h["jobs_per_hour"]] == sorted(p["t"] for p in h["jobs_per_hour"])
    assert all(p["t"] % 3600000 == 0 for p in h["jobs_per_hour"])
    assert [(q["t"], q["jobs"]) for q in h["queue_wait"]] == [(p["t"], p["jobs"]) for p in h["jobs_per_hour"]]
    # the held job waited 1.5 s: its hour's mean wait is at least 1.5 s / the jobs started then
    hour = d.job(held)
    assert hour["status"] == "COMPLETED"
    assert max(q["mean_s"] * q["jobs"] for q in h["queue_wait"]) >= 1.4
    mine = api_as(d, UID, "GET", "/v1/history?hours=1")[1]["per_user"]
    assert [u["uid"] for u in mine] == [UID] and mine[0]["jobs"] - mine_before.get(UID, 0) == 1, mine


def test_deleted_jobs_stay_in_the_sums_across_a_restart(fresh_daemon):
    """A deleted job (rnx job delete, jobs.keep_ended_s) dropped out of the per-user and per-GPU
    sums: the History page forgot GPU-hours once their jobs were deleted. Its GPU time and its count
    now stay (written in the delete's own transaction: store/db.h db_usage), after a restart too;
    a user's own deleted jobs count in the user's own line."""
    import pytest
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n")
    jid = d.submit("sleep", "1", gpu_count=2)
    assert d.wait(jid)["status"] == "COMPLETED"
    code, theirs = api_as(d, UID, "POST", "/v1/jobs", {"command": "true"})
    assert code == 201, theirs
    assert d.wait(theirs["id"])["status"] == "COMPLETED"

    def sums(h):
        return ({u["uid"]: (u["jobs"], u["gpu_seconds"], u.get("deleted_jobs")) for u in h["per_user"]},
                {g["index"]: g["gpu_seconds"] for g in h["per_gpu"]})
    users0, gpus0 = sums(d.api("GET", "/v1/history")[1])
    assert users0[0][0] == 1 and users0[0][1] >= 2.0 and users0[0][2] == 0, users0
    assert users0[UID][:1] == (1,) and sum(gpus0.values()) == pytest.approx(users0[0][1], abs=0.002), (users0, gpus0)
    assert d.rnx("job", "delete", jid).returncode == 0
    assert api_as(d, UID, "DELETE", f"/v1/jobs/{theirs['id']}")[0] == 200
    assert d.api("GET", f"/v1/jobs/{jid}")[0] == 404

    def same(h):
        users, gpus = sums(h)
        assert users[0][0] == 1 and users[0][2] == 1 and users[0][1] == pytest.approx(users0[0][1], abs=0.002), \
            (users0, users)
        assert users[UID][0] == 1 and users[UID][2] == 1, users
        assert gpus.keys() == gpus0.keys() and all(gpus[i] == pytest.approx(gpus0[i], abs=0.002) for i in gpus), \
            (gpus0, gpus)
    same(d.api("GET", "/v1/history")[1])
    d.stop()
    d.start()
    same(d.api("GET", "/v1/history")[1])
    # a user sees their own line alone, with their deleted job
    mine = api_as(d, UID, "GET", "/v1/history")[1]["per_user"]
    assert [(u["uid"], u["jobs"], u["deleted_jobs"]) for u in mine] == [(UID, 1, 1)], mine
