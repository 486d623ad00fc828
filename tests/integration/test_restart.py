"""Restart survival: jobs outlive their daemon (kill -9 or SIGTERM) and the next daemon picks
them up with complete output and the right exit codes."""
import contextlib
import json
import os
import shutil
import signal
import time

import pytest

from conftest import TERMINAL, preload_object, shim_record, wait_for

LINES = 30


def numbered_job(n, lines=LINES, pause="0.1"):
    """Args for a job that prints `job N line i` lines, then exits with exit_code(n)."""
    return ("sh", "-c", f'for i in $(seq 1 {lines}); do echo "job {n} line $i"; sleep {pause}; done; exit {exit_code(n)}')


def exit_code(n):
    return 0 if n % 5 == 0 else n


def expected_output(n, lines=LINES):
    return "".join(f"job {n} line {i}\n" for i in range(1, lines + 1))


def shim_pid(d, jid):
    """The pid of the process that owns the job (the API's shim_pid)."""
    pid = d.job(jid)["shim_pid"]
    assert pid, f"job {jid} has no shim_pid: {d.job(jid)}"
    return pid


def alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def statuses(d):
    return {j["id"]: j["status"] for j in d.api("GET", "/v1/jobs")[1]["jobs"]}


def test_jobs_survive_daemon_kill9(fresh_daemon):
    """20 running jobs survive kill -9 of the daemon; the next daemon records their exits and full logs."""
    d = fresh_daemon()
    quick = [d.submit("sh", "-c", f"echo quick {k}; exit {k}") for k in range(3)]
    for jid in quick:
        d.wait(jid)
    # 30 lines 0.3 s apart: each job runs 9 s, well past the kill even on a loaded machine (at
    # 0.1 s apart a job could end between the check below and the kill, its shim with it)
    jobs = {n: d.submit(*numbered_job(n, pause="0.3")) for n in range(1, 21)}
    wait_for(lambda: all(s == "RUNNING" for jid, s in statuses(d).items() if jid in jobs.values()),
             "not all 20 jobs RUNNING", 30)
    shims = {jid: shim_pid(d, jid) for jid in jobs.values()}
    # every job must still be running at the kill, or the test proves nothing
    assert all(s == "RUNNING" for jid, s in statuses(d).items() if jid in jobs.values()), statuses(d)

    d.kill9()
    time.sleep(1)
    dead = [jid for jid, pid in shims.items() if not alive(pid)]
    assert dead == [], f"shims ended with their daemon: {dead}"

    d.start()
    for n, jid in jobs.items():
        job = d.wait(jid, timeout=60)
        want = exit_code(n)
        assert job["exit_code"] == want, (n, job)
        assert job["status"] == ("COMPLETED" if want == 0 else "FAILED"), (n, job)
        assert job["end_reason"] == "exit", (n, job)
        assert d.output(jid) == expected_output(n), n
        assert d.output(jid, "stderr") == ""

    p = d.rnx("job", "list", "--json", check=True)
    listed = {j["id"]: j for j in json.loads(p.stdout)}
    assert set(listed) == set(quick) | set(jobs.values())
    for k, jid in enumerate(quick):
        assert listed[jid]["exit_code"] == k
        assert d.output(jid) == f"quick {k}\n"


def test_jobs_that_end_while_daemon_is_down_are_recorded(fresh_daemon):
    """Jobs that exit while no daemon runs are recorded with their exit codes and output on restart."""
    d = fresh_daemon()
    jobs = {code: d.submit("sh", "-c", f"echo begin {code}; sleep 1; echo end {code} >&2; exit {code}")
            for code in (0, 3, 42)}
    for jid in jobs.values():
        d.wait_status(jid, "RUNNING")
    shims = {jid: shim_pid(d, jid) for jid in jobs.values()}
    d.kill9()
    # the jobs are still running now; wait for each to end without any daemon
    wait_for(lambda: not any(alive(pid) for pid in shims.values()), "shims did not finish", 30)
    d.start()
    for code, jid in jobs.items():
        job = d.wait(jid, timeout=30)
        assert job["exit_code"] == code, job
        assert job["status"] == ("COMPLETED" if code == 0 else "FAILED"), job
        assert job["end_reason"] == "exit", job
        assert job["ended_at"] is not None and job["started_at"] is not None
        assert d.output(jid) == f"begin {code}\n"
        assert d.output(jid, "stderr") == f"end {code}\n"


