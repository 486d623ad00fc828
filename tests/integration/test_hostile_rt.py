"""Hostile users against runtimes and rnx job exec, as local users of a machine whose one root
joblet serves everyone (docs/runtimes.md, docs/api.md "Interactive streams: exec").

Each test asserts a property; those that failed before their fix:

1. A runtime was removed (or replaced) while a job array whose tasks were not made yet named it:
   the "in use" check counted made jobs only, and an array's tasks become jobs when they start
   (arrays.h), so a held or throttled array's tasks, checked at submission, then failed at their
   start. Remove and replace count such arrays now, as a volume's remove does.
2. runtimes.dir was made 0755: set outside the state directory (0700), every local user could
   reach the runtimes' trees, whose setuid-root programs (Debian's su and newgrp, as built, never
   updated after) then ran as root on the host, outside any job (no no_new_privs there). It is
   made and kept 0700 root now, as volumes.dir is; jobs get the tree through mounts joblet makes
   as root.
3. A runtime was removed (or replaced) while a streamed submission naming it waited for its
   bytes (202, then PUT /v1/uploads/ID): it was checked at its POST and its job is made
   unchecked once the bytes came (core/incoming.h), so the job was made and FAILED at once
   (start_failed: no runtime 'busybox'). Remove and replace count uploads still arriving now,
   as volumes are held by them.

The runtime is busybox_runtime's tiny tree (no network, no build). Every probe that tries to
escape is harmless if it succeeds: it writes a marker file under /tmp."""
import os
import subprocess
import time

import pytest

import busybox_runtime
from conftest import api_as, setpriv

pytestmark = pytest.mark.skipif(not os.path.exists(busybox_runtime.BUSYBOX),
                                reason="busybox-static is not installed (scripts/install-deps.sh installs it)")

NOBODY = 65534


@pytest.fixture
def rt_daemon(fresh_daemon):
    def make(config=""):
        d = fresh_daemon(config, start=False)
        busybox_runtime.make(os.path.join(d.state, "runtimes"))
        return d.start()
    return make


# ---- 1. an array's unmade tasks use the runtime too ---------------------------------------------

def test_runtime_named_by_a_waiting_array_is_not_removed(rt_daemon, tmp_path):
    """nobody submits a held array in the busybox runtime; root may not remove the runtime while
    its tasks wait (they were checked at submission and would fail at their start)."""
    d = rt_daemon()
    code, a = api_as(d, NOBODY, "POST", "/v1/jobs", {"command": "cat", "args": ["/etc/marker"], "array": "0-2",
                                                     "hold": True, "runtime": "busybox"})
    assert code == 201, a
    aid = a["id"]
    code, ans = d.api("DELETE", "/v1/runtimes/busybox")
    print("remove", code, ans)
    assert code == 409, ans
    assert "in use" in ans["error"]["message"] and aid[:8] in ans["error"]["message"], ans
    assert os.path.exists(os.path.join(d.state, "runtimes", "busybox", "manifest.yml"))
    # rnx runtime info lists the array among what uses it, as the refusal names it
    code, info = d.api("GET", "/v1/runtimes/busybox")
    assert code == 200 and aid in info["jobs"], info
    # nor replaced by a build of another recipe of that name (refused before any tool runs)
    recipe = tmp_path / "busybox.yml"
    recipe.write_text("name: busybox\nversion: '2'\nsuite: bookworm\npackages: [busybox-static]\n")
    p = d.rnx("runtime", "build", "--replace", str(recipe))
    print("replace", p.returncode, p.stdout, p.stderr)
    assert p.returncode != 0 and "in use" in p.stderr and aid[:8] in p.stderr, p.stderr
    code, ans = api_as(d, NOBODY, "POST", f"/v1/jobs/{aid}/release")
    assert code == 200, ans
    a = None
    for _ in range(120):
        a = d.job(aid)
        if a["status"] in ("COMPLETED", "FAILED", "CANCELED", "STOPPED"):
            break
        time.sleep(0.5)
    assert a["status"] == "COMPLETED", a
    # once every task ended, the runtime can go
    code, ans = d.api("DELETE", "/v1/runtimes/busybox")
    assert code == 200, ans


# ---- 3. a streamed submission still arriving uses the runtime too ---------------------------------

def test_runtime_named_by_an_upload_still_arriving_is_not_removed(rt_daemon, tmp_path):
    """nobody opens a streamed submission in the busybox runtime (202, its bytes to follow);
    root may not remove or replace the runtime until its bytes came (its job is made then, with
    no second check); then its job runs in it, and the runtime can go once it ended."""
    d = rt_daemon()
    code, up = api_as(d, NOBODY, "POST", "/v1/jobs", {"command": "cat", "args": ["/work/data.bin"],
                                                      "runtime": "busybox",
                                                      "uploads": [{"path": "data.bin", "type": "file", "size": 4}]})
    assert code == 202, up
    uid = up["upload"]["id"]
    code, ans = d.api("DELETE", "/v1/runtimes/busybox")
    assert code == 409, ans
    assert "in use" in ans["error"]["message"] and uid[:8] in ans["error"]["message"], ans
    recipe = tmp_path / "busybox.yml"
    recipe.write_text("name: busybox\nversion: '2'\nsuite: bookworm\npackages: [busybox-static]\n")
    p = d.rnx("runtime", "build", "--replace", str(recipe))
    assert p.returncode != 0 and "in use" in p.stderr and uid[:8] in p.stderr, p.stderr
    code, job = api_as(d, NOBODY, "PUT", up["upload"]["path"], b"abcd", ctype="application/octet-stream")
    assert code == 201, job
    job = d.wait(job["id"])
    assert job["status"] == "COMPLETED", job
    assert d.output(job["id"]) == "abcd", d.output(job["id"])
    code, ans = d.api("DELETE", "/v1/runtimes/busybox")
    assert code == 200, ans


# ---- 2. the runtimes' trees are not the host users' ---------------------------------------------

def test_runtimes_dir_outside_the_state_dir_is_not_reachable_by_local_users(fresh_daemon):
    """runtimes.dir set to a directory every user can traverse the parent of: nobody cannot reach
    a runtime's tree on the host (where its setuid programs would run as root), and jobs in the
    runtime still run."""
    d = fresh_daemon(start=False)
    rtdir = os.path.join(d.dir, "rt")  # d.dir is 0755
    with open(d.config, "a") as f:
        f.write(f"runtimes:\n  dir: {rtdir}\n")
    os.makedirs(rtdir, mode=0o755)
    os.chmod(rtdir, 0o755)
    root = busybox_runtime.make(rtdir)
    d.start()
    marker = os.path.join(root, "etc", "marker")
    p = subprocess.run([*setpriv(NOBODY), "/bin/cat", marker], capture_output=True, text=True)
    print("nobody reads the tree:", p.returncode, p.stdout, p.stderr)
    assert p.returncode != 0 and "busybox runtime" not in p.stdout
    assert os.stat(rtdir).st_mode & 0o777 == 0o700
    code, job = api_as(d, NOBODY, "POST", "/v1/jobs", {"command": "cat", "args": ["/etc/marker"],
                                                       "runtime": "busybox"})
    assert code == 201, job
    assert d.wait(job["id"])["status"] == "COMPLETED" and d.output(job["id"]) == "busybox runtime\n"
