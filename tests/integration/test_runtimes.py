"""Runtimes (docs/runtimes.md): built for real from Debian's mirror by the real daemon and rnx,
as root. python-3.11 is built once per session (or taken from the build cache kept between
runs, runtime_util.CACHE); every other daemon here installs it from that cache in seconds.

Also: the daemon serves while a build runs, a build that hangs is killed at its time limit and
leaves nothing behind, one build at a time, admins only, refusals that name the recipe's field,
removal refused while a job uses the runtime, rnx runtime test, export and import (and a
tampered archive refused), and what a job sees inside a runtime."""
import json
import os
import pty
import re
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import BUILD, rnx_as
from runtime_util import (CACHE, build, helpers_of, mirror_reachable, mounts_under, need_mirror_or_cache,
                          recipe_path, recipe_sha, runtime_daemon, wait_gone)

UID = 4321
PY = "python-3.11"


@pytest.fixture(scope="module")
def rt():
    """A daemon with python-3.11 installed: built from the mirror the first time on this machine,
    from the cache afterwards. The build's own result is kept for the tests that look at it."""
    need_mirror_or_cache(PY)
    d = runtime_daemon().start()
    t0 = time.time()
    p = build(d, PY)
    d.first_build = (p, time.time() - t0)
    if p.returncode != 0:
        log = d.log()
        d.cleanup()
        pytest.fail(f"building {PY} failed:\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}\n{log[-2000:]}")
    yield d
    d.cleanup()


def as_user(d, *args, input=None):
    """rnx as uid/gid 4321 (not an admin)."""
    return rnx_as(d, UID, *args, input=input)


def run_out(d, *args, timeout=120):
    p = d.rnx("job", "run", "-f", *args, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


# -- building, the cache, what is installed ---------------------------------------------------

def test_build_installs_the_runtime_with_its_manifest(rt):
    """The build ends with a summary; list and info show the manifest: versions read from dpkg, the
    recipe's hash, the tree's hash, its size."""
    p, took = rt.first_build
    assert re.search(r"python-3\.11 1 built in [\d.]+ s.*: [\d.]+ MB; python 3\.11\.\d+", p.stdout), p.stdout[-2000:]
    listed = json.loads(rt.rnx("--json", "runtime", "list", check=True).stdout)
    assert [r["name"] for r in listed] == [PY]
    info = json.loads(rt.rnx("--json", "runtime", "info", PY, check=True).stdout)
    assert info["recipe_sha256"] == recipe_sha(PY)
    assert re.fullmatch(r"[0-9a-f]{64}", info["rootfs_sha256"])
    assert re.fullmatch(r"python 3\.11\.\d+", info["provides"][0]), info["provides"]
    assert info["architecture"] == subprocess.run(["dpkg", "--print-architecture"], capture_output=True,
                                                  text=True).stdout.strip()
    assert info["suite"] == "bookworm" and info["mirror"].startswith(("http://", "https://", "file:"))
    assert info["builder"].startswith(("mmdebstrap", "debootstrap"))
    assert info["recipe"] == "python-3.11.yml"
    assert 50e6 < info["size_bytes"] < 1e9 and info["installed_packages"] > 50
    assert info["env"] == {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}
    assert info["test"] and info["jobs"] == [] and info["default"] is False
    text = rt.rnx("runtime", "info", PY, check=True).stdout
    for want in ("Provides:     python 3.11", "Recipe:       python-3.11.yml (sha256 " + recipe_sha(PY),
                 "Builder:      ", "Jobs:         none"):
        assert want in text, text
    table = rt.rnx("runtime", "list", check=True).stdout
    assert re.search(r"^python-3\.11\s+1\s+[\d.]+ MB", table, re.M), table
    # the build is remembered with its log
    builds = json.loads(rt.rnx("--json", "runtime", "builds", check=True).stdout)
    assert builds[-1]["state"] == "succeeded" and builds[-1]["percent"] == 100 and builds[-1]["name"] == PY
    log = rt.rnx("runtime", "log", str(builds[-1]["id"]), check=True).stdout
    assert "joblet: installed as " in log


def test_second_build_of_the_same_recipe_is_instant(rt):
    """Installed from the same recipe: nothing to do, at once."""
    t0 = time.time()
    p = build(rt, PY)
    took = time.time() - t0
    assert p.returncode == 0, p.stderr
    assert "is built already from this recipe (nothing to do)" in p.stdout
    print(f"the second build took {took:.2f} s")   # (a figure, not a bound: the machine is shared)
    status, ans = rt.api("POST", "/v1/runtimes")  # an empty body: refused, not built
    assert status == 400 and "empty" in ans["error"]["message"]


def test_another_daemon_builds_it_from_the_cache(fresh_daemon):
    """The cache is keyed by the recipe's hash: a daemon that never built python-3.11 installs it
    from the archive, without the mirror, in seconds; the cache holds that one archive."""
    need_mirror_or_cache(PY)
    d = runtime_daemon().start()
    try:
        t0 = time.time()
        p = build(d, PY)
        took = time.time() - t0
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr
        assert "(from the cache)" in p.stdout, p.stdout[-2000:]
        assert "joblet: extracting the cached build" in p.stdout
        print(f"building from the cache took {took:.1f} s")
        assert os.path.exists(os.path.join(CACHE, recipe_sha(PY) + ".tar.zst"))
    finally:
        d.cleanup()


def test_progress_bar_on_a_terminal_plain_lines_otherwise(rt):
    """On a terminal rnx draws a bar that phases and percents move; through a pipe it prints the log."""
    rnx = os.path.join(BUILD, "rnx")
    # a pipe: the log's lines (from the daemon's record of the last build)
    builds = json.loads(rt.rnx("--json", "runtime", "builds", check=True).stdout)
    plain = rt.rnx("runtime", "log", str(builds[0]["id"]), check=True).stdout
    assert "\r" not in plain and "joblet: " in plain
    # a terminal: a daemon of its own builds it (from the cache) under a pty
    d = runtime_daemon().start()
    try:
        master, slave = pty.openpty()
        env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock,
               **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}}
        proc = subprocess.Popen([rnx, "runtime", "build", recipe_path(PY)], stdin=slave, stdout=slave, stderr=slave,
                                env=env)
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        proc.wait(timeout=300)
        os.close(master)
        text = out.decode(errors="replace")
        assert proc.returncode == 0, text[-2000:]
        assert re.search(r"\r\x1b\[K\[#+\.*\]\s+\d+%  ", text), text[-2000:]
        assert "100%  done" in text, text[-2000:]
        assert "Ctrl-C stops watching, not the build" in text
        assert "built in" in text
    finally:
        d.cleanup()


