"""Installing joblet (issue 19, docs/packaging.md): `meson install` with DESTDIR, the systemd
unit, a database from a newer joblet refused. The Debian package itself: test_deb.py."""
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time

import pytest

from conftest import BUILD, START_WAIT_S, Daemon, need_root

PREFIX = "/usr/local"   # meson's default prefix: the build directory of the tests is set up with it


class Installed(Daemon):
    """A daemon started from installed files: `cmd` is the command line (as the unit has it),
    to which the test's own --config, --state-dir and --socket are added, so that it never meets
    an installed joblet's /var/lib/joblet, /run/joblet or cgroup root."""

    def __init__(self, cmd, rnx, **kw):
        super().__init__(**kw)
        self.cmd, self.rnx_path = list(cmd), rnx

    def start(self):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [*self.cmd, "--config", self.config, "--state-dir", self.state, "--socket", self.sock],
            stdout=log, stderr=log, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                         **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}})
        log.close()
        deadline = time.time() + START_WAIT_S
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"joblet exited at start ({self.proc.returncode}):\n" + self.log())
            try:
                self.api("GET", "/v1/version")
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"joblet did not answer within {START_WAIT_S} s:\n" + self.log())

    def rnx(self, *args, timeout=60, check=True):
        p = subprocess.run([self.rnx_path, *args], capture_output=True, text=True, timeout=timeout,
                           env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": self.sock,
                                **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}})
        if check and p.returncode != 0:
            raise AssertionError(f"rnx {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
        return p


def unit_exec_start(unit_text):
    """The unit's ExecStart command line, split on blanks (it has no quoting)."""
    lines = [l.split("=", 1)[1] for l in unit_text.splitlines() if l.startswith("ExecStart=")]
    assert len(lines) == 1, unit_text
    return lines[0].split()


def systemd_analyze_verify(unit_path, man=True):
    """`systemd-analyze verify` on a unit file: passes only with no complaint at all (an unknown
    key or a bad value is only a warning, exit status 0)."""
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed (Debian package systemd)")
    p = subprocess.run(["systemd-analyze", "verify", f"--man={'yes' if man else 'no'}", unit_path],
                       capture_output=True, text=True, timeout=60)
    out = (p.stdout + p.stderr).strip()
    assert p.returncode == 0 and not out, f"systemd-analyze verify {unit_path}: {p.returncode}\n{out}"


# -- a database written by a newer joblet ---------------------------------------------------------

def test_database_of_a_newer_schema_is_refused():
    """A downgrade: joblet refuses a joblet.db whose user_version is above the migrations it knows,
    says why (path, both versions, what to do), exits 3 (the unit does not restart it) and leaves
    the file as it found it."""
    need_root()
    d = Daemon()
    try:
        os.makedirs(d.state, mode=0o700)
        db = os.path.join(d.state, "joblet.db")
        c = sqlite3.connect(db)
        c.execute("CREATE TABLE from_the_future (x)")
        c.execute("PRAGMA user_version=999")
        c.commit()
        c.close()
        before = open(db, "rb").read()
        with pytest.raises(RuntimeError) as err:
            d.start()
        msg = str(err.value)
        assert "joblet.db has schema version 999, newer than joblet" in msg, msg
        assert "written by a newer joblet" in msg and "downgrades are not supported" in msg, msg
        assert d.proc.returncode == 3
        assert open(db, "rb").read() == before, "the newer database was changed"
        assert not os.path.exists(db + "-wal"), "the newer database was switched to WAL"
        c = sqlite3.connect(db)
        assert c.execute("PRAGMA user_version").fetchone()[0] == 999
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        c.close()
    finally:
        d.cleanup()


def test_database_of_the_current_schema_restarts(fresh_daemon):
    """The counterpart: a database this joblet wrote is opened again (same version, no refusal)."""
    d = fresh_daemon()
    jid = d.submit("echo", "kept")
    d.wait(jid)
    d.stop()
    d.start()
    assert d.output(jid) == "kept\n"


# -- meson install ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def destdir():
    """`meson install --destdir` of the build under test (nothing is rebuilt)."""
    root = tempfile.mkdtemp(prefix="joblet-destdir-")
    try:
        p = subprocess.run(["meson", "install", "-C", BUILD, "--destdir", root, "--no-rebuild", "--quiet"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


INSTALLED = [
    "sbin/joblet", "bin/rnx",
    "libexec/joblet/joblet-shim", "libexec/joblet/joblet-gpu-scrub", "libexec/joblet/joblet-runtime-build",
    "libexec/joblet/joblet-copy",
    "libexec/joblet/joblet-exec",
    "libexec/joblet/joblet-net",
    "libexec/joblet/joblet-srun",
    "lib/systemd/system/joblet.service",
    "share/doc/joblet/examples/joblet.yml",
    "share/man/man1/rnx.1", "share/man/man8/joblet.8",
    "share/bash-completion/completions/rnx", "share/zsh/vendor-completions/_rnx",
]
# the SPANK plugin and its plugstack.conf line (under the prefix's etc: meson's sysconfdir for a
# prefix other than /usr), when the build found slurm/spank.h (docs/slurm.md)
SLURM_PLUGIN = ["lib/x86_64-linux-gnu/slurm-wlm/joblet.so", "etc/slurm/plugstack.conf.d/joblet.conf"]


def test_meson_install_puts_every_file_under_destdir(destdir):
    """Every installed file, and nothing outside DESTDIR's prefix: no /etc file (joblet runs on
    its defaults; the plugstack.conf line goes to the prefix's etc), programs executable."""
    got = sorted(os.path.relpath(os.path.join(dp, f), destdir + PREFIX)
                 for dp, _, fs in os.walk(destdir) for f in fs)
    built_plugin = os.path.exists(os.path.join(BUILD, "joblet.so"))
    assert got == sorted(INSTALLED + (SLURM_PLUGIN if built_plugin else [])), got
    for f in ("sbin/joblet", "bin/rnx", "libexec/joblet/joblet-shim"):
        assert os.access(os.path.join(destdir + PREFIX, f), os.X_OK), f
    example = open(os.path.join(destdir + PREFIX, "share/doc/joblet/examples/joblet.yml")).read()
    assert example.startswith("#") and "cgroup:" in example


def test_unit_starts_joblet_without_a_config_file(destdir):
    """The unit runs the installed joblet with no --config (its defaults, /etc/joblet/joblet.yml
    only when present), keeps jobs across restarts (KillMode=process) and has its cgroups
    delegated; `systemd-analyze verify` finds nothing to say (pointed at the DESTDIR binary; the
    man pages are checked on the installed package in test_deb.py)."""
    unit = open(os.path.join(destdir + PREFIX, "lib/systemd/system/joblet.service")).read()
    assert unit_exec_start(unit) == [PREFIX + "/sbin/joblet"]
    for line in ("KillMode=process", "Delegate=yes", "RestartPreventExitStatus=2 3", "NoNewPrivileges=yes", "StateDirectory=joblet",
                 "RuntimeDirectory=joblet", "RuntimeDirectoryPreserve=yes"):
        assert line in unit.splitlines(), line
    where = tempfile.mkdtemp(prefix="joblet-unit-")
    try:
        path = os.path.join(where, "joblet.service")
        with open(path, "w") as f:
            f.write(unit.replace("ExecStart=" + PREFIX, "ExecStart=" + destdir + PREFIX))
        systemd_analyze_verify(path, man=False)
    finally:
        shutil.rmtree(where)


def test_installed_joblet_finds_its_shim_under_libexec(destdir):
    """The installed joblet (moved with its tree: DESTDIR) finds joblet-shim in ../libexec/joblet
    from its own directory, runs a job through the installed rnx, with no_new_privs as the unit
    sets it (setpriv --no-new-privs)."""
    need_root()
    if not shutil.which("setpriv"):
        pytest.skip("setpriv is not installed (Debian package util-linux)")
    root = destdir + PREFIX
    d = Installed(["setpriv", "--no-new-privs", root + "/sbin/joblet"], root + "/bin/rnx")
    try:
        d.start()
        p = d.rnx("job", "run", "-f", "sh", "-c", "echo installed; grep NoNewPrivs /proc/self/status")
        assert p.stdout.split() == ["installed", "NoNewPrivs:", "1"], p.stdout
        jid = d.submit("sleep", "30")
        d.wait_status(jid, "RUNNING")
        exe = os.readlink(f"/proc/{d.job(jid)['shim_pid']}/exe")
        assert os.path.realpath(exe) == os.path.realpath(root + "/libexec/joblet/joblet-shim"), exe
    finally:
        d.cleanup()
