"""Batch edges a hostile tester found (docs/batch.md): a stop asked while a job is being stopped
to go back to the queue (rnx job requeue, a preemption) ends it, as Slurm's scancel of a job
being requeued does, instead of being refused or taken and then the job running again."""
import time

from conftest import tasks_of, wait_for

# ignores SIGTERM (so is its sleep, which inherits it): a stop lasts jobs.stop_grace_s, 2 s here
DEAF = ["sh", "-c", "trap '' TERM; while :; do sleep 0.2; done"]


def test_a_stop_during_a_requeues_stop_ends_the_job(daemon):
    """`rnx job requeue J` then `rnx job stop J` before the requeue's stop ended: the job ends
    STOPPED. It was refused (409 "job is STOPPING; only a running job can be stopped") and the
    job went back to the queue and ran again, the stop its owner asked for lost."""
    d = daemon
    jid = d.submit(*DEAF)
    try:
        d.wait_status(jid, "RUNNING")
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
