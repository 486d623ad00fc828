"""mke2fs's and e2fsck's waiter is joblet's own executable run again (`joblet __diskimg-helper
TOOL ARGV...`, core/diskimg.c, spawned from /proc/self/exe): what the tool it runs is handed
(its argv whole, its stdin /dev/null, no other descriptor of the daemon's, no signal blocked or
ignored), and that it still runs where joblet's executable was replaced while joblet runs (a
package upgrade renames a new file over /usr/sbin/joblet: the running one's is deleted)."""
import os
import shutil

import conftest
from conftest import BUILD, wait_for

# SigBlk/SigIgn of /proc/PID/status: hex masks, bit (n - 1) for signal n
SIGPIPE = 13


def fake_mke2fs(tmp_path):
    """A mke2fs that writes what it was handed to tmp_path/seen.N (N its pid), then runs the
    real one."""
    seen = tmp_path / "seen"
    seen.mkdir()
    os.chmod(tmp_path, 0o755)
    script = tmp_path / "mke2fs"
    script.write_text(
        "#!/bin/sh\n"
        f"f={seen}/$$\n"
        # listed by a child with no redirection of the shell's own: dash makes a redirection (or a
        # pipe) in itself, a copy of the fd it replaces kept at 10 or above while the command runs
        "sh -c 'ls -l /proc/$PPID/fd > \"$1\"' sh $f.raw\n"
        "sed -n 's/.* \\([0-9]*\\) -> /fd \\1 /p' $f.raw > $f.fds; rm $f.raw\n"
        "echo \"args: $*\" > $f.tmp; echo \"ppid: $PPID\" >> $f.tmp; cat $f.fds >> $f.tmp; rm $f.fds\n"
        # read by the shell itself, no child: a child reading /proc/$$/status raced dash's own
        # fork, which blocks every signal until the child has exec'd (SigBlk all: CI run 132)
        "while read -r k v; do case $k in SigBlk:|SigIgn:) echo \"$k $v\";; esac; done < /proc/$$/status >> $f.tmp\n"
        "mv $f.tmp $f\n"
        "exec /usr/sbin/mke2fs \"$@\"\n")
    script.chmod(0o755)
    return script, seen


def reports(seen):
    out = []
    for name in sorted(os.listdir(seen)):
        if not name.endswith((".tmp", ".fds")):
            with open(seen / name) as f:
                out.append(f.read())
    return out


def parse(report):
    r = {"fds": {}}
    for line in report.splitlines():
        k, _, v = line.replace("\t", " ").partition(" ")
        if k == "fd":
            n, _, target = v.partition(" ")
            r["fds"][int(n)] = target
        else:
            r[k.rstrip(":")] = v.strip()
    return r


def need_mke2fs():
    import pytest
    if not os.path.exists("/usr/sbin/mke2fs") or not os.path.exists("/dev/loop-control"):
        pytest.skip("no mke2fs or no loop devices here")


def test_the_tool_the_helper_runs_gets_its_argv_and_nothing_else_of_the_daemons(fresh_daemon, tmp_path):
    """A volume's mke2fs and a first job's /work mke2fs: their argv whole, their parent the helper
    (whose own parent is joblet), fds 0 (/dev/null), 1 and 2 (the log) and nothing else (the
    listing's own fd aside), no signal blocked and none ignored (joblet ignores SIGPIPE itself:
    a tool run with it ignored gets EPIPE where it would have died, and a shell loop writing to a
    pipe closed under it never ends)."""
    need_mke2fs()
    script, seen = fake_mke2fs(tmp_path)
    d = fresh_daemon(f"jobs:\n  work_quota: 64MB\nvolumes:\n  mke2fs: {script}\n")
    d.rnx("volume", "create", "hv", "--size=64MB", check=True)
    jid = d.rnx("job", "run", "true", check=True).stdout.split()[-1]
    assert d.wait(jid)["status"] == "COMPLETED"
    got = [parse(r) for r in reports(seen)]
    assert len(got) == 2, got
    for r in got:
        assert r["args"].startswith("-t ext4 -q -F -m 0 -E lazy_itable_init=1,lazy_journal_init=1,root_owner="), r
        assert r["args"].split()[-1].endswith(("/image", ".img.new")), r
        helper = int(r["ppid"])
        assert not os.path.exists(f"/proc/{helper}") or helper != d.proc.pid, r
        assert r["fds"].get(0) == "/dev/null", r
        # (the shell's own: the script it reads)
        others = {n: t for n, t in r["fds"].items() if n > 2 and t != str(script)}
        assert not others, f"fds of the daemon's in mke2fs: {others}"
        assert int(r["SigBlk"], 16) == 0, r
        assert int(r["SigIgn"], 16) & (1 << (SIGPIPE - 1)) == 0, f"mke2fs runs with SIGPIPE ignored: {r}"
    d.rnx("volume", "remove", "hv", check=True)