def test_sigterm_of_daemon_leaves_jobs_running(fresh_daemon):
    """SIGTERM stops the daemon but not its jobs; after a restart they finish normally."""
    d = fresh_daemon()
    jid = d.submit(*numbered_job(7, lines=20))
    d.wait_status(jid, "RUNNING")
    pid = shim_pid(d, jid)
    d.stop()
    assert d.proc.returncode == 0, d.log()
    assert alive(pid), "the job's shim ended with the daemon"
    # the job keeps writing output with no daemon around
    out = os.path.join(d.state, "jobs", jid, "stdout.data")

    def written():   # (the shim makes the file at the job's first output: none yet under load)
        return os.path.getsize(out) if os.path.exists(out) else 0
    size = written()
    wait_for(lambda: written() > size, "the job wrote nothing while the daemon was down", 60)
    d.start()
    job = d.wait(jid, timeout=30)
    assert job["status"] == "FAILED" and job["exit_code"] == 7, job
    assert d.output(jid) == expected_output(7, lines=20)


def test_log_follow_across_restart_resumes(fresh_daemon):
    """After a restart, `rnx job log` of a re-adopted job follows it to its end."""
    d = fresh_daemon()
    jid = d.submit(*numbered_job(4, lines=15))
    d.wait_status(jid, "RUNNING")
    d.kill9()
    d.start()
    assert d.job(jid)["status"] in ("RUNNING",) + tuple(TERMINAL)
    p = d.rnx("job", "log", jid, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == expected_output(4, lines=15)
    assert d.job(jid)["exit_code"] == 4


def zygote_pids(d):
    """Pids of the shim zygotes whose parent is this daemon."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if args[:2] == [b"joblet-shim", b"--zygote"] and ppid == d.proc.pid:
            out.append(int(entry))
    return out


def test_killed_shim_zygote_is_replaced_and_jobs_still_start(fresh_daemon):
    """kill -9 of the shim zygote loses no job: the next job starts through a new zygote."""
    d = fresh_daemon()
    before = zygote_pids(d)
    assert len(before) == 1, f"expected one zygote under joblet {d.proc.pid}: {before}"
    os.kill(before[0], 9)
    job, out, _ = d.run("sh", "-c", "echo still starts")
    assert job["status"] == "COMPLETED" and out == "still starts\n", job
    after = zygote_pids(d)
    assert len(after) == 1 and after != before, (before, after)
    assert "restarting the shim zygote" in d.log()


def test_answered_submissions_survive_an_immediate_kill(fresh_daemon):
    """A 201 means the job is in the database: kill -9 right after the answers loses none."""
    d = fresh_daemon()
    ids = [d.submit("true") for _ in range(30)]
    d.kill9()
    d.start()
    listed = {j["id"] for j in d.api("GET", "/v1/jobs")[1]["jobs"]}
    assert set(ids) <= listed


def test_a_directory_half_made_when_joblet_was_killed_is_finished_at_launch(fresh_daemon):
    """A job's directory and its /work are made at the turns after its submission (core/job_dirs.h):
    a joblet killed between the two left a job whose launch failed on its missing /work."""
    d = fresh_daemon()
    gate = d.submit("sleep", "600")
    after = [{"job": gate, "state": "any"}]  # what keeps them waiting across the restart
    half = d.submit("sh", "-c", "echo x > /work/f && cat /work/f", after=after)
    none = d.submit("sh", "-c", "ls /work", after=after)
    deadline = time.time() + 30
    while not all(os.path.isdir(d.work(j)) for j in (half, none)):
        assert time.time() < deadline, "the job directories were never made"
        time.sleep(0.05)
    d.kill9()
    shutil.rmtree(d.work(half))  # the state of a kill between the job's directory and its /work
    shutil.rmtree(os.path.join(d.state, "jobs", none))
    if os.path.lexists(d.work(none)):
        shutil.rmtree(d.work(none))
    d.start()
    d.rnx("job", "stop", gate, check=True)
    job = d.wait(half)
    assert job["status"] == "COMPLETED", job
    assert d.output(half, "stdout") == "x\n"
    assert d.wait(none)["status"] == "COMPLETED"


def locked_db(d):
    """Another process's write lock on the daemon's database: every commit of the daemon's fails
    (busy) until it is rolled back."""
    import sqlite3
    lock = sqlite3.connect(os.path.join(d.state, "joblet.db"), timeout=30, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    return lock


def test_a_database_locked_by_another_process_holds_requests_once_not_at_every_turn(fresh_daemon):
    """Another process holds the database's write lock (a sqlite3 shell left in a transaction):
    each of joblet's turns waited SQLite's busy timeout (5 s) for every statement that wrote, so
    three stops were answered after 10, 35 and 60 s and a list after 145 s. Now the first turn
    that meets the lock waits for it (5 s in all), and until a commit goes through again each
    turn waits 50 ms at most: the stops are refused at once (503: not saved), a list is answered,
    and once the lock is gone the rows kept in memory are written (the jobs STOPPED)."""
    d = fresh_daemon()
    jobs = [d.submit("sleep", "300") for _ in range(4)]
    for j in jobs:
        d.wait_status(j, "RUNNING")
    lock = locked_db(d)
    took = []
    try:
        for j in jobs:
            t = time.monotonic()
            p = d.rnx("job", "stop", j, timeout=300)
            took.append(time.monotonic() - t)
            assert p.returncode == 1 and "database is locked" in p.stderr, p.stderr
        t = time.monotonic()
        assert d.rnx("job", "list", timeout=300).returncode == 0
        took.append(time.monotonic() - t)
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    print("answers with the database locked: " + ", ".join(f"{s:.2f} s" for s in took))
    # the first may wait out the first wait (5 s); none after it waits that long again
    assert max(took[1:]) < 5, took
    for j in jobs:
        assert d.wait(j, 60)["status"] == "STOPPED"


def a_then_b(d):
    """A runs until the test lets it end (let_a_end), B waits on it. (A was `sleep 1`: under a
    whole run's load A could end before the test took the lock, and B's start was committed
    before it: local run 173.)"""
    a = d.submit("sh", "-c", "while [ ! -e /work/go ]; do sleep 0.05; done")
    b = d.submit("sh", "-c", "echo ran", after=[{"job": a}])
    d.wait_status(a, "RUNNING")
    return a, b


def let_a_end(d, a):
    with open(os.path.join(d.work(a), "go"), "w"):
        pass


def forked_while_locked(d, a, b):
    """A ends while the database is locked (locked_db); B, waiting on A, is then started: its
    shim is forked, the row that names it not committed. B's shim pid, once forked: the
    joblet-shim process holding B's directory open (the API cannot answer: the daemon's commits
    wait for the lock)."""
    bdir = os.path.realpath(os.path.join(d.state, "jobs", b))

    def shim():
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() != "joblet-shim":
                        continue
                if any(os.readlink(f"/proc/{pid}/fd/{fd}") == bdir for fd in os.listdir(f"/proc/{pid}/fd")):
                    return int(pid)
            except OSError:
                pass
        return None

    return wait_for(shim, f"job {b}'s shim, started once {a} ended", 90)


@contextlib.contextmanager
def b_started_while_locked(d):
    """A runs and B waits on it; the database is locked (locked_db) and A ends: B is started, the
    row that names its shim not committed. Yields (B, its shim's pid) once B's command has had 2 s
    to run and has not (no start record, no end); the lock is let go on leaving."""
    a, b = a_then_b(d)
    lock = locked_db(d)
    try:
        let_a_end(d, a)
        shim = forked_while_locked(d, a, b)
        bdir = os.path.join(d.state, "jobs", b)
        time.sleep(2)  # what an ungated shim needed to run B (echo) many times over
        assert not shim_record(bdir, "started") and not shim_record(bdir, "status.json"), \
            f"job {b}'s command ran before joblet committed its start"
        assert alive(shim), f"B's shim {shim} ended while it waited: {d.log()[-2000:]}"
        yield b, shim
    finally:
        lock.execute("ROLLBACK")
        lock.close()


def test_a_start_joblet_did_not_commit_runs_nothing_and_runs_once_after_a_restart(fresh_daemon):
    """joblet starts a job (its shim forked, the job's row to be committed at the turn's end) and
    is killed before that commit: here the database is locked by another process, so no commit
    goes through, while job B, waiting on A, is started when A ends. B's shim waits for joblet's
    word that its start is committed (core/job_launch.c: go_committed) and runs nothing; killed
    with joblet, the next joblet finds B waiting, its shim's record saying it ran nothing, and
    starts it: B's command runs once (its output once), never twice."""
    d = fresh_daemon()
    with b_started_while_locked(d) as (b, shim):
        d.kill9()
        wait_for(lambda: not alive(shim), "B's shim to end once joblet was gone", 30)
        assert json.loads(shim_record(os.path.join(d.state, "jobs", b), "status.json"))["end_reason"] == "not_run"
    d.start()
    job = d.wait(b, 60)
    assert job["status"] == "COMPLETED", job
    assert d.output(b) == "ran\n", f"job {b} ran twice: {d.output(b)!r}"
    events = d.api("GET", f"/v1/jobs/{b}?detail=1")[1]["detail"]["events"]
    assert any("ran nothing" in (e.get("detail") or "") for e in events), events
    assert sum(e["event"] == "started" for e in events) == 1, events


_KILL_AT_GO = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
/* joblet's word to a shim (core/job_launch.c: go_committed): one byte 'G', MSG_NOSIGNAL |
 * MSG_DONTWAIT; the process that sends it is killed instead, after the commit before it */
ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    static ssize_t (*real)(int, const void *, size_t, int);
    if (n == 1 && ((const char *)buf)[0] == 'G' && flags == (MSG_NOSIGNAL | MSG_DONTWAIT))
        kill(getpid(), SIGKILL);
    if (!real)
        real = (ssize_t (*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
    return real(fd, buf, n, flags);
}
"""


def test_a_committed_start_whose_shim_was_never_told_runs_once_after_a_restart(fresh_daemon, tmp_path):
    """joblet is killed right after the commit that records a start and before its word to the
    shim (an LD_PRELOAD object kills it at that send). The shim sees joblet gone and runs nothing
    (its record: not_run); the next joblet finds the row naming a shim that ended and takes that
    record as no end at all: the job waits again, starts, and its command runs once."""
    d = fresh_daemon(env={"LD_PRELOAD": preload_object(tmp_path, _KILL_AT_GO, "kill_at_go")})
    a = d.submit("sleep", "1", hold=True)  # (answered before any start)
    b = d.submit("sh", "-c", "echo ran", after=[{"job": a}])
    # A's start, as its release is answered: joblet is killed at its word to A's shim
    try:
        d.api("POST", f"/v1/jobs/{a}/release", {})
    except OSError:
        pass
    assert d.proc.wait(timeout=60) == -signal.SIGKILL, d.log()[-2000:]
    adir = os.path.join(d.state, "jobs", a)
    wait_for(lambda: shim_record(adir, "status.json"), "A's shim to record that it ran nothing", 30)
    assert json.loads(shim_record(adir, "status.json"))["end_reason"] == "not_run"
    d.extra_env = {}
    d.start()
    assert d.wait(a, 60)["status"] == "COMPLETED"
    job = d.wait(b, 60)
    assert job["status"] == "COMPLETED" and d.output(b) == "ran\n", job
    events = d.api("GET", f"/v1/jobs/{a}?detail=1")[1]["detail"]["events"]
    assert any("had not been told that the start was recorded" in (e.get("detail") or "") for e in events), events
    assert sum(e["event"] == "started" for e in events) == 1, events


def test_a_start_waits_for_its_commit_and_runs_once_the_database_takes_it(fresh_daemon):
    """The same start while commits fail, and joblet not killed: B's command waits until a commit
    holds its start (the first retry once the database takes commits again), then runs, once."""
    d = fresh_daemon()
    with b_started_while_locked(d) as (b, _):
        pass
    job = d.wait(b, 120)
    assert job["status"] == "COMPLETED", job
    assert d.output(b) == "ran\n"


_KILL_AT_GO_ARMED = _KILL_AT_GO.replace(
    "#include <unistd.h>", "#include <stdlib.h>\n#include <unistd.h>").replace(
    "flags == (MSG_NOSIGNAL | MSG_DONTWAIT))",
    "flags == (MSG_NOSIGNAL | MSG_DONTWAIT) && getenv(\"KILL_ARM\") && access(getenv(\"KILL_ARM\"), F_OK) == 0)")


@pytest.mark.parametrize("killed", [False, True], ids=["live", "joblet_killed_at_the_word"])
def test_a_job_stopped_while_its_start_waits_for_its_commit_never_runs_its_command(fresh_daemon, tmp_path, killed):
    """B's shim waits for the commit of its start (the database locked) and is stopped meanwhile
    (its SIGTERM pending in the shim). When the word comes, or joblet's end (killed at the word:
    an LD_PRELOAD object armed by a file), the shim runs nothing and records the stop: B ends
    STOPPED and its command never ran (it ran, then was stopped; after the kill it was started
    again from the queue and ran to its end, the stop lost)."""
    env = {}
    arm = tmp_path / "arm"
    if killed:
        env = {"LD_PRELOAD": preload_object(tmp_path, _KILL_AT_GO_ARMED, "kill_at_go"), "KILL_ARM": str(arm)}
    d = fresh_daemon(env=env)
    a, b = a_then_b(d)
    lock = locked_db(d)
    try:
        let_a_end(d, a)
        forked_while_locked(d, a, b)
        # the stop reaches the shim; its commit fails (the lock): 503, as for a running job's
        d.rnx("job", "stop", b, timeout=60)
        if killed:
            arm.write_text("")
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    if killed:
        assert d.proc.wait(timeout=60) == -signal.SIGKILL, d.log()[-2000:]
        d.extra_env = {}
        d.start()
    job = d.wait(b, 60)
    assert job["status"] == "STOPPED", job
    assert d.output(b) == "", f"job {b}'s command ran after it was stopped: {d.output(b)!r}"
    events = d.api("GET", f"/v1/jobs/{b}?detail=1")[1]["detail"]["events"]
    assert not any(e["event"] == "started" for e in events), events
