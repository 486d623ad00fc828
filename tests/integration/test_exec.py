"""rnx job exec (issue 29): a new process inside a running job, through the real daemon and its
joblet-exec helper. It sees the job's /work, its processes (the job's PID namespace: its pid 1 is
the job's init), its environment with -e on top, its working directory; its exit code is rnx's;
-it works in a real terminal (tmux, test_terminal.py's Pane); the escape probe run through exec
gets the same outcomes as the job itself; another user gets 403, an ended job 409; the process
dies with the job; each exec is in the job's events.

Every probe is harmless if isolation failed: the escape probe's own guarantees (escape_probe.py),
and the rest only reads."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import BUILD, need_root, need_setpriv, setpriv, wait_for
from test_terminal import Pane, pane_for  # noqa: F401 (a fixture)

RNX = os.path.join(BUILD, "rnx")
OTHER_UID = 4331
HERE = os.path.dirname(os.path.abspath(__file__))


def env_for(d):
    return {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock,
            **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}}


def rnx(d, *args, input=None, uid=None):
    pre = setpriv(uid) if uid is not None else []
    return subprocess.run([*pre, RNX, *args], capture_output=True, text=True, timeout=120, env=env_for(d),
                          input=input)


def running_job(d, script="echo seen > /work/mark; exec sleep 300", *extra, uid=None):
    p = rnx(d, "--json", "job", "run", *extra, "sh", "-c", script, uid=uid)
    assert p.returncode == 0, p.stderr
    jid = json.loads(p.stdout)["id"]
    d.wait_status(jid, "RUNNING")
    wait_for(lambda: os.path.exists(os.path.join(d.work(jid), "mark")), "the job's command runs")
    return jid


def stop(d, jid):
    d.api("POST", f"/v1/jobs/{jid}/kill")
    d.wait(jid)


@pytest.fixture
def job(daemon):
    jid = running_job(daemon, "echo seen > /work/mark; exec sleep 300", "-e", "FROM_SUBMIT=yes")
    yield jid
    stop(daemon, jid)


def test_exec_sees_the_jobs_files_processes_environment_and_workdir(daemon, job):
    p = rnx(daemon, "job", "exec", "-e", "EXTRA=1", job, "sh", "-c",
            "cat /work/mark; pwd; echo $FROM_SUBMIT $EXTRA; cat /proc/1/comm; "
            "for p in /proc/[0-9]*; do cat $p/comm; done | sort | tr '\\n' ' '; echo; id -u; hostname")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "seen" and lines[1] == "/work" and lines[2] == "yes 1", lines
    # the job's PID namespace: its init is pid 1, its sleep is there, nothing of the host's
    assert lines[3] == "joblet-init", lines
    assert set(lines[4].split()) >= {"joblet-init", "sleep", "sh"} and len(lines[4].split()) <= 6, lines
    job = daemon.job(job)
    assert lines[5] == str(job["uid"]) and lines[6] == "job-" + job["id"][:8], lines


def test_workdir_flag_and_exit_code(daemon, job):
    p = rnx(daemon, "job", "exec", "-w", "/tmp", job, "pwd")
    assert (p.returncode, p.stdout) == (0, "/tmp\n"), p.stderr
    p = rnx(daemon, "job", "exec", job, "sh", "-c", "echo out; echo err >&2; exit 7")
    assert (p.returncode, p.stdout, p.stderr) == (7, "out\n", "err\n")
    p = rnx(daemon, "job", "exec", job, "no-such-command")
    assert p.returncode == 127 and "no-such-command" in p.stderr, p.stderr
    p = rnx(daemon, "job", "exec", "-i", job, "sh", "-c", "cat; echo done", input="piped\n")
    assert (p.returncode, p.stdout) == (0, "piped\ndone\n"), p.stderr


def test_exec_is_in_the_jobs_cgroup_and_its_events(daemon, job):
    p = rnx(daemon, "job", "exec", job, "cat", "/proc/self/cgroup")
    assert p.returncode == 0, p.stderr
    # the job's cgroup namespace: its cgroups are its root, as the job's own processes see them
    init = subprocess.run(["cat", f"/proc/{job_init(daemon, job)}/cgroup"], capture_output=True, text=True).stdout
    assert job in init
    assert all(line.endswith(":/") for line in p.stdout.splitlines() if line.split(":")[1] in ("pids", "memory", "")), \
        p.stdout
    code, detail = daemon.api("GET", f"/v1/jobs/{job}?detail=1")
    execs = [e for e in detail["detail"]["events"] if e["event"] == "exec"]
    assert execs and execs[-1]["detail"] == "by uid 0: cat /proc/self/cgroup", execs


def job_init(d, jid):
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if open(f"/proc/{pid}/comm").read().strip() == "joblet-init" and jid in open(f"/proc/{pid}/cgroup").read():
                    return int(pid)
            except OSError:
                pass
    raise AssertionError(f"job {jid} has no init")


def test_another_user_gets_403_and_an_ended_job_409(daemon, job):
    need_root()
    need_setpriv()
    p = rnx(daemon, "job", "exec", job, "id", uid=OTHER_UID)
    assert p.returncode == 1 and "403" not in p.stdout and "another user's" in p.stderr, p.stderr
    code, body = daemon.api("POST", f"/v1/jobs/{job}/exec", {"command": "id"})
    assert code == 400 and "Upgrade" in body["error"]["message"], body
    p = rnx(daemon, "--json", "job", "run", "true")
    done = json.loads(p.stdout)["id"]
    daemon.wait(done)
    p = rnx(daemon, "job", "exec", done, "true")
    assert p.returncode == 1 and "has ended" in p.stderr, p.stderr


def test_bad_fields_are_named(daemon, job):
    p = rnx(daemon, "job", "exec", "-w", "relative", job, "true")
    assert p.returncode == 2 and "workdir" in p.stderr, p.stderr
    import socket
    for body, field in (({"command": "true", "bogus": 1}, "bogus"), ({"command": "true", "args": "x"}, "args"),
                        ({"command": "true", "env": {"A": 1}}, "env"), ({"args": ["x"]}, "command")):
        s = socket.socket(socket.AF_UNIX)
        s.connect(daemon.sock)
        raw = json.dumps(body).encode()
        s.sendall(f"POST /v1/jobs/{job}/exec HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
                  f"Content-Type: application/json\r\nContent-Length: {len(raw)}\r\n\r\n".encode() + raw)
        got = b""
        while b"\r\n\r\n" not in got or not got.rstrip().endswith(b"}"):
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        s.close()
        assert got.startswith(b"HTTP/1.1 400") and field.encode() in got.split(b"\r\n\r\n", 1)[1], (body, got)


def test_the_exec_dies_with_the_job(daemon):
    jid = running_job(daemon)
    p = subprocess.Popen([RNX, "job", "exec", jid, "sleep", "1000"], env=env_for(daemon), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    wait_for(lambda: count_comm(jid, "sleep") == 2, "the exec'd sleep runs")
    daemon.api("POST", f"/v1/jobs/{jid}/stop")
    out, err = p.communicate(timeout=120)
    assert p.returncode in (137, 143), (p.returncode, err)
    daemon.wait(jid)
    assert count_comm(jid, "sleep") == 0


def comm_of(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""


def cgroup_of(pid):
    try:
        return open(f"/proc/{pid}/cgroup").read()
    except OSError:
        return ""


def count_comm(jid, comm):
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if open(f"/proc/{pid}/comm").read().strip() == comm and jid in open(f"/proc/{pid}/cgroup").read():
                    n += 1
            except OSError:
                pass
    return n


def test_exec_it_in_a_real_terminal(daemon, job, pane_for):
    pane = pane_for({"JOBLET_SOCKET": daemon.sock}, cols=100, rows=30)
    pane.line(f"{RNX} job exec -it -e 'PS1=job$ ' {job} sh; echo rc=$?")
    pane.wait_for(r"^job\$\s*$")
    at = pane.mark()
    pane.line("tty; cat /work/mark")
    pane.wait_for(r"^/dev/pts/\d+\n(.*\n)?seen$", since=at)
    pane.until("stty size", r"^30 100$")
    at = pane.mark()
    pane.line("exit 5")
    pane.wait_for(r"^rc=5$", since=at)
    assert daemon.job(job)["status"] == "RUNNING"


# ---- the escape probe, through exec -------------------------------------------------------------

def test_escape_probe_through_exec_gets_what_the_job_gets(daemon):
    """escape_probe.py run by the job itself and then, in the same job with the same targets,
    through exec: every outcome the same (seccomp, mounts, ptrace and signals of host processes,
    devices, the host's files and sockets ...). The targets are the test's own (escape_probe.py:
    each attempt is harmless if isolation failed)."""
    import contextlib
    import socket
    import test_escape as te
    with contextlib.ExitStack() as cleanups:
        root_target = te.start_host_target(0)
        cleanups.callback(lambda: te.stop(root_target))
        tcp4 = socket.socket()
        tcp4.bind(("127.0.0.1", 0))
        tcp4.listen(8)
        cleanups.callback(tcp4.close)
        abstract = socket.socket(socket.AF_UNIX)
        abstract.bind("\0joblet-exec-escape")
        abstract.listen(8)
        cleanups.callback(abstract.close)
        shm_key, rm_shm = te.make_shm_segment()
        cleanups.callback(rm_shm)
        host_tmp = "/tmp/joblet-exec-escape-secret"
        open(host_tmp, "w").write("host secret\n")
        cleanups.callback(lambda: os.unlink(host_tmp))
        jid = running_job(daemon, "echo seen > /work/mark; while [ ! -e /work/go ]; do sleep 0.05; done; "
                                  "python3 /work/probe.py > /work/job.out 2> /work/job.err; touch /work/job.done; "
                                  "exec sleep 300")
        cleanups.callback(lambda: stop(daemon, jid))
        work = daemon.work(jid)
        shutil.copy(os.path.join(HERE, "escape_probe.py"), os.path.join(work, "probe.py"))
        os.chmod(os.path.join(work, "probe.py"), 0o644)
        cfg = {"host_pids": {"a host process (root)": root_target.pid},
               "sig0_pids": {"the daemon": daemon.proc.pid},
               "host_paths": {"a host /tmp file": host_tmp, "the state directory": daemon.state, "/root": "/root"},
               "tcp4_port": tcp4.getsockname()[1], "tcp6_port": None, "host_ip": te.host_ipv4(), "metadata": False,
               "abstract": "joblet-exec-escape", "daemon_socket": daemon.sock, "shm_key": shm_key,
               "unused_char_major": te.free_major("char"), "unused_block_major": te.free_major("block")}
        with open(os.path.join(work, "cfg.json"), "w") as f:
            json.dump(cfg, f)
        open(os.path.join(work, "go"), "w").close()
        wait_for(lambda: os.path.exists(os.path.join(work, "job.done")), "the job's probe ends", timeout=120)
        as_job = json.loads(open(os.path.join(work, "job.out")).read().splitlines()[-1])
        p = rnx(daemon, "job", "exec", jid, "python3", "/work/probe.py")
        assert p.returncode == 0, p.stderr[-3000:]
        as_exec = json.loads(p.stdout.splitlines()[-1])
        assert len(as_job) > 50 and set(as_exec) == set(as_job)
        # what differs by nature: the job's processes at each moment (the job's sh, then its sleep,
        # all inside the job) and where stdout and stderr go (the job's files, exec's pipes)
        assert set(as_exec["/proc lists only the job's processes"]) <= {"joblet-init", "python3", "sh", "sleep"}
        assert as_exec["descriptors open at start"] == {"0": "/dev/null", "1": "pipe", "2": "pipe"}
        by_nature = {"/proc lists only the job's processes", "descriptors open at start"}
        differ = {k: (as_job[k], as_exec[k]) for k in as_job if as_job[k] != as_exec[k] and k not in by_nature}
        assert differ == {}, differ
        # the host process it aimed at is untouched
        assert root_target.poll() is None


# ---- gVisor: through runsc exec -------------------------------------------------------------------

RUNSC = shutil.which("runsc") or ("/usr/bin/runsc" if os.path.exists("/usr/bin/runsc") else None)
needs_runsc = pytest.mark.skipif(RUNSC is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")


@pytest.fixture
def gvisor_job(daemon):
    jid = running_job(daemon, "echo seen > /work/mark; exec sleep 300", "--isolation=gvisor", "-e", "FROM_SUBMIT=yes")
    yield jid
    stop(daemon, jid)


@needs_runsc
def test_gvisor_exec_sees_the_jobs_files_processes_environment(daemon, gvisor_job):
    p = rnx(daemon, "job", "exec", "-e", "EXTRA=1", gvisor_job, "sh", "-c",
            "cat /work/mark; pwd; echo $FROM_SUBMIT $EXTRA; cat /proc/version; "
            "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done; id -u; "
            "grep CapEff /proc/self/status; hostname")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "seen" and lines[1] == "/work" and lines[2] == "yes 1", lines
    # the Sentry's kernel, not the host's, and its PID namespace: the job's sleep, the exec's sh
    assert "Linux version 4.4.0" in lines[3] and lines[3] != open("/proc/version").read().strip(), lines
    job = daemon.job(gvisor_job)
    uid_at = lines.index(str(job["uid"]))
    procs = lines[4:uid_at]
    assert "sleep 300 " in procs and any(x.startswith("sh -c cat /work/mark") for x in procs), procs
    assert len(procs) <= 4, procs  # the job's and the exec's, nothing of the host's
    assert lines[uid_at + 1].split() == ["CapEff:", "0000000000000000"], lines
    assert lines[uid_at + 2] == "job-" + job["id"][:8], lines


@needs_runsc
def test_gvisor_exec_workdir_stdin_exit_code_and_events(daemon, gvisor_job):
    p = rnx(daemon, "job", "exec", "-w", "/tmp", gvisor_job, "pwd")
    assert (p.returncode, p.stdout) == (0, "/tmp\n"), p.stderr
    p = rnx(daemon, "job", "exec", gvisor_job, "sh", "-c", "echo out; echo err >&2; exit 7")
    assert (p.returncode, p.stdout, p.stderr) == (7, "out\n", "err\n")
    p = rnx(daemon, "job", "exec", "-i", gvisor_job, "sh", "-c", "cat; echo done", input="piped\n")
    assert (p.returncode, p.stdout) == (0, "piped\ndone\n"), p.stderr
    p = rnx(daemon, "job", "exec", gvisor_job, "no-such-command")
    assert p.returncode == 127 and "no-such-command" in p.stderr, p.stderr
    # without -t there is no terminal; with it, the process's stdin is one
    p = rnx(daemon, "job", "exec", gvisor_job, "sh", "-c", "test -t 0 && echo tty || echo none")
    assert p.stdout == "none\n", (p.stdout, p.stderr)
    code, detail = daemon.api("GET", f"/v1/jobs/{gvisor_job}?detail=1")
    execs = [e["detail"] for e in detail["detail"]["events"] if e["event"] == "exec"]
    assert "by uid 0, through runsc exec: sh -c 'echo out; echo err >&2; exit 7'" in execs, execs


@needs_runsc
def test_gvisor_exec_as_soon_as_the_job_runs(daemon):
    """RUNNING comes when runsc run started; its sandbox runs the command a moment later: an exec
    in between waits for it rather than failing on runsc's "loading sandbox"."""
    p = rnx(daemon, "--json", "job", "run", "--isolation=gvisor", "sleep", "300")
    jid = json.loads(p.stdout)["id"]
    try:
        daemon.wait_status(jid, "RUNNING")
        p = rnx(daemon, "job", "exec", jid, "echo", "in")
        assert (p.returncode, p.stdout) == (0, "in\n"), p.stderr
    finally:
        stop(daemon, jid)


@needs_runsc
def test_gvisor_exec_t_gives_a_terminal(daemon, gvisor_job, pane_for):
    pane = pane_for({"JOBLET_SOCKET": daemon.sock}, cols=100, rows=30)
    pane.line(f"{RNX} job exec -it -e 'PS1=gv$ ' {gvisor_job} sh; echo rc=$?")
    pane.wait_for(r"^gv\$\s*$")
    at = pane.mark()
    pane.line("test -t 0 && test -t 1 && echo is-a-tty; cat /work/mark")
    pane.wait_for(r"^is-a-tty\n(.*\n)?seen$", since=at)
    pane.until("stty size", r"^30 100$")
    at = pane.mark()
    pane.line("exit 5")
    pane.wait_for(r"^rc=5$", since=at)
    assert daemon.job(gvisor_job)["status"] == "RUNNING"


@needs_runsc
def test_gvisor_exec_another_user_403_and_ended_job_refused(daemon, gvisor_job):
    need_root()
    need_setpriv()
    p = rnx(daemon, "job", "exec", gvisor_job, "id", uid=OTHER_UID)
    assert p.returncode == 1 and "another user's" in p.stderr, p.stderr
    p = rnx(daemon, "--json", "job", "run", "--isolation=gvisor", "true")
    done = json.loads(p.stdout)["id"]
    daemon.wait(done)
    p = rnx(daemon, "job", "exec", done, "true")
    assert p.returncode == 1 and "has ended" in p.stderr, p.stderr


@needs_runsc
def test_gvisor_exec_ends_with_the_job_and_with_its_client(daemon):
    jid = running_job(daemon, "echo seen > /work/mark; exec sleep 300", "--isolation=gvisor")
    root = os.path.join(daemon.state, "runsc")

    def sandbox_procs():
        # runsc's control socket is in the sandbox's own network namespace (gvisor.c): runsc ps
        # from there, as joblet's runsc commands do
        netns = next((f"/proc/{pid}/ns/net" for pid in os.listdir("/proc") if pid.isdigit() and
                      comm_of(pid) == "runsc" and jid in cgroup_of(pid)), None)
        if not netns:
            return []
        p = subprocess.run(["nsenter", f"--net={netns}", RUNSC, f"--root={root}", "ps", jid], capture_output=True,
                           text=True)
        return [line.split()[-1] for line in p.stdout.splitlines()[1:]] if p.returncode == 0 else []
    # the client goes: the process in the sandbox goes too
    p = subprocess.Popen([RNX, "job", "exec", jid, "sleep", "1001"], env=env_for(daemon), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    wait_for(lambda: sandbox_procs().count("sleep") == 2, "the exec'd sleep runs")
    p.kill()
    p.communicate()
    wait_for(lambda: sandbox_procs().count("sleep") == 1, "the exec'd sleep ends with its client")
    # the job ends: the exec ends with it
    p = subprocess.Popen([RNX, "job", "exec", jid, "sleep", "1002"], env=env_for(daemon), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    wait_for(lambda: sandbox_procs().count("sleep") == 2, "the exec'd sleep runs")
    daemon.api("POST", f"/v1/jobs/{jid}/stop")
    out, err = p.communicate(timeout=120)
    assert p.returncode != 0, (p.returncode, err)
    daemon.wait(jid)
    assert count_comm(jid, "runsc") == 0 and count_comm(jid, "joblet-exec") == 0


def test_execs_per_user_are_bounded_across_jobs(fresh_daemon):
    """limits.exec_sessions_per_user counts one user's running execs in all their jobs: the third
    of a bound of 2 is refused with 429 naming the key, root is not bounded, and one ending frees
    a place."""
    need_root()
    need_setpriv()
    d = fresh_daemon("limits:\n  exec_sessions_per_user: 2\n")
    jobs = [running_job(d, uid=OTHER_UID) for _ in range(2)]
    held = []
    try:
        for jid in jobs:
            held.append(subprocess.Popen([*setpriv(OTHER_UID), RNX, "job", "exec", jid, "sleep", "1000"],
                                         env=env_for(d), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            wait_for(lambda jid=jid: count_comm(jid, "sleep") == 2, "the exec'd sleep runs")
        p = rnx(d, "job", "exec", jobs[0], "true", uid=OTHER_UID)
        assert p.returncode == 1 and f"uid {OTHER_UID} has 2 execs running; limits.exec_sessions_per_user is 2" \
            in p.stderr, p.stderr
        p = rnx(d, "job", "exec", jobs[1], "true")
        assert p.returncode == 0, p.stderr
        held[0].kill()
        held[0].communicate(timeout=120)
        wait_for(lambda: count_comm(jobs[0], "sleep") == 1, "the first exec ends")
        # its place is free once its helper has gone too (the daemon sees the helper end)
        tries = []

        def freed():
            tries.append(rnx(d, "job", "exec", jobs[0], "sh", "-c", "exit 4", uid=OTHER_UID))
            return "limits.exec_sessions_per_user" not in tries[-1].stderr

        wait_for(freed, "a place freed by the first exec's end")
        assert tries[-1].returncode == 4, tries[-1].stderr
    finally:
        for h in held:
            h.kill()
            h.communicate(timeout=120)
        for jid in jobs:
            stop(d, jid)
