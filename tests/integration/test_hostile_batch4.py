"""Batch edges a hostile tester found (docs/batch.md): a stop asked while a job is being stopped
to go back to the queue (rnx job requeue, a preemption) ends it, as Slurm's scancel of a job
being requeued does, instead of being refused or taken and then the job running again; an
array's own history (who held, released, updated, suspended or stopped it)."""
import time

from conftest import DEAF, rnx_as, tasks_of, wait_deaf, wait_for

USER = 4391  # a plain uid (setpriv), no /etc/passwd entry needed

# (DEAF: a job that ignores SIGTERM, whose stop lasts jobs.stop_grace_s, 2 s here)


def test_a_stop_during_a_requeues_stop_ends_the_job(daemon):
    """`rnx job requeue J` then `rnx job stop J` before the requeue's stop ended: the job ends
    STOPPED. It was refused (409 "job is STOPPING; only a running job can be stopped") and the
    job went back to the queue and ran again, the stop its owner asked for lost."""
    d = daemon
    jid = d.submit(*DEAF)
    try:
        wait_deaf(d, jid)
        d.rnx("job", "requeue", jid, check=True)
        p = d.rnx("job", "stop", jid)
        assert p.returncode == 0, (p.stdout, p.stderr)
        wait_for(lambda: d.job(jid)["status"] in ("STOPPED", "RUNNING", "QUEUED", "PREEMPTED")
                 and d.job(jid)["status"] != "STOPPING", "the requeue's stop to end", timeout=30)
        time.sleep(1.5)  # a job put back in the queue starts within a pass
        j = d.job(jid)
        assert j["status"] == "STOPPED", (j["status"], j.get("end_reason"), d.events(jid))
        assert any(ev == "stopping" and "requeue" in det for ev, det in d.events(jid)), d.events(jid)
    finally:
        d.rnx("job", "kill", jid)


def test_an_arrays_stop_during_a_tasks_requeue_ends_the_task(daemon):
    """`rnx job stop ARRAY` answers that it stopped the array, counting the task being requeued:
    that task then went back to the queue and ran again after the array was stopped (its other
    tasks canceled), the array left RUNNING."""
    d = daemon
    aid = d.rnx("job", "run", "--array=0-2%1", *DEAF, check=True).stdout.strip()
    try:
        wait_for(lambda: any(t["status"] == "RUNNING" for t in tasks_of(d, aid)), "task 0 running", timeout=60)
        wait_deaf(d, f"{aid[:8]}_0")
        d.rnx("job", "requeue", f"{aid[:8]}_0", check=True)
        d.rnx("job", "stop", aid, check=True)
        wait_for(lambda: d.job(aid)["status"] not in ("RUNNING", "QUEUED"), "the array to end", timeout=30)
        time.sleep(1.5)
        a = d.job(aid)
        t0 = d.job(f"{aid[:8]}_0")
        assert (a["status"], t0["status"]) == ("STOPPED", "STOPPED"), (a["status"], a["array"]["counts"],
                                                                         t0["status"], d.events(t0["id"]))
    finally:
        d.rnx("job", "kill", aid)


