"""Jobs in a runtime (docs/runtimes.md): the runtime's tree is the job's /usr, /etc, /bin, /lib
(read-only), its manifest's env comes first, everything else about the job is as usual; an
unknown runtime is refused at submission naming the installed ones; runtimes.default. The
runtime here is busybox_runtime's tiny tree; runtimes built from Debian packages are in
test_runtimes.py."""
import os

import pytest

import busybox_runtime

pytestmark = pytest.mark.skipif(not os.path.exists(busybox_runtime.BUSYBOX),
                                reason="busybox-static is not installed (scripts/install-deps.sh installs it)")


@pytest.fixture
def rt_daemon(fresh_daemon):
    def make(config=""):
        d = fresh_daemon(config, start=False)
        busybox_runtime.make(os.path.join(d.state, "runtimes"), env={"RT_GREETING": "from the manifest",
                                                                     "RT_OVERRIDDEN": "manifest"})
        d.start()
        return d
    return make


def test_job_runs_in_the_runtimes_tree(rt_daemon):
    d = rt_daemon()
    p = d.rnx("job", "run", "--runtime=busybox", "-e", "RT_OVERRIDDEN=job", "--follow", "sh", "-c",
              "cat /etc/marker; readlink /bin; echo $RT_GREETING; echo $RT_OVERRIDDEN; "
              "ls /usr/bin/python3 2>&1; touch /usr/x 2>&1; touch /etc/x 2>&1; echo data > /work/f && cat /work/f; "
              "id -u", check=True)
    lines = p.stdout.splitlines()
    assert lines[0] == "busybox runtime"          # the runtime's /etc
    assert lines[1] == "usr/bin"                  # its merged-/usr links, kept as links
    assert lines[2] == "from the manifest"        # the manifest's env
    assert lines[3] == "job"                      # the job's own value wins
    assert "No such file or directory" in lines[4]  # not the host's /usr
    assert "Read-only file system" in lines[5] and "Read-only file system" in lines[6]
    assert lines[7] == "data"                     # /work as usual
    assert int(lines[8]) >= 1000                  # root's job runs as a uid of its own, as usual
    jid = d.api("GET", "/v1/jobs")[1]["jobs"][0]["id"]
    assert d.job(jid)["runtime"] == "busybox"
    assert "Runtime: busybox\n" in d.rnx("job", "status", jid, check=True).stdout
    # the same job without --runtime sees the host's system directories
    p = d.rnx("job", "run", "--follow", "sh", "-c", "test -e /etc/marker && echo runtime || echo host", check=True)
    assert p.stdout == "host\n"


def test_unknown_runtime_refused_naming_the_installed_ones(rt_daemon):
    d = rt_daemon()
    p = d.rnx("job", "run", "--runtime=python-3.11-ml", "true")
    assert p.returncode != 0
    assert p.stderr == ("rnx: --runtime: no runtime 'python-3.11-ml' on this machine; it has busybox "
                        "(rnx runtime list)\n")
    code, err = d.api("POST", "/v1/jobs", {"command": "true", "runtime": "../etc"})
    assert code == 400 and err["error"]["field"] == "runtime"
    assert "no runtime '../etc' on this machine; it has busybox" in err["error"]["message"]
    assert d.job_count() == 0 and d.job_dirs() == []


def test_no_runtime_at_all(fresh_daemon):
    d = fresh_daemon()
    code, err = d.api("POST", "/v1/jobs", {"command": "true", "runtime": "python-3.11-ml"})
    assert code == 400 and err["error"]["message"] == (
        "runtime: no runtime 'python-3.11-ml' on this machine; it has none yet (an admin builds one: "
        "rnx runtime build runtimes/python-3.11-ml.yml)")


def test_default_runtime_and_a_broken_manifest(rt_daemon):
    d = rt_daemon("runtimes:\n  default: busybox\n")
    jid = d.submit("cat", "/etc/marker")
    job = d.wait(jid)
    assert job["status"] == "COMPLETED" and job["runtime"] == "busybox"
    assert d.output(jid) == "busybox runtime\n"
    # a manifest that changed is read again; one that no longer reads refuses jobs, saying why
    manifest = os.path.join(d.state, "runtimes", "busybox", "manifest.yml")
    with open(manifest, "w") as f:
        f.write("name: another\n")
    os.utime(manifest, (1, 1))
    code, err = d.api("POST", "/v1/jobs", {"command": "true", "runtime": "busybox"})
    assert code == 400 and err["error"]["field"] == "runtime"
    assert "runtime: 'busybox' is installed but broken" in err["error"]["message"]
    assert "names 'another'" in err["error"]["message"]


