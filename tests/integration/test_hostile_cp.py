"""A hostile local user against the places where joblet's root processes touch paths a job or
user controls: `rnx job cp` out of and into a job, uploads and an array's files copied to each
task's /work, volumes.

Every probe is harmless if it succeeds: the files it reaches for are the test's own markers
under /tmp, and the daemon it may crash is the test's own."""
import json
import os
import resource
import time

import pytest

from conftest import Daemon, need_root, need_setpriv, rnx_as

MALLORY = (4371, 4371)


def start_with_stack(d, stack):
    """d started with RLIMIT_STACK stack (bytes; None: as this process has it). The limit is set
    here around the start and handed down (not through Daemon's wrap, whose mount namespace
    cleanup is for a namespace of the daemon's own)."""
    if stack is None:
        return d.start()
    old = resource.getrlimit(resource.RLIMIT_STACK)
    resource.setrlimit(resource.RLIMIT_STACK, (stack, old[1]))
    try:
        return d.start()
    finally:
        resource.setrlimit(resource.RLIMIT_STACK, old)


@pytest.fixture
def own_daemon():
    """A daemon of the test's own, started by the test (make(config, wrap)); cleaned up after."""
    need_root()
    need_setpriv()
    made = []

    def make(config_text=None, stack=None):
        d = Daemon(config_text)
        made.append(d)
        return start_with_stack(d, stack)

    yield make
    for d in made:
        d.cleanup()


def run_as(d, user, *argv, timeout=120):
    """A job of user's running argv, waited for: its id and its status."""
    p = rnx_as(d, user, "--json", "job", "run", "--", *argv)
    assert p.returncode == 0, p.stderr
    jid = json.loads(p.stdout)["id"]
    deadline = time.time() + timeout
    while time.time() < deadline:
        p = rnx_as(d, user, "--json", "job", "status", jid)
        assert p.returncode == 0, p.stderr
        st = json.loads(p.stdout)["status"]
        if st in ("COMPLETED", "FAILED", "STOPPED", "CANCELED"):
            return jid, st
        time.sleep(0.1)
    raise AssertionError(f"job {jid} did not end in {timeout}s")


# ---- the daemon removes a job's /work: its user made the tree ---------------------------------

# Deep enough for the removal's recursion (common/util.c rm_at: ~240 bytes of stack a level and
# one descriptor a level) to pass the stack the daemon runs with here. The shipped unit
# (packaging/joblet.service.in) gives joblet LimitNOFILE=1048576 and the default 8 MB stack:
# ~35000 levels crash it there. This machine caps descriptors at 20000, fewer levels than 8 MB
# holds, so the daemon here gets a 2 MB stack and the tree 12000 levels: the same fault, in
# proportion.
DEPTH = 12000
SMALL_STACK = 2 << 20

DEEP_TREE = f"""
import os
os.chdir("/work")
for _ in range({DEPTH}):
    os.mkdir("d")
    os.chdir("d")
print("made")
"""


def test_a_users_deep_directory_tree_does_not_crash_the_daemon(own_daemon):
    """A user's job makes a directory tree DEPTH levels deep in /work (its own quota, a second's
    work), then the user deletes the job. Removing its /work (core/workfs.c workfs_remove ->
    common/util.c rm_rf) recursed once per level on the daemon's stack: joblet died of SIGSEGV, and
    again at each start after, when the orphan sweep (core/orphans.c, workfs_sweep) found the same
    tree. Any user could take joblet down for everyone, for good."""
    d = own_daemon(stack=SMALL_STACK)
    jid, st = run_as(d, MALLORY, "python3", "-c", DEEP_TREE)
    assert st == "COMPLETED", d.log()[-3000:]
    work = d.work(jid)
    assert os.path.isdir(os.path.join(work, "d", "d", "d"))
    p = rnx_as(d, MALLORY, "job", "delete", jid)
    assert d.proc.poll() is None, f"joblet died removing a deep /work (exit {d.proc.returncode}):\n{p.stderr}"
    assert p.returncode == 0, p.stderr
    # it still answers, and what the job left goes, every level of it (on trash's own thread:
    # core/trash.c)
    assert d.api("GET", "/v1/version")[0] == 200
    deadline = time.time() + 120
    while os.path.lexists(work) and time.time() < deadline and d.proc.poll() is None:
        time.sleep(0.1)
    assert d.proc.poll() is None, f"joblet died removing a deep /work (exit {d.proc.returncode})"
    assert not os.path.lexists(work), os.listdir(work)
    assert "not removed" not in d.log()
    d.stop()
    start_with_stack(d, SMALL_STACK)
    time.sleep(1)
    assert d.proc.poll() is None, "joblet died at its start, sweeping the deep /work again"
    assert d.api("GET", "/v1/version")[0] == 200