def test_an_arrays_history_says_who_held_updated_and_stopped_it(fresh_daemon):
    """docs/batch.md: "Each change is recorded in the job's history with the uid that asked for
    it (`rnx job status --detail ID`)". An array's hold, release, update, suspend and stop were
    recorded nowhere (its tasks not made have no job, so no history): `rnx job status --detail
    ARRAY` said "joblet sent no detail for this job", and an owner whose array an admin held
    could not learn from joblet who did it or when. Its history is its own, kept over a kill -9."""
    d = fresh_daemon()
    aid = rnx_as(d, USER, "job", "run", "--array=0-5%1", "--hold", "sleep", "600").stdout.strip()
    assert aid, "the user's array"
    try:
        assert rnx_as(d, USER, "job", "release", aid).returncode == 0
        assert rnx_as(d, USER, "job", "update", aid, "--throttle=2", "--priority=-4").returncode == 0
        wait_for(lambda: d.job(aid)["array"]["counts"].get("RUNNING") == 2, "two tasks running", timeout=60)
        d.rnx("job", "suspend", f"{aid[:8]}_[0-1]", check=True)
        d.rnx("job", "resume", aid, check=True)
        d.rnx("job", "hold", aid, check=True)  # root on the user's array: an admin's hold
        d.kill9()
        d.start()
        p = rnx_as(d, USER, "job", "status", "--detail", aid)
        assert p.returncode == 0 and "sent no detail" not in p.stderr, (p.stdout, p.stderr)
        code, j = d.api("GET", f"/v1/jobs/{aid}?detail=1")
        assert code == 200 and "detail" in j, j
        evs = [(e["event"], e["uid"], e["detail"]) for e in j["detail"]["events"]]
        names = [e[0] for e in evs]
        assert names == ["submitted", "released", "updated", "suspended", "resumed", "held"], evs
        assert [e[1] for e in evs] == [USER, USER, USER, 0, 0, 0], evs
        assert "0-5%1 -> 0-5%2" in evs[2][2] and "priority 0 -> -4" in evs[2][2], evs[2]
        assert "tasks 0-1 named, 2 of them" in evs[3][2], evs[3]
        assert "--array=0-5%2" in j["detail"]["request"]["flags"], j["detail"]["request"]
        for line in ("submitted  by uid %d" % USER, "held       held by uid 0"):
            assert line in p.stdout, p.stdout
        # a task not made yet: the array's request and history, said so (was "sent no detail")
        p5 = rnx_as(d, USER, "job", "status", "--detail", f"{aid[:8]}_5")
        assert p5.returncode == 0 and "sent no detail" not in p5.stderr, (p5.stdout, p5.stderr)
        assert f"the array's ({aid}): this task is not started yet" in p5.stdout, p5.stdout
        assert "held       held by uid 0" in p5.stdout, p5.stdout
        d.rnx("job", "stop", aid, check=True)
        evs = d.api("GET", f"/v1/jobs/{aid}?detail=1")[1]["detail"]["events"]
        assert (evs[-1]["event"], evs[-1]["uid"]) == ("stopping", 0) and "stopped by uid 0" in evs[-1]["detail"], evs
    finally:
        d.rnx("job", "kill", aid)


def test_a_hold_during_a_requeues_stop_holds_the_job_once_stopped(daemon):
    """`rnx job requeue J` then `rnx job hold J`: the hold was refused while the requeue's stop
    ran (409 "is STOPPING"), and once the stop ended the scheduler started the job again in the
    same turn when there was room, so a hold could never be placed in between. It now makes the
    requeue a requeue --hold: the job waits HELD, held by whoever held it, until released."""
    d = daemon
    jid = d.submit(*DEAF)
    try:
        wait_deaf(d, jid)
        d.rnx("job", "requeue", jid, check=True)
        p = d.rnx("job", "hold", jid)
        assert p.returncode == 0, (p.stdout, p.stderr)
        p = d.rnx("job", "hold", jid)
        # refused either way: held already while the stop runs, or HELD once it ended (its 2 s of
        # grace can pass between the two holds on a loaded machine: the sanitizer pass of local
        # CI run 133)
        assert p.returncode == 1 and ("requeued held already" in p.stderr or f"job {jid} is HELD;" in p.stderr), \
            (p.stdout, p.stderr)
        wait_for(lambda: d.job(jid)["preemptions"] == 1, "the requeue's stop to end", timeout=30)
        time.sleep(1.5)  # a job put back in the queue starts within a pass
        j = d.job(jid)
        assert j["status"] == "HELD" and "held by uid 0" in j["wait_reason"], (j["status"], j.get("wait_reason"))
        d.rnx("job", "release", jid, check=True)
        d.wait_status(jid, "RUNNING")
    finally:
        d.rnx("job", "kill", jid)


def test_a_hold_or_stop_during_a_requeue_outlives_a_kill9(fresh_daemon):
    """The hold and the stop asked during a requeue's stop are in the job's row: a kill -9 of
    joblet right after them and a restart leave one HELD and the other STOPPED, not back in the
    queue as the requeue first said."""
    d = fresh_daemon()
    held, stopped = d.submit(*DEAF), d.submit(*DEAF)
    try:
        wait_deaf(d, held)
        wait_deaf(d, stopped)
        d.rnx("job", "requeue", held, stopped, check=True)
        d.rnx("job", "hold", held, check=True)
        d.rnx("job", "stop", stopped, check=True)
        d.kill9()
        d.start()
        wait_for(lambda: d.job(stopped)["status"] == "STOPPED", "the stopped job's end", timeout=30)
        wait_for(lambda: d.job(held)["status"] == "HELD", "the held job held once stopped", timeout=30)
        time.sleep(1.5)
        assert (d.job(held)["status"], d.job(stopped)["status"]) == ("HELD", "STOPPED")
    finally:
        d.rnx("job", "kill", held)
        d.rnx("job", "kill", stopped)


