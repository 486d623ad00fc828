"""A hostile local user against the shim of a job with a terminal (a uid through setpriv, no
passwd entry needed).

1. A tty job that closes its terminal (`exec </dev/null >/dev/null 2>&1; sleep`) made its shim
   spin: the shim reads the pty master from a duplicate of the descriptor it gives the terminal's
   input, and closed it at EIO (every slave closed) without taking it off its epoll first. The
   registration is the open file's, which the duplicate keeps open, so epoll went on reporting
   the hang-up under the closed number, nothing handled it, and the shim turned at full speed
   until the job ended: a CPU for each such job, outside its owner's share (a shim joins its
   user's CPU cgroups only after 8 MiB of output) and with no output to show for it. Seen: 21 s of
   CPU in 32 s, epoll_wait only. The shim now takes the descriptor off its epoll before closing it
   (exec/shim_main.c, pump)."""
import os
import time

import pytest

from conftest import api_as, need_setpriv
from test_hostile_term import daemon  # noqa: F401 (the fixture: attach_wait_s 1)

USER = 4471


def shim_of(jid):
    """The pid of job jid's shim: the joblet-shim whose stdin is the job's directory."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if open(f"/proc/{pid}/comm").read().strip() != "joblet-shim":
                continue
            if os.readlink(f"/proc/{pid}/fd/0").endswith("/" + jid):
                return int(pid)
        except OSError:
            continue
    return None


def cpu_s(pid):
    """utime + stime of a process, in seconds."""
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("fields", [{"tty": True, "stdin": True}, {"tty": True}, {"stdin": True}],
                         ids=["tty-stdin", "tty", "stdin"])
def test_a_job_that_closes_its_terminal_leaves_its_shim_idle(daemon, fields):
    need_setpriv()
    st, job = api_as(daemon, USER, "POST", "/v1/jobs", {"command": "sh", "args": [
        "-c", "exec </dev/null >/dev/null 2>&1; sleep 600"], **fields})
    assert st == 201, job
    jid = job["id"]
    try:
        daemon.wait_status(jid, "RUNNING")
        time.sleep(3)  # (attach_wait_s passed: the command ran and closed its terminal)
        pid = shim_of(jid)
        assert pid, "no shim found for the job"
        c0, t0 = cpu_s(pid), time.monotonic()
        time.sleep(4)
        used, wall = cpu_s(pid) - c0, time.monotonic() - t0
        print(f"shim {pid}: {used:.2f} s of CPU in {wall:.2f} s")
        assert daemon.job(jid)["status"] == "RUNNING"
        # an idle shim uses next to nothing; a spinning one a whole CPU, however loaded the machine
        assert used < wall / 4, f"the shim of a job that closed its terminal used {used:.2f} s of CPU in {wall:.2f} s"
    finally:
        daemon.api("POST", f"/v1/jobs/{jid}/stop")