# -- jobs in the runtime ---------------------------------------------------------------------

def test_job_runs_in_the_runtime(rt):
    """--runtime=python-3.11: the runtime's python (3.11, as `python`), its env, a read-only tree;
    the job's own /work and /tmp as always."""
    rc, out, err = run_out(rt, "--runtime=python-3.11", "python", "--version")
    assert rc == 0, err
    assert re.fullmatch(r"Python 3\.11\.\d+\n", out), out
    rc, out, err = run_out(rt, "--runtime=python-3.11", "sh", "-c",
                           'echo "$PYTHONUNBUFFERED"; readlink /bin; touch /usr/x 2>&1 || echo ro; '
                           'touch /work/x /tmp/y && echo rw; test -e /etc/debian_version && echo debian')
    assert rc == 0, err
    assert out.split("\n") == ["1", "usr/bin", "touch: cannot touch '/usr/x': Read-only file system", "ro", "rw",
                               "debian", ""], out
    # the workflow key as well
    jid = rt.submit("python", "-c", "import sys; print(sys.version_info[:2])", runtime=PY)
    job = rt.wait(jid)
    assert job["status"] == "COMPLETED", job
    assert rt.output(jid) == "(3, 11)\n"


def test_a_job_without_the_runtime_has_no_python(rt):
    """The host has python3 but no `python`: what the guide's lines need comes from the runtime."""
    rc, out, err = run_out(rt, "sh", "-c", "command -v python || echo 'no python'")
    assert out.strip() == "no python", (out, err)
    p = rt.rnx("job", "run", "-f", "python", "--version")
    assert p.returncode != 0


def test_unknown_runtime_refused_naming_those_installed(rt):
    p = rt.rnx("job", "run", "--runtime=python-2.7", "true")
    assert p.returncode != 0
    assert "no runtime 'python-2.7' on this machine; it has python-3.11" in p.stderr, p.stderr


