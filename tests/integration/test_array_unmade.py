"""An array's tasks not made yet use its volumes too (docs/volumes.md, docs/batch.md), with the real
daemon and rnx as root: a memory volume an array still has tasks to make with is not released
between its tasks, `rnx volume remove` refuses a volume such an array names (naming the array),
and a task that can never be made (its volume gone) ends the array, saying why, instead of being
tried again at every pass of the scheduler while the array stays QUEUED for ever; one that could
not be made for now (its owner's account look-up failed) is tried again until it is."""
import json
import os
import time

from conftest import local_account, preload_object, rnx_as, wait_array, wait_for
from test_dependencies import GATE, release


def vols(d):
    p = d.rnx("volume", "list", "--json")
    assert p.returncode == 0, p.stderr
    return {v["name"]: v for v in json.loads(p.stdout)}




def test_memory_volume_stays_between_an_arrays_tasks(fresh_daemon):
    """--array=0-9%1: one task at a time, each appending to a file of the memory volume. Task 0's
    end leaves nine tasks to make that name the volume: it stays, and each task sees what the
    ones before it wrote; it goes once the last task ended."""
    d = fresh_daemon()
    p = d.rnx("volume", "create", "scratch", "--size=8MB", "--type=memory")
    assert p.returncode == 0, p.stderr
    aid = d.rnx("job", "run", "--array=0-9%1", "--volume=scratch", "sh", "-c",
                "echo $SLURM_ARRAY_TASK_ID >> /volumes/scratch/log; tr '\\n' ' ' < /volumes/scratch/log",
                check=True).stdout.strip()
    a = wait_array(d, aid)
    assert a["status"] == "COMPLETED" and a["array"]["counts"] == {"COMPLETED": 10}, a
    last = d.rnx("job", "log", f"{aid[:8]}_9", check=True).stdout
    assert last.strip() == "0 1 2 3 4 5 6 7 8 9", last
    # the array ended: nothing keeps the memory volume any more
    wait_for(lambda: "scratch" not in vols(d), "the memory volume is still listed", 60)
    assert "its next task could not be made" not in d.log(), d.log()[-3000:]


def test_volume_remove_refused_while_an_array_has_tasks_to_make(fresh_daemon):
    """An array that waits (--after a job still running) has made no task: no job uses the
    volume, but the array's tasks will. rnx volume remove refuses, naming the array, as it does
    for a job; once the array ended, the volume may go."""
    d = fresh_daemon()
    assert d.rnx("volume", "create", "mem", "--size=4MB", "--type=memory").returncode == 0
    gate = d.rnx("job", "run", "sh", "-c", GATE, check=True).stdout.strip()
    d.wait_status(gate, "RUNNING")
    aid = d.rnx("job", "run", "--array=0-2", f"--after={gate}", "--volume=mem", "sh", "-c",
                "cat /volumes/mem/f", check=True).stdout.strip()
    assert d.job(aid)["status"] == "PENDING"
    # what it says for a job: the same words, naming the array (its short id and status)
    p = d.rnx("volume", "remove", "mem")
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert f"volume 'mem' is in use by 1 job array with tasks not started yet: {aid[:8]}" in p.stderr, p.stderr
    assert "PENDING" in p.stderr, p.stderr
    assert "mem" in vols(d)
    # the volume is still the one the array was submitted with: its tasks use it (and a job
    # that used it and ended does not release it: the array keeps it)
    w, _, err = d.run("sh", "-c", "echo mem > /volumes/mem/f", volumes=["mem"])
    assert w["status"] == "COMPLETED", (w, err)
    assert "mem" in vols(d)
    release(d, gate)
    a = wait_array(d, aid)
    assert a["status"] == "COMPLETED" and a["array"]["counts"] == {"COMPLETED": 3}, a
    assert d.rnx("job", "log", f"{aid[:8]}_2", check=True).stdout == "mem\n"
    # ended: nothing keeps it any more (the memory volume went with the last task)
    wait_for(lambda: "mem" not in vols(d), "the volume is still listed", 60)
    assert "its next task could not be made" not in d.log(), d.log()[-3000:]


