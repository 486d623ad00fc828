"""Batch features (docs/batch.md) under a hostile tester's eye: what a demanding Slurm user
does to a requeued job, and what joblet must then still say and keep."""
import os
import sqlite3

from conftest import DEAF, shim_record, wait_deaf, wait_for


def test_requeued_jobs_second_run_output_is_in_its_log(daemon):
    # docs/batch.md: a requeued job goes back to the queue "with its id, submission order, /work,
    # logs and history". The second run's shim started its log index afresh (end offset 0, seq 1)
    # while its bytes were appended to the same .data file, so the reader, which takes each
    # entry's end as an offset into the whole file, dropped the second run's output or cut it
    d = daemon
    jid = d.submit("sh", "-c", "if [ -e /work/ran ]; then echo second-run-says-more-than-the-first; "
                               "echo and-on-stderr >&2; else touch /work/ran; echo first; echo err-first >&2; fi; "
                               "sleep 600")
    d.wait_status(jid, "RUNNING")
    wait_for(lambda: "first" in d.output(jid), "the first run's output")
    d.rnx("job", "requeue", jid, check=True)
    wait_for(lambda: d.job(jid)["status"] == "RUNNING" and d.job(jid)["preemptions"] == 1, "the second run")
    wait_for(lambda: "and-on-stderr" in d.output(jid, "stderr"), "the second run's output")
    d.rnx("job", "stop", jid, check=True)
    d.wait(jid)
    out = d.output(jid)
    assert out == "first\nsecond-run-says-more-than-the-first\n", out
    assert d.output(jid, "stderr") == "err-first\nand-on-stderr\n"
    # both streams together, in the order they were written: the second run's after the first's
    both = [r["data"] for r in d.logs(jid) if not r.get("end")]
    assert both == ["first\n", "err-first\n", "second-run-says-more-than-the-first\n", "and-on-stderr\n"], both
    assert d.rnx("job", "log", jid).stdout == out


def test_a_kill9_after_a_requeues_stop_never_loses_the_job(fresh_daemon):
    # docs/batch.md: "If joblet restarts while the stop runs (kill -9 included), the job still goes
    # back to the queue as asked, --hold and all". job_requeue (core/jobs.c) removes the run's
    # end record at once, but the job's new row (HELD, no shim) reaches the database only at the
    # turn's commit: a kill -9 in between left a row that says STOPPING, requeue asked, its shim
    # gone and no end record, and the next joblet ended the job FAILED (lost). The window is made
    # wide here by holding the database's write lock from outside while the stop ends (each
    # commit then fails after its busy timeout); seen without it about one time in four
    d = fresh_daemon()
    jid = d.submit(*DEAF)                                   # ends by the grace's SIGKILL
    wait_deaf(d, jid)
    jdir = os.path.join(d.state, "jobs", jid)  # the shim's start record, while the run lasts
    wait_for(lambda: shim_record(jdir, "started"), "the run's start record")
    d.rnx("job", "requeue", "--hold", jid, check=True)  # committed before rnx hears it (docs)
    db = sqlite3.connect(os.path.join(d.state, "joblet.db"), timeout=0, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        # only job_requeue removes the run's records (the end replaced the start), once the shim
        # ended (the grace's SIGKILL)
        wait_for(lambda: not shim_record(jdir, "started") and not shim_record(jdir, "status.json"),
                 "joblet to take the run's end (job_requeue)")
        d.kill9()
    finally:
        db.rollback()
        db.close()
    d.start()
    wait_for(lambda: d.job(jid)["status"] not in ("RUNNING", "STOPPING"), "the restarted joblet to settle it")
    j = d.job(jid)
    assert (j["status"], j["end_reason"], j["preemptions"]) == ("HELD", "requeued", 1), (j["status"], j["error"])
    d.rnx("job", "cancel", jid, check=True)


def test_bytes_no_entry_covers_are_not_taken_into_the_next_runs_log(daemon):
    # a run killed between its two writes (its bytes to .data, then their entry to .idx: the
    # shim SIGKILLed, as a start no row records is at a restart) leaves bytes no entry covers;
    # the next run's shim cuts them off instead of taking them into its first entry
    d = daemon
    jid = d.submit("sh", "-c", "if [ -e /work/ran ]; then echo second; else touch /work/ran; echo first; fi; "
                               "sleep 600")
    d.wait_status(jid, "RUNNING")
    wait_for(lambda: "first" in d.output(jid), "the first run's output")
    with open(os.path.join(d.state, "jobs", jid, "stdout.data"), "ab") as f:
        f.write(b"bytes-no-entry-covers\n")
    d.rnx("job", "requeue", jid, check=True)
    wait_for(lambda: "second" in d.output(jid), "the second run's output")
    assert d.output(jid) == "first\nsecond\n"
    d.rnx("job", "stop", jid, check=True)
    d.wait(jid)