def test_the_helper_runs_when_joblets_executable_was_replaced_while_it_runs(fresh_daemon, tmp_path, monkeypatch):
    """joblet started from another directory, its executable then replaced as a package upgrade
    does (a new file renamed over it: the running one's is deleted): a volume is still made, and a
    new owner's /work image too (both by mke2fs under the helper, the running joblet's own
    executable, /proc/self/exe)."""
    need_mke2fs()
    inst = tmp_path / "sbin"
    inst.mkdir()
    os.chmod(tmp_path, 0o755)
    for name in os.listdir(BUILD):
        src = os.path.join(BUILD, name)
        if os.path.isfile(src) and os.access(src, os.X_OK) and name != "joblet":
            os.symlink(src, inst / name)
    shutil.copy2(os.path.join(BUILD, "joblet"), inst / "joblet")
    monkeypatch.setattr(conftest, "BUILD", str(inst))
    d = fresh_daemon("jobs:\n  work_quota: 64MB\n")
    assert os.readlink(f"/proc/{d.proc.pid}/exe") == str(inst / "joblet")
    shutil.copy2(os.path.join(BUILD, "joblet"), inst / "joblet.dpkg-new")
    os.rename(inst / "joblet.dpkg-new", inst / "joblet")
    wait_for(lambda: os.readlink(f"/proc/{d.proc.pid}/exe").endswith(" (deleted)"), "joblet's executable deleted")
    p = d.rnx("volume", "create", "hv2", "--size=64MB")
    assert p.returncode == 0, p.stdout + p.stderr
    jid = d.rnx("job", "run", "sh", "-c", "df -m /work | tail -n1", check=True).stdout.split()[-1]
    job = d.wait(jid)
    assert job["status"] == "COMPLETED", (job, d.log()[-3000:])
    assert job["work"]["quota_bytes"] > 0, job
    d.rnx("volume", "remove", "hv2", check=True)


def test_a_stop_while_mke2fs_runs_ends_the_helper_and_the_tool(fresh_daemon, tmp_path):
    """joblet stopped (SIGTERM) while a volume's mke2fs runs: the helper is killed (volumes'
    shutdown) and with it the tool (its parent-death signal), none outlives the daemon; the next
    start removes what was left of the volume."""
    need_mke2fs()
    import subprocess
    slow = tmp_path / "slow-mke2fs"
    pidfile = tmp_path / "mke2fs.pid"
    os.chmod(tmp_path, 0o755)
    slow.write_text(f"#!/bin/sh\necho $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}\nexec sleep 600\n")
    slow.chmod(0o755)
    d = fresh_daemon(f"jobs:\n  work_quota: 0\nvolumes:\n  mke2fs: {slow}\n")
    creating = subprocess.Popen([os.path.join(BUILD, "rnx"), "volume", "create", "slow", "--size=64MB"],
                                env={"JOBLET_SOCKET": d.sock, "PATH": "/usr/bin:/bin"},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tool = helper = None
    try:
        wait_for(lambda: pidfile.exists(), "mke2fs started")
        tool = int(pidfile.read_text())
        helper = int(open(f"/proc/{tool}/stat").read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{helper}/cmdline", "rb") as f:
            assert f.read().split(b"\0")[1] == b"__diskimg-helper"
        d.stop()
        assert d.proc.returncode == 0, d.log()[-2000:]
        creating.wait(timeout=60)

        def gone(pid):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    return f.read().rsplit(")", 1)[1].split()[0] == "Z"
            except FileNotFoundError:
                return True
        wait_for(lambda: gone(helper) and gone(tool), "the helper and mke2fs ended with joblet")
        d.start()
        names = [v["name"] for v in d.api("GET", "/v1/volumes")[1]["volumes"]]
        assert "slow" not in names, names
    finally:
        for pid in (tool, helper):
            if pid:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
        if creating.poll() is None:
            creating.kill()
            creating.wait()


def test_joblet_started_with_fds_0_to_2_closed_opens_them_on_dev_null(fresh_daemon):
    """Started with its stdin, stdout and stderr closed (a careless init script, `joblet <&- >&-
    2>&-`), joblet opens them on /dev/null first: otherwise the first files it opened took them,
    and its log (stderr) went into whatever got fd 2 (its database, a listening socket, a client's
    connection), and a child spawned with its output at 0-2 lost it. Its jobs and a volume's
    mke2fs (through the helper) run as usual."""
    import subprocess
    import time
    need_mke2fs()
    d = fresh_daemon(start=False)

    def close_std():
        for fd in (0, 1, 2):
            os.close(fd)

    d.proc = subprocess.Popen(
        [os.path.join(BUILD, "joblet"), "--config", d.config, "--state-dir", d.state, "--socket", d.sock,
         "--log-level", "debug"],
        preexec_fn=close_std, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                   **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}})

    def answers():
        if d.proc.poll() is not None:
            raise AssertionError(f"joblet exited at start: {d.proc.returncode}")
        try:
            d.api("GET", "/v1/version")
            return True
        except OSError:
            time.sleep(0.05)
            return False
    wait_for(answers, "joblet to answer", 20)
    for fd in (0, 1, 2):
        assert os.readlink(f"/proc/{d.proc.pid}/fd/{fd}") == "/dev/null", (fd, os.listdir(f"/proc/{d.proc.pid}/fd"))
    d.rnx("volume", "create", "nullfds", "--size=64MB", check=True)
    jid = d.rnx("job", "run", "--volume=nullfds", "sh", "-c", "echo made > /volumes/nullfds/f; cat /volumes/nullfds/f",
                check=True).stdout.split()[-1]
    assert d.wait(jid)["status"] == "COMPLETED"
    assert d.output(jid) == "made\n"
    d.rnx("volume", "remove", "nullfds", check=True)
