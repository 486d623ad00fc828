"""docs/slurm.md as a Slurm user types it: srun and sbatch with the plugin's options against the
test cluster of test_slurm_joblet.py (slurm_cluster.py: two slurmd on this host, joblet.so in
their plugstack.conf, one joblet daemon on a simulated four-GPU machine), as `nobody`. Where
what happened differed from the document, or from what someone used to Slurm expects, the case
that showed it. In the SHARED "slurm" group (conftest.py): its clusters take Slurm's fixed
cgroups slurm_node1/2."""
import errno
import os
import pathlib
import pty
import select
import shutil
import subprocess
import tempfile
import time

import pytest

from slurm_cluster import SlurmCluster
from test_slurm_joblet import USER, as_user, cluster, jd, plugin_for_slurmd, slurm_jobs  # noqa: F401 (fixtures)


def own_cluster(plugstack):
    """A cluster of its own (started and stopped before the module's: they share node names and
    Slurm's cgroups) with this plugstack.conf line."""
    return SlurmCluster(plugstack=lambda c: plugstack.format(plugin=plugin_for_slurmd(c), gres=c.path("etc", "gres.conf")))


def test_an_unknown_plugstack_argument_and_joblet_not_running(jd):
    """"Another argument is refused": the plugin's init fails, so with `required` slurmd does not
    start (the document said only the step was refused) and srun fails at once, each naming the
    argument and the accepted ones. A node whose joblet is not running: the step fails and
    srun's stderr says why."""
    bad = "required {plugin} sockt=/run/x.sock\n"
    words = "plugstack.conf argument 'sockt=/run/x.sock' is not one of default=on|off, socket=/PATH, gres_conf=/PATH"
    with pytest.raises(RuntimeError) as e:
        own_cluster(bad).start()
    assert "slurmd initialization failed" in str(e.value) and words in str(e.value), str(e.value)
    with own_cluster("required {plugin} socket=/run/joblet-docs3-none.sock gres_conf={gres}\n") as c:
        p = as_user(c, ["srun", "-w", "node1", "--joblet", "echo", "ran"])
        assert p.returncode != 0 and "ran" not in p.stdout, (p.stdout, p.stderr)
        assert "cannot reach joblet at /run/joblet-docs3-none.sock" in p.stderr, p.stderr
        assert "is joblet running on this node?" in p.stderr, p.stderr
        # srun reads plugstack.conf itself: with the argument above it refuses at once
        with open(c.path("etc", "plugstack.conf"), "w") as f:
            f.write(bad.format(plugin=plugin_for_slurmd(c)))
        p = as_user(c, ["srun", "-w", "node1", "echo", "ran"])
        assert p.returncode != 0 and "ran" not in p.stdout and words in p.stderr, (p.stdout, p.stderr)


def test_srun_help_lists_the_options(cluster):
    """The options of the Options table, as `srun --help` shows them."""
    p = as_user(cluster, ["srun", "--help"])
    assert p.returncode == 0, p.stderr
    plugins = p.stdout.split("Options provided by plugins:")[1].split("\n\n\n")[0]
    for opt in ("--joblet ", "--joblet-runtime=NAME", "--joblet-volume=NAME[,NAME]", "--joblet-network=host|none"):
        assert opt in plugins, plugins


def test_option_values_refused_name_the_option_and_what_is_accepted(cluster, jd):
    p = as_user(cluster, ["srun", "-w", "node1", "--joblet-network=bogus", "true"])
    assert p.returncode != 0, p.stderr
    assert "--joblet-network=bogus: must be host" in p.stderr and "or none" in p.stderr, p.stderr
    p = as_user(cluster, ["srun", "-w", "node1", "--joblet-runtime=nosuch", "true"])
    assert p.returncode != 0, p.stderr
    assert "no runtime 'nosuch' on this machine; it has busybox (rnx runtime list)" in p.stderr, p.stderr
    p = as_user(cluster, ["srun", "-w", "node1", "--joblet-volume=nosuchvol", "true"])
    assert p.returncode != 0, p.stderr
    assert "no volume 'nosuchvol'" in p.stderr and "rnx volume create nosuchvol" in p.stderr, p.stderr
    p = as_user(cluster, ["srun", "-w", "node1", "--joblet-volume=" + "v" * 1100, "true"])
    assert p.returncode != 0 and "--joblet-volume: longer than 1023 bytes" in p.stderr, p.stderr


def test_network_none_is_loopback_only(cluster):
    p = as_user(cluster, ["srun", "-w", "node1", "--joblet-network=none", "ls", "/sys/class/net"])
    assert p.returncode == 0 and p.stdout.split() == ["lo"], (p.stdout, p.stderr)