def test_a_release_during_a_held_requeues_stop_puts_it_back_in_the_queue(daemon):
    """`rnx job requeue --hold J` then `rnx job release J` before the stop ended: the hold is
    taken back and the job runs again once stopped. It was refused (409, "only a held job can be
    released"), to be asked again at the moment the job became HELD. Its owner may not take back
    an admin's hold that way, as they may not release it once HELD."""
    d = daemon
    mine = rnx_as(d, USER, "job", "run", *DEAF).stdout.strip()
    try:
        wait_deaf(d, mine)
        # the owner's own requeue --hold, released during its stop
        assert rnx_as(d, USER, "job", "requeue", "--hold", mine).returncode == 0
        p = rnx_as(d, USER, "job", "release", mine)
        assert p.returncode == 0, (p.stdout, p.stderr)
        wait_for(lambda: d.job(mine)["preemptions"] == 1, "the requeue's stop to end", timeout=30)
        d.wait_status(mine, "RUNNING")
        assert any(ev == "released" and f"uid {USER} while being stopped" in det for ev, det in d.events(mine))
        # an admin's requeue --hold of the user's job: not the owner's to take back
        d.rnx("job", "requeue", "--hold", mine, check=True)
        p = rnx_as(d, USER, "job", "release", mine)
        assert p.returncode != 0 and "an admin's hold" in p.stderr, (p.stdout, p.stderr)
        wait_for(lambda: d.job(mine)["preemptions"] == 2, "the second requeue's stop to end", timeout=30)
        time.sleep(1.5)  # a job put back in the queue starts within a pass
        assert d.job(mine)["status"] == "HELD"
        # an array's task being requeued held: released by naming it
        aid = d.rnx("job", "run", "--array=0-1%1", *DEAF, check=True).stdout.strip()
        wait_for(lambda: any(t["status"] == "RUNNING" for t in tasks_of(d, aid)), "task 0 running", timeout=60)
        wait_deaf(d, f"{aid[:8]}_0")
        d.rnx("job", "requeue", "--hold", f"{aid[:8]}_0", check=True)
        p = d.rnx("job", "release", f"{aid[:8]}_0")
        assert p.returncode == 0, (p.stdout, p.stderr)
        wait_for(lambda: d.job(f"{aid[:8]}_0")["preemptions"] == 1, "the task's stop to end", timeout=30)
        d.wait_status(d.job(f"{aid[:8]}_0")["id"], "RUNNING")
        d.rnx("job", "kill", aid)
    finally:
        d.rnx("job", "kill", mine)


# task 0 runs until stopped; the others end at once
TASK0_WAITS = ["sh", "-c", '[ "$SLURM_ARRAY_TASK_ID" = 0 ] && exec sleep 600; exit 0']