def test_runtime_test_runs_the_manifest_test_as_a_job(rt):
    p = rt.rnx("runtime", "test", PY, timeout=120)
    assert p.returncode == 0, p.stderr
    assert re.fullmatch(r"python 3\.11\.\d+\n", p.stdout), p.stdout
    assert f"runtime {PY} passed its test" in p.stderr
    jobs = json.loads(rt.rnx("--json", "job", "list", check=True).stdout)
    assert any(j["name"] == f"runtime-test-{PY}" and j["status"] == "COMPLETED" for j in jobs)


def test_remove_refused_while_a_job_uses_it(rt):
    """A job that has not ended holds the runtime: removal is refused naming it; once it ended the
    runtime goes, and is back from the cache in seconds."""
    jid = rt.submit("sleep", "60", runtime=PY)
    rt.wait_status(jid, "RUNNING")
    try:
        p = rt.rnx("runtime", "remove", PY)
        assert p.returncode == 1
        assert f"in use by 1 job that has not ended ({jid[:8]})" in p.stderr, p.stderr
        status, ans = rt.api("DELETE", f"/v1/runtimes/{PY}")
        assert status == 409 and ans["error"]["code"] == "conflict"
        info = json.loads(rt.rnx("--json", "runtime", "info", PY, check=True).stdout)
        assert info["jobs"] == [jid]
        # replacing it is refused alike
        p = build(rt, PY, "--fresh")
        assert p.returncode == 1 and "in use by 1 job" in p.stderr, p.stderr
    finally:
        rt.api("POST", f"/v1/jobs/{jid}/stop")
        rt.wait(jid)
    p = rt.rnx("runtime", "remove", PY)
    assert p.returncode == 0, p.stderr
    assert "removed runtime python-3.11" in p.stdout
    status, _ = rt.api("GET", f"/v1/runtimes/{PY}")
    assert status == 404
    p = rt.rnx("job", "run", "--runtime=python-3.11", "true")
    assert "no runtime 'python-3.11' on this machine; it has none yet" in p.stderr
    # the tree is deleted by a helper: nothing of it stays
    rdir = os.path.join(rt.state, "runtimes")
    assert wait_gone(lambda: not [n for n in os.listdir(rdir) if n != ".logs"]), os.listdir(rdir)
    p = build(rt, PY)
    assert p.returncode == 0 and "(from the cache)" in p.stdout, p.stdout[-2000:] + p.stderr
    rc, out, _ = run_out(rt, "--runtime=python-3.11", "python", "--version")
    assert rc == 0 and out.startswith("Python 3.11")


# -- who may, and what is refused ------------------------------------------------------------

def test_non_admins_may_not_build_remove_or_import(rt):
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is not installed")
    here = tempfile.mkdtemp(prefix="joblet-it-user-")  # a place uid 4321 can read
    try:
        os.chmod(here, 0o755)
        recipe = os.path.join(here, "r.yml")
        shutil.copy(recipe_path(PY), recipe)
        archive = os.path.join(here, "x.tar.zst")
        with open(archive, "wb") as f:
            f.write(b"\0" * (8 << 20))
        for path in (recipe, archive):
            os.chmod(path, 0o644)
        for args in (("runtime", "build", recipe), ("runtime", "remove", PY)):
            p = as_user(rt, *args)
            assert p.returncode == 1, p
            assert "is for admins: root, or members of the group named by server.admin_group" in p.stderr, p.stderr
        p = as_user(rt, "runtime", "import", archive)
        assert p.returncode == 1 and "importing a runtime is for admins" in p.stderr, p.stderr
    finally:
        shutil.rmtree(here, ignore_errors=True)
    # reading is for everyone, and so is testing (the test job runs as the caller)
    assert as_user(rt, "runtime", "list").returncode == 0
    assert as_user(rt, "runtime", "info", PY).returncode == 0
    p = as_user(rt, "runtime", "test", PY)
    assert p.returncode == 0, p.stderr
    assert json.loads(rt.rnx("--json", "runtime", "info", PY, check=True).stdout)["name"] == PY


