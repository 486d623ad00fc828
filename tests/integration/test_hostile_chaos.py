"""Hostile crash-consistency checks: joblet killed (kill -9) at moments a workload makes likely,
then started again on the same state directory at once."""
import os
import signal
import subprocess

from conftest import wait_for


def test_a_joblet_killed_while_its_helper_lives_starts_again_at_once(fresh_daemon, tmp_path):
    """joblet's children are spawned (posix_spawn: runsc's probe, nvidia-smi, copies) or are its
    own executable run again (mke2fs's and e2fsck's waiter, `joblet __diskimg-helper`, which lives
    as long as the tool). joblet killed while such a helper lives (a slow mke2fs: a volume being
    made) must not leave its state directory locked by the helper: the next joblet, started at once
    on the same state, runs, and a job submitted before the kill is still there and runs. (Before,
    the helpers were forks of joblet, each joblet's image until its exec; a test held one there.)"""
    slow = tmp_path / "slow-mke2fs"
    pidfile = tmp_path / "mke2fs.pid"
    slow.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nsleep 60\nexec /usr/sbin/mke2fs \"$@\"\n")
    slow.chmod(0o755)
    # (no /work images: the slow mke2fs is the volume's alone)
    d = fresh_daemon(f"jobs:\n  work_quota: 0\nvolumes:\n  mke2fs: {slow}\n")
    jid = d.submit("sh", "-c", "echo ran", hold=True)
    creating = subprocess.Popen([os.path.join(os.environ["JOBLET_BUILD"], "rnx"), "volume", "create", "slow",
                                 "--size=64MB"], env={"JOBLET_SOCKET": d.sock, "PATH": "/usr/bin:/bin"},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mkfs = helper = None
    try:
        wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), "mke2fs started")
        mkfs = int(pidfile.read_text())
        helper = int(open(f"/proc/{mkfs}/stat").read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{helper}/cmdline", "rb") as f:
            assert f.read().split(b"\0")[1] == b"__diskimg-helper", "mke2fs's parent is not joblet's helper"
        d.kill9()
        creating.wait(timeout=60)
        assert os.path.exists(f"/proc/{helper}"), "the helper is gone"
        d.start()  # the helper still lives: the state directory is free all the same
        d.api("POST", f"/v1/jobs/{jid}/release", {})
        job = d.wait(jid)
        assert job["status"] == "COMPLETED" and d.output(jid) == "ran\n", job
    finally:
        for pid in (mkfs, helper):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if creating.poll() is None:
            creating.kill()
            creating.wait()
