"""Review of the session 8ce2cf8..73fe8bb: properties its changes touch.

1. GET /v1/runtimes/NAME (rnx runtime info, any local user) listed the full ids of every user's
   jobs, and since 0cf24fe of every user's arrays, that use the runtime: another user's job ids,
   which the session's wait-reason change (28402d5) keeps from other users. It lists the ids the
   caller may see, and counts the others.
2. The per-user byte budget of kept requests (limits.max_request_bytes_per_user) stays what a
   scan counts through rnx job update and an array's update (the daemon runs at log level debug:
   its indexes are checked against scans, a difference aborts it)."""
import os

import pytest

import busybox_runtime
from conftest import api_as, rnx_as

NOBODY = 65534
OTHER = 4247   # a local user with no role (sees its own jobs only)


@pytest.fixture
def rt_daemon(fresh_daemon):
    if not os.path.exists(busybox_runtime.BUSYBOX):
        pytest.skip("busybox-static is not installed (scripts/install-deps.sh installs it)")

    def make(config=""):
        d = fresh_daemon(config, start=False)
        busybox_runtime.make(os.path.join(d.state, "runtimes"))
        return d.start()
    return make


def test_runtime_info_names_no_other_users_jobs(rt_daemon):
    d = rt_daemon()
    code, a = api_as(d, NOBODY, "POST", "/v1/jobs", {"command": "true", "array": "0-2", "hold": True,
                                                     "runtime": "busybox"})
    assert code == 201, a
    code, j = api_as(d, NOBODY, "POST", "/v1/jobs", {"command": "true", "hold": True, "runtime": "busybox"})
    assert code == 201, j
    # another user: neither id, but that the runtime is in use
    for path in ("/v1/runtimes/busybox", "/v1/runtimes"):
        code, out = api_as(d, OTHER, "GET", path)
        assert code == 200, out
        text = str(out)
        assert a["id"] not in text and j["id"] not in text, (path, out)
        assert a["id"][:8] not in text and j["id"][:8] not in text, (path, out)
    code, info = api_as(d, OTHER, "GET", "/v1/runtimes/busybox")
    assert info["jobs"] == [] and info["jobs_of_others"] == 2, info
    # the owner sees its own, and root every one
    code, info = api_as(d, NOBODY, "GET", "/v1/runtimes/busybox")
    assert code == 200 and sorted(info["jobs"]) == sorted([a["id"], j["id"]]) and info["jobs_of_others"] == 0, info
    code, info = d.api("GET", "/v1/runtimes/busybox")
    assert code == 200 and sorted(info["jobs"]) == sorted([a["id"], j["id"]]) and info["jobs_of_others"] == 0, info
    # rnx runtime info as the other user: the count, no id
    p = rnx_as(d, OTHER, "runtime", "info", "busybox")
    assert p.returncode == 0, p.stderr
    assert "2 of other users" in p.stdout and a["id"][:8] not in p.stdout, p.stdout


def test_request_bytes_counted_through_updates(fresh_daemon):
    d = fresh_daemon("limits:\n  max_request_bytes_per_user: 400000\n")
    env = {"BIG": "x" * 100000}
    code, j = api_as(d, NOBODY, "POST", "/v1/jobs", {"command": "true", "hold": True, "env": env,
                                                     "secret_env": {"TOKEN": "s" * 50000}})
    assert code == 201, j
    code, a = api_as(d, NOBODY, "POST", "/v1/jobs", {"command": "true", "hold": True, "env": env,
                                                     "array": "0-1"})
    assert code == 201, a
    for _ in range(3):
        code, out = api_as(d, NOBODY, "POST", f"/v1/jobs/{j['id']}/update", {"max_runtime_s": 3600 + _})
        assert code == 200, out
        code, out = api_as(d, NOBODY, "POST", f"/v1/jobs/{a['id']}/update", {"array_throttle": 1})
        assert code == 200, out
        code, out = api_as(d, NOBODY, "GET", "/v1/jobs")
        assert code == 200, out
    # 350 KB kept: one more of 100 KB is over 400,000
    code, out = api_as(d, NOBODY, "POST", "/v1/jobs", {"command": "true", "hold": True, "env": env})
    assert code == 429 and "max_request_bytes_per_user" in out["error"]["message"], out
    # the job and the array deleted: room again
    for x in (j, a):
        code, out = api_as(d, NOBODY, "POST", f"/v1/jobs/{x['id']}/cancel")
        assert code == 200, out
        d.wait(x["id"])
        code, out = api_as(d, NOBODY, "DELETE", f"/v1/jobs/{x['id']}")
        assert code == 200, out
    code, out = api_as(d, NOBODY, "POST", "/v1/jobs", {"command": "true", "hold": True, "env": env})
    assert code == 201, out
    assert d.proc.poll() is None