def test_holding_tasks_not_started_yet_splits_them_out_held(fresh_daemon):
    """Slurm's `scontrol hold 123_[5-6]` holds tasks not started yet: they are split out of the
    array's record and wait held while its other tasks go on. `rnx job hold ID_[5-6]` was refused
    (409, "tasks not started yet are held with the whole array"). Now they are made, HELD, kept
    over a kill -9; the rest of the array runs and ends; the array ends once they are released and
    done. Refused, with nothing done: more than 1,000 such tasks at once, an array held whole or
    waiting for its --after."""
    d = fresh_daemon("limits:\n  max_queued_per_user: 5000\n")
    aid = d.rnx("job", "run", "--array=0-7%1", *TASK0_WAITS, check=True).stdout.strip()
    ref = aid[:8]
    try:
        wait_for(lambda: [t["status"] for t in tasks_of(d, aid)] == ["RUNNING"], "task 0 running", timeout=60)
        p = rnx_as(d, 0, "job", "hold", f"{ref}_[5-6]")
        assert p.returncode == 0, (p.stdout, p.stderr)
        held = {t["array"]["task"]: t for t in tasks_of(d, aid) if t["status"] == "HELD"}
        assert sorted(held) == [5, 6], [(t["array"]["task"], t["status"]) for t in tasks_of(d, aid)]
        assert "held by uid 0" in held[5]["wait_reason"], held[5]
        evs = d.api("GET", f"/v1/jobs/{aid}?detail=1")[1]["detail"]["events"]
        assert evs[-1]["event"] == "held" and "tasks 5-6 named, 2 of them" in evs[-1]["detail"], evs[-1]
        d.kill9()
        d.start()
        d.rnx("job", "kill", f"{ref}_0", check=True)   # the others go on, 5 and 6 wait
        wait_for(lambda: sum(t["status"] == "COMPLETED" for t in tasks_of(d, aid)) == 5, "tasks 1-4 and 7",
                 timeout=60)
        states = {t["array"]["task"]: t["status"] for t in tasks_of(d, aid)}
        assert (states[5], states[6]) == ("HELD", "HELD") and d.job(aid)["status"] != "STOPPED", states
        d.rnx("job", "release", f"{ref}_[5-6]", check=True)
        wait_for(lambda: d.job(aid)["status"] == "STOPPED", "the array's end (task 0 was killed)", timeout=60)
        states = {t["array"]["task"]: t["status"] for t in tasks_of(d, aid)}
        assert (states[5], states[6]) == ("COMPLETED", "COMPLETED"), states
    finally:
        d.rnx("job", "kill", aid)
    # refusals, nothing made
    big = d.rnx("job", "run", "--array=0-1999%1", "sleep", "600", check=True).stdout.strip()
    held_whole = d.rnx("job", "run", "--array=0-3", "--hold", "true", check=True).stdout.strip()
    waits = d.rnx("job", "run", "--array=0-3", f"--after={big}:ok", "true", check=True).stdout.strip()
    try:
        wait_for(lambda: len(tasks_of(d, big)) == 1, "the big array's first task", timeout=60)
        p = d.rnx("job", "hold", f"{big[:8]}_[1-1500]")
        assert p.returncode != 0 and "more than 1000 of the tasks named are not started yet" in p.stderr, p.stderr
        assert len(tasks_of(d, big)) == 1
        p = d.rnx("job", "hold", f"{held_whole[:8]}_2")
        assert p.returncode != 0 and "held with the whole array already" in p.stderr, p.stderr
        p = d.rnx("job", "hold", f"{waits[:8]}_2")
        assert p.returncode != 0 and "only once the jobs it waits for have ended" in p.stderr, p.stderr
        assert tasks_of(d, held_whole) == [] and tasks_of(d, waits) == []
    finally:
        for a in (big, held_whole, waits):
            d.rnx("job", "kill", a)


def test_a_cancel_during_a_requeues_stop_ends_the_job_and_the_arrays_task(daemon):
    """`rnx job requeue J` then `rnx job cancel J` (Slurm's scancel of a job being requeued): the
    cancel was refused (409 "is STOPPING; ... (use stop)") though the job was on its way back to
    the queue, and for an array `rnx job cancel ARRAY` canceled the tasks waiting and left the one
    being requeued to go back to the queue and run again. Both now end it there."""
    d = daemon
    jid = d.submit(*DEAF)
    aid = d.rnx("job", "run", "--array=0-2%1", *DEAF, check=True).stdout.strip()
    try:
        wait_deaf(d, jid)
        wait_for(lambda: any(t["status"] == "RUNNING" for t in tasks_of(d, aid)), "task 0 running", timeout=60)
        wait_deaf(d, f"{aid[:8]}_0")
        d.rnx("job", "requeue", jid, f"{aid[:8]}_0", check=True)
        p = d.rnx("job", "cancel", jid)
        assert p.returncode == 0, (p.stdout, p.stderr)
        p = d.rnx("job", "cancel", aid)
        assert p.returncode == 0, (p.stdout, p.stderr)
        wait_for(lambda: d.job(jid)["status"] == "STOPPED" and d.job(aid)["status"] not in ("RUNNING", "QUEUED"),
                 "the job and the array to end", timeout=30)
        time.sleep(1.5)  # a job put back in the queue starts within a pass
        t0 = d.job(f"{aid[:8]}_0")
        assert (d.job(jid)["status"], t0["status"], d.job(aid)["status"]) == ("STOPPED", "STOPPED", "STOPPED"), \
            (d.job(jid)["status"], t0["status"], d.job(aid)["array"]["counts"])
    finally:
        d.rnx("job", "kill", jid)
        d.rnx("job", "kill", aid)
