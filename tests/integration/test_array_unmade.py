"""An array's tasks not made yet use its volumes too (docs/volumes.md, docs/batch.md), with the real
daemon and rnx as root: a memory volume an array still has tasks to make with is not released
between its tasks, `rnx volume remove` refuses a volume such an array names (naming the array),
and a task that can never be made (its volume gone) ends the array, saying why, instead of being
tried again at every pass of the scheduler while the array stays QUEUED for ever."""
import json
import time

from conftest import wait_array, wait_for
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
    wait_for(lambda: "scratch" not in vols(d), "the memory volume is still listed", 10)
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
    wait_for(lambda: "mem" not in vols(d), "the volume is still listed", 10)
    assert "its next task could not be made" not in d.log(), d.log()[-3000:]


def test_a_task_that_can_never_be_made_ends_the_array_saying_why(fresh_daemon):
    """An array scheduled for later does not keep a memory volume (as a job scheduled for later
    does not): the volume goes with its last other user. When the array's time comes, its task
    can never be made (the volume is gone, and waiting does not bring it back): the array's tasks
    are canceled with the reason, once, not tried again at every pass; rnx job status says why and
    rnx job wait returns."""
    d = fresh_daemon()
    assert d.rnx("volume", "create", "m", "--size=4MB", "--type=memory").returncode == 0
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 6))
    aid = d.rnx("job", "run", "--array=0-4%1", "--volume=m", f"--schedule={when}", "true", check=True).stdout.strip()
    assert d.job(aid)["status"] == "SCHEDULED"
    j, _, err = d.run("true", volumes=["m"])
    assert j["status"] == "COMPLETED", (j, err)
    wait_for(lambda: "m" not in vols(d), "the memory volume is still listed", 10)
    w = d.rnx("job", "wait", aid, timeout=30)
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