def test_a_task_that_can_never_be_made_ends_the_array_saying_why(fresh_daemon):
    """An array scheduled for later does not keep a memory volume (as a job scheduled for later
    does not): the volume goes with its last other user. When the array's time comes, its task
    can never be made (the volume is gone, and waiting does not bring it back): the array's tasks
    are canceled with the reason, once, not tried again at every pass; rnx job status says why and
    rnx job wait returns."""
    d = fresh_daemon()
    assert d.rnx("volume", "create", "m", "--size=4MB", "--type=memory").returncode == 0
    # 20 s ahead: a job with the volume and the volume's removal come first, under a whole run's load
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 20))
    aid = d.rnx("job", "run", "--array=0-4%1", "--volume=m", f"--schedule={when}", "true", check=True).stdout.strip()
    assert d.job(aid)["status"] == "SCHEDULED"
    j, _, err = d.run("true", volumes=["m"])
    assert j["status"] == "COMPLETED", (j, err)
    wait_for(lambda: "m" not in vols(d), "the memory volume is still listed", 15)
    assert d.job(aid)["status"] == "SCHEDULED"   # (its time not come yet: the precondition)
    w = d.rnx("job", "wait", aid, timeout=60)
    assert w.returncode != 0 and f"{aid[:8]} CANCELED" in w.stdout, (w.returncode, w.stdout, w.stderr)
    a = d.job(aid)
    assert a["status"] == "CANCELED" and a["array"]["counts"] == {"CANCELED": 5}, a
    assert "volume 'm' is gone" in (a["array"]["wait"] or ""), a
    st = d.rnx("job", "status", aid, check=True).stdout
    assert "volume 'm' is gone" in st, st
    time.sleep(1)  # passes that would have tried it again
    assert d.log().count("volume 'm' is gone") <= 2, d.log()[-3000:]

    # why is in its row: a restart (kill -9) still says it
    d.kill9()
    d.start()
    a = d.job(aid)
    assert a["status"] == "CANCELED" and "volume 'm' is gone" in (a["array"]["wait"] or ""), a



# getpwuid_r of FAIL_NSS_UID fails (EIO: a directory service away) while the file FAIL_NSS_FLAG is
# there; every other look-up, and that one without the file, is the system's
_FAIL_PWUID = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

int getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t len, struct passwd **out)
{
    static __typeof__(getpwuid_r) *real;
    if (!real)
        real = (__typeof__(getpwuid_r) *)dlsym(RTLD_NEXT, "getpwuid_r");
    const char *u = getenv("FAIL_NSS_UID"), *flag = getenv("FAIL_NSS_FLAG");
    if (u && flag && (uid_t)atol(u) == uid && access(flag, F_OK) == 0) {
        *out = NULL;
        return EIO;
    }
    return real(uid, pw, buf, len, out);
}
"""


def test_a_task_not_made_for_now_is_tried_again_with_nothing_else_to_wake_the_scheduler(fresh_daemon, tmp_path):
    """An array released whole while its owner's account look-up fails (EIO, not "no such
    account"): its next task cannot be made for now (503), which is no reason to cancel it. Nothing
    else happens on the daemon (no job runs, no request but the test's as root, whose account is
    known for account_cache_s): the look-up working again, the task is made all the same, and the
    others after it. The pass that failed asked for no pass after it, and the array stayed QUEUED
    for ever (tried again "as the scheduler passes", which it no longer did)."""
    so = preload_object(tmp_path, _FAIL_PWUID, "failpw")
    flag = tmp_path / "fail"
    with local_account("jtah") as (_, uid, gid):
        d = fresh_daemon("server:\n  account_cache_s: 3600\n",
                         env={"LD_PRELOAD": so, "FAIL_NSS_UID": str(uid), "FAIL_NSS_FLAG": str(flag)})
        p = rnx_as(d, (uid, gid), "job", "run", "--hold", "--array=0-3", "true")
        assert p.returncode == 0, p.stderr
        aid = p.stdout.split()[-1]
        try:
            # a daemon that knows nothing of the account yet: its first look-up fails
            flag.write_text("")
            d.kill9()
            d.start()
            d.rnx("job", "release", aid, check=True)
            wait_for(lambda: "its task 0 could not be made" in d.log(), "the task's making to fail", 60)
            assert d.job(aid)["array"]["counts"] == {"QUEUED": 4}, d.job(aid)
            os.unlink(flag)
            try:
                wait_for(lambda: d.job(aid)["array"]["counts"] == {"COMPLETED": 4}, "the tasks to be made and run",
                         120)
            except AssertionError:
                raise AssertionError(f"{d.job(aid)['array']}\n{d.log()[-3000:]}")
        finally:
            d.rnx("job", "cancel", aid)
