"""joblet's open files (daemon/main.c files_budget): it raises its soft RLIMIT_NOFILE to the hard
one at start, and runs at once only as many jobs as that limit leaves descriptors for (2 each; half
kept for connections, 64 for its own). Before, under a runner's `ulimit -n 1024` a few hundred
running jobs took every descriptor and the next launches failed ("socketpair: Too many open
files": FAILED, start_failed; the project CI of stops 60 and 61, under ASan)."""
import os
import resource
import shutil
import socket
import subprocess

from conftest import BUILD, wait_for
from test_arrays import LIMITS


def started_with_nofile(fresh_daemon, soft, hard):
    """A daemon of the test's own started under RLIMIT_NOFILE (soft, hard), set in its process
    before its exec (lowering a hard limit needs no privilege; raising one back would)."""
    d = fresh_daemon(LIMITS, start=False)
    d.preexec = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return d.start()


def counts(d, ref):
    return d.api("GET", f"/v1/jobs/{ref}")[1]["array"]["counts"]


def test_jobs_past_the_open_file_limit_wait_and_none_fails(fresh_daemon):
    """Under a hard limit of 200: (100 - 50) / 2 = 25 jobs run at once (half of joblet's half of a
    limit under 256 kept for its own), the other 95 of 120 wait
    QUEUED with a reason naming the limit, and each starts as a running one ends. (Before: ~90 ran
    and the launches past them failed with EMFILE.)"""
    d = started_with_nofile(fresh_daemon, 200, 200)
    assert "at most 25 jobs run at once" in d.log(), d.log()[-3000:]
    assert "joblet_max_running_jobs_files 25\n" in d.metrics_text()
    a = d.rnx("job", "run", "--array=0-119", "sleep", "1000", check=True).stdout.strip()
    wait_for(lambda: counts(d, a) == {"RUNNING": 25, "QUEUED": 95}, "25 run, the rest wait", timeout=120)
    arr = d.api("GET", f"/v1/jobs/{a}")[1]
    assert "open-file limit" in str(arr["array"]["wait"]), arr
    d.rnx("job", "stop", f"{a}_[0-4]", check=True)
    wait_for(lambda: counts(d, a) == {"RUNNING": 25, "QUEUED": 90, "STOPPED": 5}, "5 more started", timeout=120)
    one = d.api("POST", "/v1/jobs", {"command": "true"})[1]
    wait_for(lambda: d.job(one["id"])["status"] == "QUEUED" and "open-file limit" in d.job(one["id"])["wait_reason"],
             "a single job waits too, and says why", timeout=60)
    d.rnx("job", "stop", a, check=True)
    wait_for(lambda: d.job(one["id"])["status"] == "COMPLETED", "it runs once room comes back", timeout=120)
    assert "Too many open files" not in d.log()


def test_the_soft_limit_is_raised_to_the_hard_one(fresh_daemon):
    """Started with 200 of a hard 4096 (as by hand under a shell's 1024 of 524288): joblet raises it
    and says so; 120 jobs all run (before: the launches past ~90 failed with EMFILE); a job's own
    soft limit is the one joblet was started with (a program that closes every descriptor up to
    it would crawl under a hard limit of 2^30), its hard one joblet's, in gVisor too."""
    d = started_with_nofile(fresh_daemon, 200, 4096)
    assert "ulimit -n raised from 200 to its hard limit 4096 (jobs keep 200)" in d.log(), d.log()[-3000:]
    assert "at most 992 jobs run at once" in d.log()
    a = d.rnx("job", "run", "--array=0-119", "sleep", "1000", check=True).stdout.strip()
    wait_for(lambda: counts(d, a) == {"RUNNING": 120}, "all 120 run", timeout=180)
    job, out, err = d.run("sh", "-c", "ulimit -Sn; ulimit -Hn")
    assert job["status"] == "COMPLETED" and out == "200\n4096\n", (job, out, err)
    if shutil.which("runsc"):   # (scripts/install-deps.sh installs it)
        job, out, err = d.run("sh", "-c", "ulimit -Sn; ulimit -Hn", isolation="gvisor", timeout=120)
        assert job["status"] == "COMPLETED" and out == "200\n4096\n", (job, out, err)
    d.rnx("job", "stop", a, check=True)
    assert "Too many open files" not in d.log()


def test_a_launch_without_descriptors_waits_and_runs_once_they_are_back(fresh_daemon):
    """Log followers hold joblet's descriptors (a connection and 4 files each; under a hard limit
    of 200, 36 of them) until fewer than a launch needs are free: a job submitted then waits QUEUED, saying why (SW_FILES), and runs once they
    are gone. (Before: its launch failed part way, "Too many open files", and it ended FAILED,
    start_failed.) An exec then is answered busy (503, nothing started) and rnx asks again until
    it runs (before: EMFILE part way, an error)."""
    d = started_with_nofile(fresh_daemon, 200, 200)
    sleeper = d.submit("sleep", "1000")
    wait_for(lambda: d.job(sleeper)["status"] == "RUNNING", "the followed job runs")

    def free():
        return 200 - len(os.listdir(f"/proc/{d.proc.pid}/fd"))

    held = []
    try:
        while free() > 10:   # each holds a connection and its 4 files (stdout's, stderr's)
            s = socket.socket(socket.AF_UNIX)
            s.connect(d.sock)
            was = free()
            s.sendall(f"GET /v1/jobs/{sleeper}/logs?follow=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            held.append(s)
            wait_for(lambda: free() < was, f"joblet takes follower {len(held)} ({was} descriptors free)")
        one = d.submit("true")
        wait_for(lambda: "descriptors" in (d.job(one).get("wait_reason") or ""), "it waits for descriptors",
                 timeout=60)
        assert d.job(one)["status"] == "QUEUED", d.job(one)
        # an array's tasks are made only to start: none is made meanwhile
        st, arr = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-3"})
        assert st == 201, arr
        wait_for(lambda: "descriptors" in str(d.api("GET", f"/v1/jobs/{arr['id']}")[1]["array"]["wait"]),
                 "the array waits for descriptors", timeout=60)
        assert d.api("GET", f"/v1/jobs/{arr['id']}")[1]["array"]["made"] == 0
        # an exec (6 descriptors) with 3 free: answered busy, nothing started, and rnx asks again
        # until it runs (before: pidfd_open's EMFILE was read as "job ... is ending", 409)
        while free() > 3:   # idle connections: one descriptor each
            was = free()
            s = socket.socket(socket.AF_UNIX)
            s.connect(d.sock)
            held.append(s)
            wait_for(lambda: free() < was, "joblet takes the connection")
        err = open(os.path.join(d.dir, "exec.err"), "w+")
        ex = subprocess.Popen([os.path.join(BUILD, "rnx"), "job", "exec", sleeper, "--", "echo", "inside"],
                              stdout=subprocess.PIPE, stderr=err, text=True, env=d.rnx_env())
        wait_for(lambda: "too few descriptors free to start an exec" in open(err.name).read(),
                 "the exec is answered busy", timeout=60)
        assert ex.poll() is None, open(err.name).read()
    finally:
        for s in held:
            s.close()
    out, _ = ex.communicate(timeout=60)
    assert ex.returncode == 0 and out == "inside\n", (ex.returncode, out, open(err.name).read())
    wait_for(lambda: d.job(one)["status"] == "COMPLETED", "it runs once they are back", timeout=60)
    wait_for(lambda: counts(d, arr["id"]) == {"COMPLETED": 4}, "the array's tasks run too", timeout=60)
    assert "has fewer than 12 descriptors free for its launch" in d.log()
    d.rnx("job", "stop", sleeper, check=True)
