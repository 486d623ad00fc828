"""Hostile review of batch 2 (task-by-task array dependencies, the per-owner indexes, suspended
time and the run-time limit, the shim's cost cuts) against the real daemon at log level debug
(where an index that disagrees with a scan aborts joblet)."""
import os
import time

import pytest

from test_arrays import LIMITS, wait_array
from test_dependencies import GATE, release

TERMINAL = {"COMPLETED", "FAILED", "STOPPED", "CANCELED"}


def run(d, *args):
    return d.rnx("job", "run", *args, check=True).stdout.strip()


def test_aftercorr_tasks_canceled_unmade_all_end_and_wake_dependents(fresh_daemon):
    """The array waited on task by task is canceled before any task was made: every task of the
    waiting array is canceled before it is made (more than a pass's 64), the array ends, and a
    job after it is decided (not left PENDING)."""
    d = fresh_daemon(LIMITS)
    gate = run(d, "sh", "-c", GATE)
    d.wait_status(gate, "RUNNING")
    b = run(d, "--array=0-199", f"--after={gate}", "/bin/true")
    a = run(d, "--array=0-199", f"--after={b}:corr", "/bin/true")
    post = run(d, f"--after={a}:any", "/bin/true")
    d.rnx("job", "cancel", b, check=True)
    done = wait_array(d, a, timeout=30)
    assert done["array"]["counts"] == {"CANCELED": 200}, done
    assert d.wait(post, timeout=30)["status"] == "COMPLETED"
    release(d, gate)
    d.wait(gate)


def test_memory_and_memsw_limits_applied_on_v1(fresh_daemon):
    """--max-memory on the hybrid host: the job's memory cgroup has limit_in_bytes and
    memsw.limit_in_bytes (RAM + no swap) both set while it runs."""
    base = "/sys/fs/cgroup/memory"
    if not os.path.exists(os.path.join(base, "memory.memsw.limit_in_bytes")):
        pytest.skip("no cgroup v1 memory controller with swap accounting here")
    d = fresh_daemon()
    j = run(d, "--max-memory=64MB", "sh", "-c", GATE)
    d.wait_status(j, "RUNNING")
    cg = os.path.join(base, d.cgroup_root, d.job_cgroup(j))
    with open(os.path.join(cg, "memory.limit_in_bytes")) as f:
        mem = int(f.read())
    with open(os.path.join(cg, "memory.memsw.limit_in_bytes")) as f:
        memsw = int(f.read())
    release(d, j)
    assert d.wait(j)["status"] == "COMPLETED"
    assert mem == 64 << 20 and memsw == 64 << 20, (mem, memsw)


def test_job_umask_is_the_daemons_not_zero(fresh_daemon):
    """The init's mount plan runs under umask 0: the command gets the umask joblet had (022),
    so what it creates is 0644/0755, not world-writable."""
    d = fresh_daemon()
    job, out, err = d.run("/bin/sh", "-c", "umask; mkdir /work/d; touch /work/f; stat -c %a /work/d /work/f; "
                          "touch /tmp/t; stat -c %a /tmp/t")
    assert job["status"] == "COMPLETED", (job, err)
    assert out.split() == ["0022", "755", "644", "644"], out


@pytest.mark.skipif(not os.path.exists("/usr/bin/runsc") and not os.path.exists("/usr/local/bin/runsc"),
                    reason="runsc is not installed")
def test_gvisor_job_requeued_runs_again_without_the_index_aborting(fresh_daemon):
    """A gVisor job holds a sandbox uid of the range; requeued, it is launched again, which looks
    for a new one (jobs_free_uid) after its old one was cleared: the uid table must agree with a
    scan there, or joblet aborts at log level debug."""
    d = fresh_daemon()
    jid = d.submit("sh", "-c", "echo run; sleep 30", isolation="gvisor")
    d.wait_status(jid, "RUNNING", timeout=60)
    d.rnx("job", "requeue", jid, check=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        assert d.proc.poll() is None, "joblet died:\n" + d.log()[-3000:]
        j = d.job(jid)
        if j["status"] == "RUNNING" and j.get("preemptions", 0) >= 1:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"job never ran again: {d.job(jid)}")
    d.rnx("job", "stop", jid, check=True)
    assert d.wait(jid)["status"] == "STOPPED"
    assert d.proc.poll() is None, d.log()[-3000:]


def test_time_limit_not_left_paused_by_a_kill9_between_the_word_and_the_freeze(fresh_daemon):
    """joblet tells the shim 'suspended' (runtime_limit file, then SIGUSR2) before it freezes the
    cgroup; killed -9 in between, the job runs on thawed with its row RUNNING while its shim's
    clock stands still: the start must tell the shim the word again, or --max-runtime is escaped.
    Here the word is given as joblet gives it, with joblet down."""
    import ctypes
    import signal
    d = fresh_daemon()
    jid = run(d, "--max-runtime=2s", "sh", "-c", "sleep 15; echo done")
    pid = d.wait_status(jid, "RUNNING")["shim_pid"]
    assert pid, "no shim found"
    d.kill9()
    with open(os.path.join(d.state, "jobs", jid, "runtime_limit"), "w") as f:
        f.write(f"{2 | (1 << 32)}\n")
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.sigqueue(ctypes.c_int(pid), ctypes.c_int(signal.SIGUSR2), ctypes.c_void_p(2 | (1 << 32))) == 0
    d.start()
    j = d.wait(jid, timeout=40)
    assert j["status"] != "COMPLETED" and j["end_reason"] != "exit", j