BAD = [
    # (recipe text, field, words of the refusal)
    ("version: 1\nsuite: bookworm\npackages: [python3]\n", "name", "name: is required"),
    ("name: x\nversion: 1\nsuite: bookworm\n", "packages", "packages: is required"),
    ("name: x\nversion: 1\nsuite: bookworm\npackages: [python3, Python3]\n", "packages[1]",
     "packages[1]: 'Python3' is not accepted; give Debian package names"),
    ("name: x\nversion: 1\nsuite: bookworm\npackages: [python3]\npakages: [a1]\n", "pakages",
     "pakages: unknown key; a recipe takes name, version"),
    ("name: ../etc\nversion: 1\nsuite: bookworm\npackages: [python3]\n", "name", "name: '../etc' is not accepted"),
    ("name: x\nversion: 1\nsuite: bookworm\npackages: [python3]\nmirror: ftp://m/debian\n", "mirror",
     "an http://, https:// or file:/// URL"),
    ("name: x\nversion: 1\nsuite: bookworm\npackages: [python3]\nprovides:\n  torch: Torch\n", "provides.torch",
     "does not start with a Debian package name"),
    ("name: x\nversion: 1\nsuite: bookworm\npackages: [python3]\nenv: {1A: b}\n", "env", "not a variable name"),
    ("name: x\nversion: 1\nsuite: bookworm\npackages: [python3]\ncustomize: sed -i s/a/b/ /etc/x\n", "customize",
     "customize: must be a list of shell scripts"),
    ("name: [unclosed\n", None, "recipe: not valid YAML at line"),
]


@pytest.mark.parametrize("text,field,says", BAD, ids=[b[1] or "yaml" for b in BAD])
def test_bad_recipes_refused_naming_the_field(rt, tmp_path, text, field, says):
    f = tmp_path / "bad.yml"
    f.write_text(text)
    p = rt.rnx("runtime", "build", str(f))
    assert p.returncode == 1
    assert p.stderr.startswith(f"rnx: {f}: "), p.stderr
    assert says in p.stderr, p.stderr
    # the API: 400 with the field
    from conftest import UnixHTTPConnection
    c = UnixHTTPConnection(rt.sock)
    c.request("POST", "/v1/runtimes", body=text.encode(), headers={"Content-Type": "application/yaml"})
    r = c.getresponse()
    ans = json.loads(r.read())
    c.close()
    assert r.status == 400, ans
    assert ans["error"]["code"] == "invalid_argument" and says in ans["error"]["message"]
    assert ans["error"].get("field") == field, ans
    assert not [n for n in os.listdir(os.path.join(rt.state, "runtimes")) if n.startswith(".build-")]


CUSTOM = """name: custom-test
version: "1"
suite: bookworm
variant: essential
packages: [dash]
customize:
  - |
    # inside the tree (chroot), with the sandbox's own /proc
    test -f /etc/debian_version && test -r /proc/self/status
    echo "$0 ran in $(cat /etc/debian_version | cut -c1-2)" > /etc/joblet-customized
"""


