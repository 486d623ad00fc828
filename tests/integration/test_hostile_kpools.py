"""Hostile jobs against the kernel's pools of the machine's that no cgroup counts (tester
hostile, 2026-12-01): the ptys (kernel.pty.max, less pty.reserve: 3072 for every container
together) and kernel AIO's events (fs.aio-max-nr, 65536). Before, one job of an unprivileged
user opened every pty the jobs share (its devpts had no max=) and reserved every AIO event (one
io_setup), so that no other user's job could have a terminal and no process on the machine an
AIO context. The probes take a small part of a pool at most, so that they are harmless on a
machine without the bounds. Real daemon (conftest fixtures), a local user made with useradd."""
import json
import shutil
import subprocess
import uuid

import pytest

from conftest import api_as

# Opens up to argv[1] ptys (each kept open: a pty lives as long as its master), then io_setup(argv[2]):
# prints what it got and the errno that stopped it.
PROBE = r"""
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
out, held = {}, []
try:
    for _ in range(int(sys.argv[1])):
        held.append(os.openpty())
    out["pty_err"] = None
except OSError as e:
    out["pty_err"] = errno.errorcode.get(e.errno, e.errno)
out["ptys"] = len(held)
for m, s in held:
    os.close(m); os.close(s)
ctx = ctypes.c_ulong(0)
SYS_io_setup = {"x86_64": 206, "aarch64": 0}[os.uname().machine]
r = libc.syscall(SYS_io_setup, ctypes.c_uint(int(sys.argv[2])), ctypes.byref(ctx))
out["aio_err"] = None if r == 0 else errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())
if r == 0:
    libc.syscall({"x86_64": 207, "aarch64": 1}[os.uname().machine], ctx)  # io_destroy
print(json.dumps(out))
"""


@pytest.fixture
def hostile_user():
    """A local account (useradd), removed after the test: its uid."""
    if not shutil.which("useradd") or not shutil.which("userdel"):
        pytest.skip("useradd and userdel are needed")
    name = "jh" + uuid.uuid4().hex[:8]
    subprocess.run(["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name],
                   check=True, capture_output=True)
    try:
        yield int(subprocess.run(["id", "-u", name], check=True, capture_output=True, text=True).stdout)
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def _probe(d, uid, ptys, aio_events):
    code, j = api_as(d, uid, "POST", "/v1/jobs", {"command": "python3", "args": ["-c", PROBE, str(ptys), str(aio_events)]})
    assert code == 201, j
    job = d.wait(j["id"], timeout=120)
    out = d.output(j["id"])
    assert job["status"] == "COMPLETED", (job, out, d.output(j["id"], "stderr"))
    return json.loads(out)


def test_one_job_holds_only_its_share_of_the_machines_ptys(fresh_daemon, hostile_user):
    # 64 of the 3072 asked for: a job without a terminal of its own gets jobs.ptys_max (8 by
    # default), then ENOSPC (devpts' max=), as a full machine would say it
    d = fresh_daemon()
    got = _probe(d, hostile_user, 64, 0)
    assert got["ptys"] == 8 and got["pty_err"] == "ENOSPC", got
    # the bound is the setting's
    d2 = fresh_daemon("jobs:\n  ptys_max: 3\n")
    got = _probe(d2, hostile_user, 64, 0)
    assert got["ptys"] == 3 and got["pty_err"] == "ENOSPC", got


def test_a_job_cannot_reserve_the_machines_aio_events(fresh_daemon, hostile_user):
    # io_setup(128): 128 of the machine's 65536 events, had it been let through; one call of
    # 65536 took them all (every other io_setup on the machine: EAGAIN)
    d = fresh_daemon()
    got = _probe(d, hostile_user, 0, 128)
    assert got["aio_err"] == "EPERM", got