def test_sbatch_directive_and_what_rnx_shows_of_the_task(cluster, jd):
    """`#SBATCH --joblet` in the script, as a Slurm user writes options, does what `sbatch
    --joblet` does; on the node the step's task is `slurm-J.0.0` in `rnx job list`, `rnx job
    status` has its Slurm: line and does not call joblet's number its SLURM_JOB_ID (Slurm's is
    another), `rnx job log` is empty, the API's job has `slurm`."""
    tmp = tempfile.mkdtemp(prefix="joblet-docs-slurm-")  # the user's sbatch reads it, the job writes there
    os.chmod(tmp, 0o777)
    try:
        sbatch_directive(cluster, jd, pathlib.Path(tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def sbatch_directive(cluster, jd, tmp_path):
    out = tmp_path / "out.txt"
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/sh\n#SBATCH --joblet\n#SBATCH -w node1\n#SBATCH -o {out}\n"
                      "echo batch $(cat /proc/1/comm)\nsrun cat /proc/1/comm\n")
    script.chmod(0o755)
    p = as_user(cluster, ["sbatch", "--parsable", str(script)])
    assert p.returncode == 0, p.stderr
    sjob = int(p.stdout.strip())
    deadline = time.monotonic() + 60
    while not (out.exists() and "joblet" in out.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    lines = out.read_text().splitlines()
    with open("/proc/1/comm") as f:
        host_init = f.read().strip()
    assert lines == ["batch " + host_init, "joblet-init"], lines  # the script Slurm's, its step joblet's
    jobs = [j for j in slurm_jobs(jd) if j["slurm"]["job"] == sjob]
    assert len(jobs) == 1 and jobs[0]["slurm"]["id"] == f"{sjob}.0.0", jobs
    job = jobs[0]
    listed = jd.rnx("job", "list", check=True).stdout
    assert f"slurm-{sjob}.0.0" in listed, listed
    st = jd.rnx("job", "status", job["id"], check=True).stdout
    assert f"\nSlurm: task {sjob}.0.0 (job, step, task on this node) of uid " in st, st
    assert f"\nNumber: {job['number']} (joblet's; the task's SLURM_JOB_ID is Slurm's, {sjob})\n" in st, st
    assert jd.rnx("job", "log", job["id"], check=True).stdout == ""


def pty_session(cluster, argv, steps, timeout=60):
    """argv (srun --pty ...) as the test user on a terminal; steps: (text to wait for, seconds to
    wait then, bytes to type) in turn, each text looked for after the last one found. (what the
    terminal showed, exit status)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(["runuser", "-u", USER, "--", *argv], env=cluster.env, cwd="/tmp", stdin=slave, stdout=slave,
                         stderr=slave, start_new_session=True)
    os.close(slave)
    seen, at = b"", 0
    deadline = time.monotonic() + timeout

    def read():
        nonlocal seen
        if select.select([master], [], [], 0.2)[0]:
            try:
                seen += os.read(master, 4096)
            except OSError as e:
                if e.errno != errno.EIO:
                    raise
                return False
        return True
    try:
        for wait, delay, send in steps:
            while seen.find(wait.encode(), at) < 0:
                assert time.monotonic() < deadline and read() and p.poll() is None, seen.decode(errors="replace")
            at = seen.find(wait.encode(), at) + len(wait)
            time.sleep(delay)
            os.write(master, send)
        while p.poll() is None and time.monotonic() < deadline and read():
            pass
        return seen.decode(errors="replace"), p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)


def test_pty_ctrl_c_interrupts_the_command_not_the_step(cluster):
    """`srun --pty --joblet bash -i`: Ctrl-C ends the command the shell runs, as in a plain
    `srun --pty bash`, and the shell goes on (it once killed the task process, the terminal's
    foreground, and the whole step with it: `task 0: Interrupt`)."""
    out, rc = pty_session(cluster, ["srun", "-w", "node1", "--pty", "--joblet", "/bin/bash", "--norc", "-i"], [
        ("$ ", 0, b"sleep 30; echo after-sleep\n"),
        ("after-sleep", 1.5, b"\x03"),
        ("$ ", 0, b"echo still-$((1+1))\n"),
        ("still-2", 0, b"exit 4\n"),
    ])
    assert rc == 4, out
    assert "after-sleep\r\n" not in out.split("sleep 30; echo after-sleep", 1)[1], out
    assert "Interrupt" not in out, out


def test_nothing_left(cluster, jd):
    assert not [j for j in slurm_jobs(jd) if j["status"] in ("RUNNING", "STOPPING")]
