"""A hostile user (a uid with no account, through setpriv) against rnx job update's GPU request
(docs/api.md "Job control"): what an update answers must be what the job then has.

Finding (core/job_ctl.c job_ctl_update; the check is submit.c submit_check_change's, an array's too): a waiting job that named its GPUs (gpu_ids, --device
nvidia.com/gpu=0, or -e NVIDIA_VISIBLE_DEVICES=0) updated with gpu_count 0 (rnx job update
--gpu=0, "run it without GPUs") was answered 200, "updated", and logged "gpu_count 1 -> 0"; the
GPU check that follows counts the GPUs named, so the job kept gpu_request.count 1 and GPU 0, and
ran with it. On a100-pcie-4, before the fix: 200 for each of the three ways, count 1 after each.
Now: 400 naming gpu_count and why, and the job as it was."""
from conftest import api_as
from test_hostile_sched import sim

U = 4393


def test_gpu_count_0_on_a_job_naming_its_gpus_is_refused_not_undone(fresh_daemon):
    d = sim(fresh_daemon, "a100-pcie-4", "limits:\n  max_gpus_per_user: 2\n")
    code, gate = api_as(d, U, "POST", "/v1/jobs", {"command": "sleep", "args": ["600"]})
    assert code == 201, gate
    after = [{"job": gate["id"], "state": "ok"}]
    try:
        for how, body in (("gpu_ids", {"gpu_ids": ["0"]}), ("gpu_ids", {"devices": ["nvidia.com/gpu=0"]}),
                          ("gpu_ids", {"env": {"NVIDIA_VISIBLE_DEVICES": "0"}})):
            code, r = api_as(d, U, "POST", "/v1/jobs", {"command": "true", "after": after, **body})
            assert code == 201, (body, r)
            jid = r["id"]
            before = d.job(jid)["gpu_request"]
            code, e = api_as(d, U, "POST", f"/v1/jobs/{jid}/update", {"gpu_count": 0})
            assert code == 400 and e["error"]["field"] == "gpu_count", (body, e)
            msg = e["error"]["message"]
            assert msg.startswith("gpu_count:") and how in msg and "cancel it and submit it again" in msg, msg
            j = d.job(jid)
            assert j["gpu_request"] == before and j["gpu_request"]["count"] == 1, (body, j["gpu_request"])
            # what an update may change stays changeable: the memory asked of the GPU named
            code, r = api_as(d, U, "POST", f"/v1/jobs/{jid}/update", {"gpu_memory_mb": 1000})
            assert code == 200 and d.job(jid)["gpu_request"]["memory_mb"] == 1000, r
            api_as(d, U, "POST", f"/v1/jobs/{jid}/cancel")
        # an array the same (its update took the same path but for this check: 200, and undone)
        code, r = api_as(d, U, "POST", "/v1/jobs", {"command": "true", "after": after, "array": "0-3",
                                                    "gpu_ids": ["0"]})
        assert code == 201, r
        code, e = api_as(d, U, "POST", f"/v1/jobs/{r['id']}/update", {"gpu_count": 0})
        assert code == 400 and e["error"]["field"] == "gpu_count", e
        api_as(d, U, "POST", f"/v1/jobs/{r['id']}/cancel")
        # a job that asked by count: 0 takes its GPUs away, as before
        code, r = api_as(d, U, "POST", "/v1/jobs", {"command": "true", "after": after, "gpu_count": 2})
        assert code == 201, r
        code, r = api_as(d, U, "POST", f"/v1/jobs/{r['id']}/update", {"gpu_count": 0})
        assert code == 200 and not r.get("gpu_request", {}).get("count"), r
        api_as(d, U, "POST", f"/v1/jobs/{r['id']}/cancel")
    finally:
        api_as(d, U, "POST", f"/v1/jobs/{gate['id']}/kill")
    assert d.proc.poll() is None, d.log()[-3000:]
