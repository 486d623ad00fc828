"""A Slurm user who is not root against joblet's SPANK plugin (docs/slurm.md), through the real
slurmstepd of the test cluster (slurm_cluster.py) and the daemon of test_slurm_joblet.py: what
the user gives srun reaches the job as given, or the task is refused saying why."""
import subprocess

from conftest import rnx_as
from test_slurm_joblet import UID, USER, cluster, jd, slurm_jobs  # noqa: F401 (module fixtures)


def srun(cluster, *args):
    """srun -w node1 ARGS as the test user, its output as bytes turned to text with \\xNN for
    what is not UTF-8 (the arguments here need not be)."""
    return subprocess.run(["runuser", "-u", USER, "--", "srun", "-w", "node1", *args], env=cluster.env, cwd="/tmp",
                          capture_output=True, text=True, errors="backslashreplace", timeout=120)


def test_volume_option_mounts_the_users_volumes(cluster, jd):
    """--joblet-volume=NAME gives the task the user's volume at /volumes/NAME (slurmstepd calls
    the option's callback twice: the plugin once named it twice, and every such step was
    refused); a comma-separated list gives each; another user's volume is refused."""
    def volumes(*names, uid=UID):
        # memory volumes: each is gone when the last job using it ends
        for name in names:
            p = rnx_as(jd, uid, "volume", "create", name, "--size=4", "--type=memory")
            assert p.returncode == 0, p.stderr

    volumes("hsv1")
    p = srun(cluster, "--joblet-volume=hsv1", "/bin/sh", "-c", "ls /volumes; echo hi > /volumes/hsv1/f && cat /volumes/hsv1/f")
    assert p.returncode == 0 and p.stdout == "hsv1\nhi\n", (p.returncode, p.stdout, p.stderr)
    volumes("hsv1", "hsv2")
    p = srun(cluster, "--joblet-volume=hsv1,hsv2:ro", "/bin/ls", "/volumes")
    assert p.returncode == 0 and p.stdout.split() == ["hsv1", "hsv2"], (p.returncode, p.stdout, p.stderr)
    volumes("hsroot", uid=0)
    p = srun(cluster, "--joblet-volume=hsroot", "/bin/ls", "/volumes")
    assert p.returncode != 0 and p.stdout == "" and "hsroot" in p.stderr, (p.returncode, p.stdout, p.stderr)
    assert "listed twice" not in p.stderr, p.stderr


def test_an_argument_that_is_not_utf8_refuses_the_task(cluster, jd):
    """An argument that is not UTF-8 (JSON cannot carry it) refuses the task, saying which: it
    once dropped out of the command line, the rest shifted (a plain Slurm task gets it as
    given); in argv[0], another program ran."""
    before = len(slurm_jobs(jd))
    plain = srun(cluster, "/usr/bin/printf", "[%s]", "a", "\udcff", "b")
    assert plain.returncode == 0 and plain.stdout == "[a][\\xff][b]", (plain.stdout, plain.stderr)
    p = srun(cluster, "--joblet", "/usr/bin/printf", "[%s]", "a", "\udcff", "b")
    assert p.returncode != 0 and p.stdout == "", (p.returncode, p.stdout, p.stderr)
    assert "argument 3 of its command line is not UTF-8" in p.stderr, p.stderr
    p = srun(cluster, "--joblet", "\udcff", "/bin/echo", "ran")
    assert p.returncode != 0 and "ran" not in p.stdout, (p.returncode, p.stdout, p.stderr)
    assert "argument 0 of its command line is not UTF-8" in p.stderr, p.stderr
    assert len(slurm_jobs(jd)) == before


def test_a_variable_that_is_not_utf8_is_left_out_and_said(cluster, jd):
    p = srun(cluster, "--export=ALL,HS_BAD=\udcff,HS_GOOD=ok", "--joblet", "/bin/sh", "-c",
             "echo ${HS_BAD-unset} $HS_GOOD")
    assert p.returncode == 0 and p.stdout == "unset ok\n", (p.returncode, p.stdout, p.stderr)
    assert "HS_BAD is left out: its value is not UTF-8" in p.stderr, p.stderr
