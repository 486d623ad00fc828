"""The Debian package (issue 19, docs/packaging.md): scripts/package.sh builds it (the version of
debian/changelog; the same package under a higher version is the upgrade), lintian accepts it, it installs into this
machine with apt-get, the installed daemon runs jobs for the installed rnx, an upgrade while a
job runs restarts only the daemon and the job finishes with its whole log, and `apt-get purge`
leaves nothing behind.

The installed daemon is started here as the unit starts it (its ExecStart, under no_new_privs
like NoNewPrivileges=yes), plus --config, --state-dir and --socket of the test's own: so it
never uses /var/lib/joblet, /run/joblet/joblet.sock or the cgroup root `joblet` of a joblet
really installed on the machine, nor those of other tests' daemons. The unit itself is never
started (policy-rc.d answers 101 while the package is installed, and on a machine without
systemd the maintainer scripts do not call systemctl at all); the restart after the upgrade is
the one the maintainer scripts would order (`systemctl restart` with KillMode=process: SIGTERM
to the daemon only, then ExecStart again), done by hand."""
import email.utils
import glob
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import BUILD, ROOT, need_root
from test_packaging import Installed, systemd_analyze_verify, unit_exec_start
from test_restart import alive

NEWER = "+upgrade1"   # appended to debian/changelog's version for the second build
POLICY = "/usr/sbin/policy-rc.d"
APT = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=120", "--no-install-recommends"]
ENV = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}


def sanitized_build():
    try:
        with open(os.path.join(BUILD, "meson-info", "intro-buildoptions.json")) as f:
            opts = {o["name"]: o["value"] for o in json.load(f)}
    except OSError:
        return False
    return opts.get("b_sanitize", "none") != "none"