def test_workflow_job_in_a_runtime(rt_daemon, tmp_path):
    d = rt_daemon()
    wf = tmp_path / "wf.yaml"
    wf.write_text("jobs:\n  a:\n    command: cat\n    args: [/etc/marker]\n    runtime: busybox\n")
    p = d.rnx("workflow", "run", "--follow", str(wf))
    assert p.returncode == 0, p.stdout + p.stderr
    jobs = d.api("GET", "/v1/jobs")[1]["jobs"]
    assert len(jobs) == 1 and jobs[0]["runtime"] == "busybox" and jobs[0]["status"] == "COMPLETED"
    assert d.output(jobs[0]["id"]) == "busybox runtime\n"


def test_job_gets_its_own_hosts_file_in_a_runtime(rt_daemon):
    """A runtime's tree without /etc/hosts (busybox's here, as mmdebstrap's trees): the job's /etc
    is the tree's with the job's own /etc/hosts laid over it, read-only, and no /etc/hostname
    (the tree has none). A tree with both files: the job's are bound over them. The tree's own
    files stay as they are either way."""
    d = rt_daemon()
    etc = os.path.join(d.state, "runtimes", "busybox", "rootfs", "etc")
    probe = ("hostname; cat /etc/hosts; cat /etc/marker; cat /etc/hostname 2>&1; touch /etc/hosts 2>&1; "
             "touch /etc/new 2>&1; true")
    jid = d.submit("sh", "-c", probe, runtime="busybox")
    job = d.wait(jid)
    assert job["status"] == "COMPLETED", (job, d.output(jid, "stderr"))
    name = job["hostname"]
    lines = d.output(jid).splitlines()
    assert lines[0] == name, lines
    assert f"127.0.0.1\t{name}" in lines and "127.0.0.1\tlocalhost" in lines, lines
    assert "busybox runtime" in lines                                   # the tree's /etc is all there
    assert any("/etc/hostname" in l and "No such file or directory" in l for l in lines), lines
    assert any("/etc/hosts: Read-only file system" in l for l in lines), lines
    assert any("/etc/new: Read-only file system" in l for l in lines), lines
    assert not os.path.exists(os.path.join(etc, "hosts")) and not os.path.exists(os.path.join(etc, "hostname"))
    # a tree that has both: the job's are bound over them, the tree's stay
    with open(os.path.join(etc, "hosts"), "w") as f:
        f.write("127.0.0.1 localhost runtime-built-here\n")
    with open(os.path.join(etc, "hostname"), "w") as f:
        f.write("runtime-built-here\n")
    jid = d.submit("sh", "-c", "cat /etc/hosts /etc/hostname /etc/marker; touch /etc/hosts 2>&1; true", runtime="busybox")
    job = d.wait(jid)
    assert job["status"] == "COMPLETED", (job, d.output(jid, "stderr"))
    out = d.output(jid)
    assert f"127.0.0.1\t{job['hostname']}\n" in out and f"\n{job['hostname']}\nbusybox runtime\n" in out, out
    assert "runtime-built-here" not in out and "Read-only file system" in out, out
    assert open(os.path.join(etc, "hosts")).read() == "127.0.0.1 localhost runtime-built-here\n"
    assert open(os.path.join(etc, "hostname")).read() == "runtime-built-here\n"


def test_export_without_an_archive_says_how_to_make_one(rt_daemon, tmp_path):
    """docs/runtimes.md, "The cache": the same recipe built again while its runtime is installed
    is answered "already built" (nothing made), unless --fresh. A runtime whose archive is not in
    the cache was refused with "rnx runtime build --replace" as the way to make one, which builds
    nothing for the installed recipe; it names --fresh now (and no empty sha256)."""
    d = rt_daemon()
    p = d.rnx("runtime", "export", "busybox", str(tmp_path / "bb.tar.zst"))
    assert p.returncode == 1, p
    assert "has no archive of runtime 'busybox' (recipe sha256 unknown)" in p.stderr, p.stderr
    assert "(rnx runtime build --fresh RECIPE.yml)" in p.stderr and "--replace" not in p.stderr, p.stderr
    assert not (tmp_path / "bb.tar.zst").exists()
