"""Hostile crash-consistency checks: joblet killed (kill -9) at moments a workload makes likely,
then started again on the same state directory at once."""
import os
import signal

from conftest import preload_object, wait_for

_HOLD_BEFORE_EXEC = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* The first execv of HOLD_EXEC_PATH (joblet's runsc probe, core/isolation.c: capture) does not
 * exec: the forked child, still joblet's image with joblet's descriptors, kills its parent and
 * waits to be killed itself; the pid is in HOLD_EXEC_MARK. Every later execv is the real one. */
int execv(const char *path, char *const argv[])
{
    const char *want = getenv("HOLD_EXEC_PATH"), *mark = getenv("HOLD_EXEC_MARK");
    if (want && mark && !strcmp(path, want)) {
        int fd = open(mark, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd >= 0) {
            dprintf(fd, "%d\n", (int)getpid());
            close(fd);
            kill(getppid(), SIGKILL);
            for (;;)
                pause();
        }
    }
    int (*real)(const char *, char *const[]) = (int (*)(const char *, char *const[]))dlsym(RTLD_NEXT, "execv");
    return real(path, argv);
}
"""


def test_a_joblet_killed_while_a_child_it_forked_has_not_exec_d_yet_starts_again_at_once(fresh_daemon, tmp_path):
    """joblet forks helpers (runsc's probe, nvidia-smi, mke2fs, copies): each child is joblet
    until its exec. joblet killed in that moment (an LD_PRELOAD object makes the runsc probe's
    child kill it and stay) must not leave its state directory locked by the child: the next
    joblet, started at once on the same state, runs, and a job submitted before the kill is
    still there and runs."""
    runsc = tmp_path / "runsc"
    runsc.write_text("#!/bin/sh\necho 'runsc version 0.0~20990101.0'\n")
    runsc.chmod(0o755)
    mark = tmp_path / "held.pid"
    d = fresh_daemon(f"isolation:\n  runsc: {runsc}\n", start=False)
    d.start()
    jid = d.submit("sh", "-c", "echo ran", hold=True)
    d.stop()
    d.extra_env = {"LD_PRELOAD": preload_object(tmp_path, _HOLD_BEFORE_EXEC, "hold_before_exec"),
                   "HOLD_EXEC_PATH": str(runsc), "HOLD_EXEC_MARK": str(mark)}
    held = None
    try:
        try:
            d.start()
            raise AssertionError("joblet was not killed at its runsc probe (the LD_PRELOAD object did not act)")
        except RuntimeError:
            pass  # killed at start by its child, as arranged
        held = int(mark.read_text())
        assert os.path.exists(f"/proc/{held}"), "the forked child is gone"
        with open(f"/proc/{held}/cmdline", "rb") as f:
            assert b"joblet" in f.read(), "the child exec'd"
        d.start()  # the child still lives, not exec'd: the state directory is free all the same
        d.api("POST", f"/v1/jobs/{jid}/release", {})
        job = d.wait(jid)
        assert job["status"] == "COMPLETED" and d.output(jid) == "ran\n", job
    finally:
        if held:
            os.kill(held, signal.SIGKILL)
            wait_for(lambda: not os.path.exists(f"/proc/{held}") or
                     open(f"/proc/{held}/stat").read().split()[2] == "Z", "the held child to end", 30)