def newer_version_of(deb, newer, out):
    """The same package under a higher version, as scripts/package.sh --version NEWER builds it
    (its files are the same: the version lives in debian/changelog only, which --version extends
    in a copy of the tree): the control file's Version, a changelog entry on top of the packaged
    changelog, its md5sum. Repacked rather than built a second time (~40 s of the suite)."""
    work = tempfile.mkdtemp(prefix="joblet-deb-newer-")
    try:
        subprocess.run(["dpkg-deb", "-R", deb, work], check=True)
        control = os.path.join(work, "DEBIAN", "control")
        with open(control) as f:
            lines = f.read().splitlines()
        maint = next(ln.split(": ", 1)[1] for ln in lines if ln.startswith("Maintainer: "))
        with open(control, "w") as f:
            f.write("\n".join(f"Version: {newer}" if ln.startswith("Version: ") else ln for ln in lines) + "\n")
        rel = "usr/share/doc/joblet/changelog.gz"
        log = os.path.join(work, rel)
        with gzip.open(log, "rb") as f:
            old = f.read()
        entry = (f"joblet ({newer}) unstable; urgency=medium\n\n  * Built by scripts/package.sh --version {newer}.\n\n"
                 f" -- {maint}  {email.utils.formatdate(localtime=True)}\n\n").encode()
        with open(log, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0, filename="") as f:
            f.write(entry + old)
        sums = os.path.join(work, "DEBIAN", "md5sums")
        with open(log, "rb") as f:
            digest = hashlib.md5(f.read()).hexdigest()
        with open(sums) as f:
            text = f.read().splitlines()
        with open(sums, "w") as f:
            f.write("\n".join(f"{digest}  {rel}" if ln.endswith("  " + rel) else ln for ln in text) + "\n")
        path = os.path.join(out, f"joblet_{newer}_amd64.deb")
        subprocess.run(["dpkg-deb", "--root-owner-group", "-Zxz", "-b", work, path], check=True, capture_output=True)
        return path
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="module")
def debs():
    """(older .deb, newer .deb): two real builds by scripts/package.sh, without the unit tests
    (DEB_BUILD_OPTIONS=nocheck: the test command has run them on this tree already)."""
    need_root()
    if sanitized_build():
        pytest.skip("the package is built and tested once, with the normal build's suite")
    for tool in ("dpkg-buildpackage", "dh", "lintian", "apt-get"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (scripts/install-deps.sh installs it)")
    out = tempfile.mkdtemp(prefix="joblet-debs-")
    try:
        version = subprocess.run(["dpkg-parsechangelog", "-S", "Version", "-l", os.path.join(ROOT, "debian/changelog")],
                                 capture_output=True, text=True, check=True).stdout.strip()
        t = time.time()
        p = subprocess.run(["bash", os.path.join(ROOT, "scripts/package.sh"), "--out", out],
                           capture_output=True, text=True, timeout=900, env={**ENV, "DEB_BUILD_OPTIONS": "nocheck"})
        assert p.returncode == 0, p.stdout + p.stderr
        made = [p.stdout.split()[-1]]
        print(f"package.sh: {time.time() - t:.1f} s")
        assert os.path.basename(made[0]) == f"joblet_{version}_amd64.deb", made
        made.append(newer_version_of(made[0], version + NEWER, out))
        yield made
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_package_version_is_the_project_version():
    """debian/changelog (a native package) carries meson.build's version: the .deb's name and
    `joblet --version` agree."""
    if not shutil.which("dpkg-parsechangelog"):
        pytest.skip("dpkg-parsechangelog is not installed (Debian package dpkg-dev)")
    info = json.loads(subprocess.run(["meson", "introspect", "--projectinfo", os.path.join(ROOT, "meson.build")],
                                     capture_output=True, text=True, check=True).stdout)
    version = subprocess.run(["dpkg-parsechangelog", "-S", "Version", "-l", os.path.join(ROOT, "debian/changelog")],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == info["version"], (version, info["version"])


def field(deb, name):
    return subprocess.run(["dpkg-deb", "-f", deb, name], capture_output=True, text=True, check=True).stdout.strip()


def test_lintian_finds_no_error(debs):
    """lintian --fail-on error on both builds (what it still warns about is printed: -rP shows it)."""
    p = subprocess.run(["lintian", "--fail-on", "error", *debs], capture_output=True, text=True, timeout=300)
    print(p.stdout)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "\nE: " not in "\n" + p.stdout, p.stdout


def test_package_declares_its_dependencies(debs):
    """Depends: the libraries the programs are linked with (dpkg-shlibdeps; libseccomp and
    jansson are also linked statically into the shim); the optional tools only suggested."""
    deb = debs[0]
    depends = field(deb, "Depends")
    for lib in ("libmicrohttpd12", "libjansson4", "libfyaml0", "libsqlite3-0", "libsodium23", "libc6"):
        assert lib in depends, depends
    suggests = field(deb, "Suggests")
    for opt in ("runsc", "podman", "chromium"):
        assert opt in suggests, suggests
        assert opt not in depends and opt not in field(deb, "Recommends"), opt


def test_slurm_plugin_has_its_own_package_pinned_to_its_slurm_release(debs):
    """joblet-slurm (built beside joblet): the SPANK plugin and its plugstack.conf snippet, the
    joblet of the same build, and the Slurm release its spank.h came from (a plugin loads only
    into that release); joblet itself holds neither."""
    out = os.path.dirname(debs[0])
    version = field(debs[0], "Version")
    slurm = os.path.join(out, f"joblet-slurm_{version}_amd64.deb")
    assert os.path.exists(slurm), os.listdir(out)
    files = subprocess.run(["dpkg-deb", "-c", slurm], capture_output=True, text=True, check=True).stdout
    assert "./usr/lib/x86_64-linux-gnu/slurm-wlm/joblet.so" in files, files
    assert "./etc/slurm/plugstack.conf.d/joblet.conf" in files, files
    mine = subprocess.run(["dpkg-deb", "-c", debs[0]], capture_output=True, text=True, check=True).stdout
    assert "joblet.so" not in mine and "plugstack" not in mine and "./usr/sbin/joblet" in mine, mine
    depends = field(slurm, "Depends")
    release = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libslurm-dev"], capture_output=True,
                             text=True, check=True).stdout
    major, minor = release.split(".")[:2]
    assert f"joblet (= {version})" in depends, depends
    assert f"slurm-wlm-basic-plugins (>= {major}.{minor}~)" in depends, depends
    assert f"slurm-wlm-basic-plugins (<< {major}.{int(minor) + 1:02d}~)" in depends, depends
    assert "libjansson4" in depends, depends
    p = subprocess.run(["lintian", "--fail-on", "error", slurm], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr


def test_maintainer_scripts_restart_only_after_an_upgrade(debs):
    """The unit is not stopped before an upgrade's files are unpacked (prerm stops it only on
    remove) and is restarted once they are (postinst, when there was an older version)."""
    where = tempfile.mkdtemp(prefix="joblet-ctl-")
    try:
        subprocess.run(["dpkg-deb", "-e", debs[0], where], check=True)
        prerm = open(os.path.join(where, "prerm")).read()
        assert "stop 'joblet.service'" in prerm and '"$1" = remove' in prerm, prerm
        postinst = open(os.path.join(where, "postinst")).read()
        assert "_dh_action=restart" in postinst, postinst
    finally:
        shutil.rmtree(where)


def dpkg_version():
    p = subprocess.run(["dpkg-query", "-W", "-f", "${Status} ${Version}", "joblet"], capture_output=True, text=True)
    return p.stdout.split()[-1] if p.returncode == 0 and p.stdout.startswith("install ok installed") else None


def leftovers(owned):
    """What is left of the package after a purge: its files and directories, its enablement
    symlinks and deb-systemd-helper's state, an /etc/joblet."""
    left = [f for f in owned if os.path.lexists(f) and not os.path.isdir(f)]
    left += [d for d in ("/usr/libexec/joblet", "/usr/share/doc/joblet", "/etc/joblet") if os.path.lexists(d)]
    left += glob.glob("/var/lib/dpkg/info/joblet.*")
    for base in ("/etc/systemd/system", "/var/lib/systemd/deb-systemd-helper-enabled",
                 "/var/lib/systemd/deb-systemd-helper-masked"):
        for dp, _, fs in os.walk(base):
            left += [os.path.join(dp, f) for f in fs if f.startswith("joblet.service")]
    return left


def test_install_upgrade_while_a_job_runs_and_purge(debs):
    """apt-get install the older .deb; the installed rnx runs jobs on the installed daemon; a
    job that writes for a while is running when the newer .deb is installed over it and the
    daemon restarted as postinst would: the job is never interrupted, is adopted by the new daemon
    (the new /usr/sbin/joblet) and completes with every line; apt-get purge leaves nothing."""
    if dpkg_version():
        pytest.skip("a joblet package is already installed on this machine: left alone")
    ours = False
    if not os.path.exists(POLICY):
        with open(POLICY, "w") as f:
            f.write("#!/bin/sh\n# written by joblet's tests/integration/test_deb.py while it runs\nexit 101\n")
        os.chmod(POLICY, 0o755)
        ours = True
    d = None
    owned = []
    try:
        if subprocess.run([POLICY, "joblet.service", "start"]).returncode != 101:
            pytest.skip(f"{POLICY} would let the maintainer scripts start joblet.service")
        p = subprocess.run([*APT, "install", debs[0]], capture_output=True, text=True, env=ENV, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        version = field(debs[0], "Version")
        assert dpkg_version() == version
        owned = subprocess.run(["dpkg", "-L", "joblet"], capture_output=True, text=True, check=True).stdout.split("\n")
        owned = [f for f in owned if f.startswith("/") and f not in ("/", "/.")]
        for f in ("/usr/sbin/joblet", "/usr/bin/rnx", "/usr/libexec/joblet/joblet-shim", "/usr/libexec/joblet/joblet-copy",
                  "/usr/libexec/joblet/joblet-srun", "/lib/systemd/system/joblet.service", "/usr/share/doc/joblet/examples/joblet.yml"):
            assert f in owned and os.path.exists(f), f
        assert not os.path.exists("/etc/joblet/joblet.yml"), "the package must not install an active config"
        systemd_analyze_verify("/lib/systemd/system/joblet.service", man=bool(shutil.which("man")))

        cmd = unit_exec_start(open("/lib/systemd/system/joblet.service").read())
        assert cmd == ["/usr/sbin/joblet"]
        d = Installed(["setpriv", "--no-new-privs", *cmd], "/usr/bin/rnx").start()
        assert d.rnx("job", "run", "-f", "echo", "from the package").stdout == "from the package\n"
        lines = 80
        # it writes for a while and, half way, waits for /work/go: it runs through the upgrade and
        # the restart however long they take on a loaded machine
        jid = d.submit("sh", "-c", f'for i in $(seq 1 {lines}); do echo "line $i"; sleep 0.1; '
                                   f'[ $i = {lines // 2} ] && while [ ! -e /work/go ]; do sleep 0.05; done; done; exit 7')
        shim = d.wait_status(jid, "RUNNING")["shim_pid"]
        old_inode = os.stat("/usr/sbin/joblet").st_ino

        p = subprocess.run([*APT, "install", debs[1]], capture_output=True, text=True, env=ENV, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        assert dpkg_version() == version + NEWER
        assert os.stat("/usr/sbin/joblet").st_ino != old_inode, "the upgrade did not replace /usr/sbin/joblet"
        assert d.job(jid)["status"] == "RUNNING", "the job did not outlive the upgrade's unpacking"

        # systemctl restart joblet.service, KillMode=process: SIGTERM to the daemon alone, then ExecStart
        d.stop()
        assert alive(shim), "the job's shim ended with the daemon"
        d.start()
        assert os.stat(f"/proc/{d.proc.pid}/exe").st_ino == os.stat("/usr/sbin/joblet").st_ino
        assert d.job(jid)["status"] == "RUNNING", d.job(jid)
        open(os.path.join(d.work(jid), "go"), "w").close()
        job = d.wait(jid, timeout=60)
        assert (job["status"], job["exit_code"]) == ("FAILED", 7), job
        assert d.output(jid) == "".join(f"line {i}\n" for i in range(1, lines + 1))
        log = d.rnx("job", "log", jid).stdout
        assert log.splitlines()[-1] == f"line {lines}" and len(log.splitlines()) == lines, log
    finally:
        if d:
            d.cleanup()
        if dpkg_version() is not None or subprocess.run(["dpkg-query", "-W", "joblet"],
                                                        capture_output=True).returncode == 0:
            p = subprocess.run([*APT, "purge", "joblet"], capture_output=True, text=True, env=ENV, timeout=300)
            purge_out = p.stdout + p.stderr
        else:
            purge_out = ""
        if ours:
            os.unlink(POLICY)
    assert subprocess.run(["dpkg-query", "-W", "joblet"], capture_output=True).returncode != 0, purge_out
    assert leftovers(owned) == [], purge_out
