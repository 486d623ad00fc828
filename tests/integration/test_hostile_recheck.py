"""A check made at submission must still hold when the job (an array's task, a job let go from its
hold) starts, maybe hours later and after joblet was restarted with another configuration: what
the machine's people took away since (isolation.require_gvisor added for the user) is not used."""
import os
import shutil
import time

import pytest

from conftest import api_as, rnx_as

RUNSC = shutil.which("runsc") or ("/usr/bin/runsc" if os.path.exists("/usr/bin/runsc") else None)
needs_runsc = pytest.mark.skipif(RUNSC is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")

NOBODY = 65534
TERMINAL = ("COMPLETED", "FAILED", "STOPPED", "CANCELED")


def host_kernel():
    return open("/proc/version").read().strip()


def restart_with(d, extra, kill9=False):
    """joblet restarted (stopped, or killed with SIGKILL) with extra appended to its configuration."""
    if kill9:
        d.kill9()
    else:
        d.stop()
    with open(d.config, "a") as f:
        f.write(extra)
    d.start()


def ended(d, jid, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        j = d.job(jid)
        if j["status"] in TERMINAL:
            return j
        time.sleep(0.1)
    raise AssertionError(f"job {jid} not ended after {timeout}s: {d.job(jid)}")


@needs_runsc
@pytest.mark.parametrize("kill9", [False, True])
def test_held_job_does_not_run_native_once_require_gvisor_names_its_user(fresh_daemon, kill9):
    # nobody submits a native job held (allowed: require_gvisor names no one); the machine's
    # people then require gVisor for nobody; nobody lets the job go: it must not run natively
    d = fresh_daemon()
    os.chmod(d.dir, 0o755)
    code, job = api_as(d, NOBODY, "POST", "/v1/jobs", {"command": "cat", "args": ["/proc/version"], "hold": True})
    assert code == 201, job
    jid = job["id"]
    restart_with(d, "isolation:\n  require_gvisor: nobody\n", kill9=kill9)
    p = rnx_as(d, NOBODY, "job", "release", jid)
    assert p.returncode == 0, p.stderr
    j = ended(d, jid)
    out = d.output(jid).strip()
    assert out != host_kernel(), f"job {jid} ran natively after require_gvisor named its user: {j}"
    if j["status"] == "FAILED":
        assert "require_gvisor" in (j.get("error") or ""), j


@needs_runsc
def test_array_tasks_made_after_require_gvisor_do_not_run_native(fresh_daemon):
    d = fresh_daemon()
    os.chmod(d.dir, 0o755)
    code, a = api_as(d, NOBODY, "POST", "/v1/jobs",
                     {"command": "cat", "args": ["/proc/version"], "array": "0-1", "hold": True})
    assert code == 201, a
    aid = a["id"]
    restart_with(d, "isolation:\n  require_gvisor: nobody\n")
    p = rnx_as(d, NOBODY, "job", "release", aid)
    assert p.returncode == 0, p.stderr
    ended(d, aid, 90)
    code, lst = d.api("GET", "/v1/jobs?expand=1")
    tasks = [j for j in lst["jobs"] if j.get("kind") != "array" and (j.get("array") or {}).get("id") == aid]
    assert tasks, lst
    for t in tasks:
        assert d.output(t["id"]).strip() != host_kernel(), f"task {t} ran natively after require_gvisor named its user"
