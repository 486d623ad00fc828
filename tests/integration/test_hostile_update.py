"""A hostile user against the lookups by index (common/idindex.c), the scheduler's list of open
arrays (core/arrays.c arrays_open) and rnx job update ARRAY (docs/batch.md, docs/api.md): a
reference must name what the old scan named (full id, then a name exactly one visible object
has, then a unique id prefix; another user's objects invisible but for "full id is another
user's"), an array must never fall off the scheduler's list while it has tasks to make (the
daemon runs at log level debug, where a list that differs from a scan aborts it), and an
array's update must be refused with the field named, for the right caller, and kept across
kill -9.

One daemon for the module; the tests that kill it have their own."""
import json
import os
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import BUILD

TERMINAL = {"COMPLETED", "FAILED", "STOPPED", "CANCELED"}
LIMITS = "limits:\n  max_queued_per_user: 200000\n  max_jobs_per_user: 200000\n"
UID = 4322  # a user who is not root (no account needed: joblet reads the peer's uid)
GATE = "while [ ! -e /work/go ]; do sleep 0.02; done"


@pytest.fixture(scope="module")
def d():
    from conftest import Daemon, need_root
    need_root()
    dm = Daemon(LIMITS).start()
    yield dm
    dm.cleanup()


def wait_for(pred, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"{what}: not after {timeout}s")


def alive(d):
    assert d.proc.poll() is None, "joblet died:\n" + d.log()[-4000:]


def submit_array(d, spec, command, *args, **fields):
    code, a = d.api("POST", "/v1/jobs", {"command": command, "args": list(args), "array": spec, **fields})
    assert code == 201, a
    return a["id"]


def array(d, ref):
    code, a = d.api("GET", f"/v1/jobs/{ref}")
    assert code == 200, a
    return a


def counts(d, aid):
    return array(d, aid)["array"]["counts"]


def tasks_of(d, aid):
    code, lst = d.api("GET", "/v1/jobs?expand=1")
    assert code == 200
    return [j for j in lst["jobs"] if j.get("kind") != "array" and (j.get("array") or {}).get("id") == aid]


def task(d, aid, t):
    return next((j for j in tasks_of(d, aid) if j["array"]["task"] == t), None)


def api_as(d, uid, method, path, body=None):
    """One request over the socket as uid (the daemon reads the peer's credentials)."""
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is not installed")
    prog = ("import http.client, socket, json, sys\n"
            "class C(http.client.HTTPConnection):\n"
            "    def connect(self):\n"
            "        self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(sys.argv[1])\n"
            "c = C('localhost', timeout=30)\n"
            "b = sys.argv[4]\n"
            "c.request(sys.argv[2], sys.argv[3], body=b or None, headers={'Content-Type': 'application/json'} if b else {})\n"
            "r = c.getresponse(); raw = r.read()\n"
            "print(json.dumps([r.status, json.loads(raw) if raw else None]))\n")
    p = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "/usr/bin/python3", "-c",
                        prog, d.sock, method, path, json.dumps(body) if body is not None else ""],
                       capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    return tuple(json.loads(p.stdout))


def rnx_as(d, uid, *args):
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                           os.path.join(BUILD, "rnx"), *args], capture_output=True, text=True, timeout=60, env=env)


def end_all(d, *ids):
    for i in ids:
        d.api("POST", f"/v1/jobs/{i}/kill")
    for i in ids:
        wait_for(lambda: d.api("GET", f"/v1/jobs/{i}")[1]["status"] in TERMINAL, f"{i} ends")


# ---- array_throttle: values ---------------------------------------------------------------

def test_array_throttle_values_are_refused_naming_array_throttle(d):
    aid = submit_array(d, "0-3", "sleep", "60", max_runtime_s=120)
    d.api("POST", f"/v1/jobs/{aid}/hold")
    try:
        bad = [4000001, 4000002, -1, -2**63, 2.0, 2.5, "3", None, True, {"n": 3}, [3]]
        for v in bad:
            code, e = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": v})
            assert code == 400, (v, e)
            assert e["error"]["field"] == "array_throttle", (v, e)
            msg = e["error"]["message"]
            assert msg.startswith("array_throttle:") and "from 1 to 4000000" in msg and "0 for no limit" in msg, (v, e)
        assert array(d, aid)["array"]["throttle"] == 0  # nothing changed by a refusal
        # the largest that is accepted is what a submission's %N accepts
        code, r = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": 4000000})
        assert code == 200 and r["array"]["array"]["throttle"] == 4000000, r
        p = d.rnx("job", "update", aid, "--throttle=4000001")
        assert p.returncode == 2 and "--throttle: '4000001'" in p.stderr and "4000000" in p.stderr, p.stderr
        # a refusal of another field names it, and leaves the throttle as it was
        code, e = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": 2, "max_runtime_s": -5})
        assert code == 400 and e["error"]["field"] == "max_runtime_s", e
        code, e = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": 2, "gpu_count": 10000})
        assert code == 400 and e["error"]["field"] == "gpu_count", e
        assert array(d, aid)["array"]["throttle"] == 4000000
        # 0 takes the limit away; the same value again changes nothing (acted 0)
        code, r = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": 0})
        assert code == 200 and r["array"]["array"]["throttle"] == 0 and r["array"]["request"]["array"] == "0-3", r
        code, r = d.api("POST", f"/v1/jobs/{aid}/update", {"array_throttle": 0})
        assert code == 200 and r["acted"] == 0, r
    finally:
        d.api("POST", f"/v1/jobs/{aid}/cancel")
    alive(d)
