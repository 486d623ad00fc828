"""Who sees which job holds a GPU: everyone sees that a GPU is held (its state, an MPS-shared
GPU's jobs and memory, counted), but another user's job id only those who see that user's jobs
(root, and maintainers: AUTHZ_OTHERS_JOBS, the rule of every list; docs/gpu.md "Who sees what").
Asked of GET /v1/gpus, /v1/gpus/N, /v1/monitor, the event stream's "gpu" events, and rnx gpu
list|show, on a simulated machine (gpu.fixture), by uids with no account (setpriv)."""
import json
import os
import time

from conftest import ROOT, api_as, rnx_as
from sse import Stream

FIX = os.path.join(ROOT, "tests", "fixtures")
OWNER, OTHER = 4331, 4332


def gpu_events(s, until, index):
    """The "gpu" events of GPU index that stream s gets within `until` seconds."""
    out, deadline = [], time.time() + until
    while time.time() < deadline:
        try:
            kind, data, _ = s.next(timeout=max(0.1, deadline - time.time()))
        except (TimeoutError, OSError):
            break
        if kind == "gpu" and data.get("index") == index:
            out.append(data)
    return out


def test_another_users_gpu_job_is_held_not_named(fresh_daemon):
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n")
    theirs_s, others_s, roots_s = Stream(d.sock, uid=OWNER), Stream(d.sock, uid=OTHER), Stream(d.sock)
    p = rnx_as(d, OWNER, "job", "run", "--gpu=1", "sleep", "60")
    assert p.returncode == 0, p.stderr
    jid = p.stdout.strip()
    g = d.wait_status(jid, "RUNNING")["gpus"][0]["index"]

    # root, and the owner, see the id as before
    for who in (None, OWNER):
        code, a = d.api("GET", "/v1/gpus") if who is None else api_as(d, who, "GET", "/v1/gpus")
        assert code == 200 and a["gpus"][g]["job"] == jid and "another_users_job" not in a["gpus"][g], a["gpus"][g]
    # another user: held, by another user's job, whose id is nowhere in any answer
    code, a = api_as(d, OTHER, "GET", "/v1/gpus")
    assert code == 200, a
    assert a["gpus"][g]["state"] == "allocated" and a["gpus"][g]["job"] is None
    assert a["gpus"][g]["another_users_job"] is True
    for path in ("/v1/gpus", f"/v1/gpus/{g}", "/v1/monitor"):
        code, a = api_as(d, OTHER, "GET", path)
        assert code == 200 and jid not in json.dumps(a) and jid[:8] not in json.dumps(a), (path, a)
    code, m = api_as(d, OTHER, "GET", "/v1/monitor")
    assert m["gpus"][g]["jobs"] == [] and m["gpus"][g]["other_users_jobs"] == 1, m["gpus"][g]
    code, m = api_as(d, OWNER, "GET", "/v1/monitor")
    assert m["gpus"][g]["jobs"] == [jid] and "other_users_jobs" not in m["gpus"][g], m["gpus"][g]

    # rnx says "another user's job" where the owner sees the id
    lst = rnx_as(d, OTHER, "gpu", "list")
    assert lst.returncode == 0 and "another user's job" in lst.stdout and jid[:8] not in lst.stdout, lst.stdout
    show = rnx_as(d, OTHER, "gpu", "show", str(g))
    assert show.returncode == 0, show.stderr
    assert "another user's job" in show.stdout and jid[:8] not in show.stdout, show.stdout
    mine = rnx_as(d, OWNER, "gpu", "show", str(g))
    assert jid in mine.stdout and "another user's job" not in mine.stdout, mine.stdout
    # rnx monitor status counts it (it showed "-", a GPU that looked free)
    mon = rnx_as(d, OTHER, "monitor", "status")
    assert mon.returncode == 0 and "1 other user's job" in mon.stdout and jid[:8] not in mon.stdout, mon.stdout

    # the event stream: the owner and root get the id, the other user that it is another user's
    seen = {who: gpu_events(s, 3, g) for who, s in (("owner", theirs_s), ("other", others_s), ("root", roots_s))}
    assert any(e.get("job") == jid for e in seen["owner"]), seen
    assert any(e.get("job") == jid for e in seen["root"]), seen
    assert seen["other"] and all(e.get("job") is None for e in seen["other"]), seen
    assert any(e.get("another_users_job") for e in seen["other"]), seen
    # each stream got the change once, not both versions of it
    assert not any(e.get("another_users_job") for e in seen["owner"] + seen["root"]), seen
    d.rnx("job", "stop", jid, check=True)
    d.wait(jid)
    for s in (theirs_s, others_s, roots_s):
        s.s.close()