def test_customize_scripts_run_in_the_tree_and_a_failing_one_fails_the_build(rt, tmp_path):
    """customize: scripts run inside the new tree after its packages (chrooted, /proc mounted),
    their result is in the runtime; the first that fails fails the build, named, and leaves no
    tree. The tree also got Debian's default /etc/hosts, and a job there sees its own."""
    ok, why = mirror_reachable()
    if not ok:
        pytest.skip(f"Debian's mirror cannot be reached ({why}): the failing build cannot come from the cache")
    f = tmp_path / "custom.yml"
    f.write_text(CUSTOM + "  - |\n    echo about-to-fail\n    false\n    echo not-reached-after-false\n")
    p = rt.rnx("runtime", "build", str(f), timeout=900)
    assert p.returncode != 0, p.stdout[-2000:]
    text = p.stdout + p.stderr
    assert "customize[1] failed (exit status 1); its messages are above" in text, text[-3000:]
    assert "\nabout-to-fail\n" in text and "not-reached-after-false\n" not in text, text[-3000:]
    assert not os.path.exists(os.path.join(rt.state, "runtimes", "custom-test"))
    assert not [n for n in os.listdir(os.path.join(rt.state, "runtimes")) if n.startswith(".build-")]
    f.write_text(CUSTOM)
    p = rt.rnx("runtime", "build", str(f), timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr
    root = os.path.join(rt.state, "runtimes", "custom-test", "rootfs")
    assert open(os.path.join(root, "etc", "joblet-customized")).read() == "customize[0] ran in 12\n"
    assert open(os.path.join(root, "etc", "hosts")).read().startswith("127.0.0.1\tlocalhost\n::1\t")
    assert os.listdir(os.path.join(root, "proc")) == []   # unmounted again
    rc, out, err = run_out(rt, "--runtime=custom-test", "sh", "-c", "cat /etc/joblet-customized /etc/hosts")
    assert rc == 0, err
    assert out.startswith("customize[0] ran in 12\n") and "\n127.0.0.1\tjob-" in out, out
    assert rt.rnx("runtime", "remove", "custom-test").returncode == 0


def test_oversized_recipe_refused(rt, tmp_path):
    f = tmp_path / "big.yml"
    f.write_text("name: x\n" + "#" * 70000 + "\n")
    p = rt.rnx("runtime", "build", str(f))
    assert p.returncode == 1 and "a recipe is at most 65536 bytes" in p.stderr, p.stderr
    from conftest import UnixHTTPConnection
    c = UnixHTTPConnection(rt.sock)
    c.request("POST", "/v1/runtimes", body=f.read_bytes(), headers={"Content-Type": "application/yaml"})
    r = c.getresponse()
    ans = json.loads(r.read())
    c.close()
    assert r.status == 413 and "at most 65536 bytes" in ans["error"]["message"]


# -- export and import -----------------------------------------------------------------------

def daemon_hwm_kb(d):
    with open(f"/proc/{d.proc.pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))


def test_export_then_import_elsewhere_and_tampered_archives_refused(rt, tmp_path):
    arch = tmp_path / "py.tar.zst"
    p = rt.rnx("runtime", "export", PY, str(arch), timeout=120)
    assert p.returncode == 0, p.stderr
    assert arch.stat().st_size > 10e6
    want = json.loads(rt.rnx("--json", "runtime", "info", PY, check=True).stdout)
    d = runtime_daemon(runtimes_dir=str(tmp_path / "other-runtimes")).start()
    try:
        hwm = daemon_hwm_kb(d)
        p = d.rnx("runtime", "import", str(arch), timeout=300)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr
        assert "python-3.11 1 imported in" in p.stdout
        # streamed to a file: the daemon's memory did not grow by the archive's size
        grew = daemon_hwm_kb(d) - hwm
        assert grew < 32 << 10, f"joblet's peak RSS grew by {grew} KiB importing a {arch.stat().st_size} byte archive"
        got = json.loads(d.rnx("--json", "runtime", "info", PY, check=True).stdout)
        for k in ("rootfs_sha256", "recipe_sha256", "provides", "size_bytes", "built_at"):
            assert got[k] == want[k], k
        rc, out, err = run_out(d, "--runtime=python-3.11", "python", "--version")
        assert rc == 0 and out.startswith("Python 3.11"), err
        # again: the very tree is installed already
        p = d.rnx("runtime", "import", str(arch), timeout=300)
        assert p.returncode == 0 and "is installed already with this very tree" in p.stdout, p.stdout[-1000:]

        # a tampered tree: one byte of one file
        work = tmp_path / "x"
        work.mkdir()
        subprocess.run(["tar", "--zstd", "-xf", str(arch), "-C", str(work)], check=True)
        with open(work / "rootfs" / "etc" / "debian_version", "a") as f:
            f.write("x")
        bad = tmp_path / "bad.tar.zst"
        subprocess.run(["tar", "--zstd", "-cf", str(bad), "-C", str(work), "manifest.yml", "recipe.yml", "rootfs"],
                       check=True)
        p = d.rnx("runtime", "import", "--replace", str(bad), timeout=300)
        assert p.returncode == 1
        assert "refused: rootfs/ does not match the manifest: the tree hashes to" in p.stderr, p.stderr
        # a manifest that claims another recipe
        with open(work / "recipe.yml", "a") as f:
            f.write("# changed\n")
        subprocess.run(["tar", "--zstd", "-cf", str(bad), "-C", str(work), "manifest.yml", "recipe.yml", "rootfs"],
                       check=True)
        p = d.rnx("runtime", "import", "--replace", str(bad), timeout=300)
        assert p.returncode == 1 and "recipe.yml does not match the manifest" in p.stderr, p.stderr
        # not an archive at all
        junk = tmp_path / "junk.tar.zst"
        junk.write_bytes(os.urandom(4096))
        p = d.rnx("runtime", "import", str(junk), timeout=120)
        assert p.returncode == 1 and "could not be extracted" in p.stderr, p.stderr
        # what failed left nothing behind, and the good runtime is untouched
        rdir = str(tmp_path / "other-runtimes")
        assert wait_gone(lambda: sorted(n for n in os.listdir(rdir) if n != ".logs") == [PY]), os.listdir(rdir)
        got = json.loads(d.rnx("--json", "runtime", "info", PY, check=True).stdout)
        assert got["rootfs_sha256"] == want["rootfs_sha256"]
    finally:
        d.cleanup()


def test_import_is_streamed_and_bounded(fresh_daemon, tmp_path):
    """An archive over runtimes.max_import_bytes is refused with 413 and never fills memory."""
    d = runtime_daemon("  max_import_bytes: 1MB\n").start()
    try:
        big = tmp_path / "big.tar.zst"
        big.write_bytes(b"\0" * (3 << 20))
        p = d.rnx("runtime", "import", str(big))
        assert p.returncode == 1 and "larger than runtimes.max_import_bytes (1048576 bytes)" in p.stderr, p.stderr
        assert d.api("GET", "/v1/version")[0] == 200
    finally:
        d.cleanup()


# -- the daemon while it builds ----------------------------------------------------------------

def hanging_mirror():
    """A file:// mirror whose Release files are FIFOs nobody writes: apt waits on them for ever,
    which makes a build that runs until it is killed. Under /var/tmp: the build's own /tmp hides
    the host's."""
    m = tempfile.mkdtemp(prefix="joblet-it-mirror-", dir="/var/tmp")
    os.makedirs(os.path.join(m, "dists", "bookworm"))
    for n in ("InRelease", "Release"):
        os.mkfifo(os.path.join(m, "dists", "bookworm", n))
    return m


def test_daemon_serves_while_a_build_runs_and_kills_it_at_its_limit(fresh_daemon, tmp_path):
    """While a build runs (one that hangs on its mirror): jobs run, the API answers, a
    second build is refused (one at a time), a follower of its log stays connected through the
    silence (longer than server.idle_timeout_s); at runtimes.build_timeout_s the build is killed
    and nothing of it stays: no process, no mount, no tree."""
    mirror = hanging_mirror()
    d = runtime_daemon("  build_timeout_s: 20\nserver:\n  idle_timeout_s: 3\n").start()
    try:
        recipe = tmp_path / "hang.yml"
        recipe.write_text(f"name: hang\nversion: 1\nsuite: bookworm\nmirror: file://{mirror}\npackages: [python3]\n")
        with open(recipe) as f:
            text = f.read()
        from conftest import UnixHTTPConnection
        c = UnixHTTPConnection(d.sock)
        c.request("POST", "/v1/runtimes?source=hang.yml", body=text.encode(), headers={"Content-Type": "application/yaml"})
        r = c.getresponse()
        ans = json.loads(r.read())
        c.close()
        assert r.status == 202, ans
        bid = ans["build"]["id"]
        assert ans["build"]["state"] == "running" and ans["build"]["name"] == "hang"
        follower = subprocess.Popen([os.path.join(BUILD, "rnx"), "runtime", "log", str(bid)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True,
                                    env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock,
                                         **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}})
        deadline = time.time() + 10
        while json.loads(d.rnx("--json", "runtime", "builds", check=True).stdout)[-1]["phase"] != \
                "updating package lists" and time.time() < deadline:
            time.sleep(0.2)
        assert helpers_of(d), "the build helper is not running"
        # one build at a time
        p = build(d, PY)
        assert p.returncode == 1
        assert f"a runtime build is running already (build {bid}, hang" in p.stderr, p.stderr
        # the daemon serves while the build runs (it hangs until its limit ends it): answers and
        # a job's start and end come while the build helper is still there
        worst = 0
        for _ in range(20):
            t0 = time.time()
            assert d.api("GET", "/v1/version")[0] == 200
            worst = max(worst, time.time() - t0)
        print(f"the slowest of 20 answers during the build: {worst * 1000:.0f} ms")
        rc, out, _ = run_out(d, "echo", "served")
        assert rc == 0 and out == "served\n"
        assert helpers_of(d), "the build ended before the daemon's answers: they prove nothing"
        # the limit
        end = None
        deadline = time.time() + 60
        while time.time() < deadline:
            b = json.loads(d.rnx("--json", "runtime", "builds", check=True).stdout)[-1]
            if b["state"] != "running":
                end = b
                break
            time.sleep(0.3)
        assert end and end["state"] == "failed", end
        assert end["error"] == "stopped after 20 s (runtimes.build_timeout_s)", end
        assert wait_gone(lambda: not helpers_of(d)), helpers_of(d)
        assert subprocess.run(["pgrep", "-f", f"mmdebstrap.*{mirror}"]).returncode == 1  # none left
        rdir = os.path.join(d.state, "runtimes")
        assert wait_gone(lambda: not [n for n in os.listdir(rdir) if n != ".logs"]), os.listdir(rdir)
        # (the users' /work filesystems, jobs.work_quota, stay mounted by design)
        assert not mounts_under(d.dir, but=os.path.join(d.state, "work")) and not mounts_under(mirror)
        out, err = follower.communicate(timeout=30)  # it followed from the start to the end
        assert follower.returncode == 1 and "stopped after 20 s" in err, (out, err)
        # from its first line to its last: how far mmdebstrap got in 20 s is the machine's load's
        # business (on a busy one, not as far as apt-get update)
        assert out.startswith("joblet: building hang") and "\nI: " in out, out
        assert out.rstrip("\n").endswith("joblet: failed: stopped after 20 s (runtimes.build_timeout_s)"), out
        p = d.rnx("runtime", "log", str(bid))
        assert p.returncode == 1 and "stopped after 20 s" in p.stderr
    finally:
        d.cleanup()
        shutil.rmtree(mirror, ignore_errors=True)


def test_a_build_dies_with_the_daemon_and_the_next_one_cleans_up(fresh_daemon, tmp_path):
    """kill -9 of joblet during a build: the helper and everything in its sandbox die with it; the
    next joblet removes the half-built tree."""
    mirror = hanging_mirror()
    d = runtime_daemon().start()
    try:
        recipe = tmp_path / "hang.yml"
        recipe.write_text(f"name: hang\nversion: 1\nsuite: bookworm\nmirror: file://{mirror}\npackages: [python3]\n")
        from conftest import UnixHTTPConnection
        c = UnixHTTPConnection(d.sock)
        c.request("POST", "/v1/runtimes", body=recipe.read_bytes(), headers={"Content-Type": "application/yaml"})
        r = c.getresponse()
        assert r.status == 202, r.read()
        c.close()
        rdir = os.path.join(d.state, "runtimes")
        assert wait_gone(lambda: os.path.isdir(os.path.join(rdir, ".build-hang", "rootfs")) and
                         subprocess.run(["pgrep", "-f", f"mmdebstrap.*{mirror}"]).returncode == 0)
        d.kill9()
        assert wait_gone(lambda: subprocess.run(["pgrep", "-f", f"mmdebstrap.*{mirror}"]).returncode != 0), \
            "mmdebstrap outlived joblet"
        assert wait_gone(lambda: not helpers_of(d))
        assert not mounts_under(rdir)
        assert os.path.isdir(os.path.join(rdir, ".build-hang"))
        d.start()
        assert wait_gone(lambda: not [n for n in os.listdir(rdir) if n != ".logs"]), os.listdir(rdir)
    finally:
        d.cleanup()
        shutil.rmtree(mirror, ignore_errors=True)


def test_without_a_build_tool_the_error_names_the_package(fresh_daemon, tmp_path):
    d = runtime_daemon(env={"PATH": str(tmp_path)}).start()
    try:
        p = build(d, PY)
        assert p.returncode == 1
        assert "building a runtime needs mmdebstrap or debootstrap" in p.stderr, p.stderr
        assert "apt-get install mmdebstrap" in p.stderr
    finally:
        d.cleanup()
