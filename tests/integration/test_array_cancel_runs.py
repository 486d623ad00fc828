"""Tasks of an array canceled before they start are kept in its row as ranges, the way the tasks
released from a whole hold are: a run of one range of the list's tasks as one range of its step.
They were kept as ranges of step 1 only, so `rnx job cancel ID_[1-601:2]` of an interleaved list
(0-600:2,1-601:2), 301 tasks with a task of the other range between each two, needed 301 ranges
and was refused, 409 "too many separate tasks to cancel before they start". Real daemon, real rnx;
kill -9 of joblet keeps what was canceled; a row written before (ranges of step 1) is read and
added to."""
import os
import sqlite3

from conftest import tasks_of

CFG = "limits:\n  max_queued_per_user: 5000\n  max_jobs_per_user: 5000\n"


def arr(d, aid):
    return d.job(aid)["array"]


def skip_row(d, aid):
    with sqlite3.connect(os.path.join(d.state, "joblet.db")) as c:
        return c.execute("SELECT skip FROM arrays WHERE id = ?", (aid,)).fetchone()[0]


def test_cancel_of_an_interleaved_lists_range_is_one_range(fresh_daemon):
    d = fresh_daemon(CFG)
    aid = d.submit("sh", "-c", "echo $SLURM_ARRAY_TASK_ID", array="0-600:2,1-601:2", hold=True)
    ref = aid[:8]
    p = d.rnx("job", "cancel", f"{ref}_[1-601:2]")
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert "canceled 301 tasks" in p.stdout and "HELD -> CANCELED" in p.stdout, p.stdout
    assert arr(d, aid)["counts"] == {"HELD": 301, "CANCELED": 301}, arr(d, aid)
    assert skip_row(d, aid) == "1-601:2"
    # kept across a kill -9 of joblet
    d.kill9()
    d.start()
    assert arr(d, aid)["counts"] == {"HELD": 301, "CANCELED": 301}, arr(d, aid)
    # a range of step 1 over both: the even ones in it canceled, the odd ones counted once
    p = d.rnx("job", "cancel", f"{ref}_[0-100]")
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert arr(d, aid)["counts"] == {"HELD": 250, "CANCELED": 352}, arr(d, aid)
    assert skip_row(d, aid) == "0-100,101-601:2"
    # tasks canceled one by one, a step of the list's apart, are one range too
    for t in (590, 592, 594):
        d.rnx("job", "cancel", f"{ref}_{t}", check=True)
    assert skip_row(d, aid) == "0-100,101-601:2,590-594:2"
    # tasks 4 apart in a list of step 2 are one range each (123 of them; 590 and 594 were already)
    d.rnx("job", "cancel", f"{ref}_[102-598:4]", check=True)
    assert arr(d, aid)["counts"] == {"HELD": 124, "CANCELED": 478}, arr(d, aid)
    d.kill9()
    d.start()
    assert arr(d, aid)["counts"] == {"HELD": 124, "CANCELED": 478}, arr(d, aid)
    # the rest but 596 and 600 canceled, the array released: only those two run
    d.rnx("job", "cancel", f"{ref}_[0-595]", check=True)
    assert arr(d, aid)["counts"] == {"HELD": 2, "CANCELED": 600}, arr(d, aid)
    d.rnx("job", "release", ref, check=True)
    assert d.wait(aid)["status"] == "CANCELED"
    done = {t["array"]["task"]: d.output(t["id"]).split() for t in tasks_of(d, aid)}
    assert done == {596: ["596"], 600: ["600"]}, done


def test_what_still_cannot_be_kept_is_refused_whole(fresh_daemon):
    """Tasks 4 apart in a list of step 2 are one range each: 501 of them are more than can be kept,
    refused (409), nothing canceled; a run of the list's own step is one range."""
    d = fresh_daemon(CFG)
    aid = d.submit("true", array="0-2000:2", hold=True)
    code, r = d.api("POST", f"/v1/jobs/{aid}_[0-2000:4]/cancel")
    assert code == 409 and "too many separate tasks to cancel before they start" in r["error"]["message"], (code, r)
    assert arr(d, aid)["counts"] == {"HELD": 1001}, arr(d, aid)
    assert skip_row(d, aid) is None
    d.rnx("job", "cancel", f"{aid[:8]}_[0-1000:2]", check=True)
    assert arr(d, aid)["counts"] == {"HELD": 500, "CANCELED": 501}, arr(d, aid)
    assert skip_row(d, aid) == "0-1000:2"
    d.rnx("job", "cancel", aid[:8], check=True)


def test_a_row_kept_before_steps_is_read_and_added_to(fresh_daemon):
    """A row of an older joblet (schema 27): its tasks canceled as ranges of step 1 ("1-3,7"):
    counted as before, and a cancel of a run of the list's step joins them (7 and 9-601:2)."""
    d = fresh_daemon(CFG)
    aid = d.submit("true", array="0-600:2,1-601:2", hold=True)
    d.kill9()
    with sqlite3.connect(os.path.join(d.state, "joblet.db")) as c:
        c.execute("UPDATE arrays SET skip = '1-3,7' WHERE id = ?", (aid,))
        c.execute("PRAGMA user_version=27")  # (that joblet's schema: migrated on start)
    d.start()
    assert "database migrated to schema version 28" in d.log()
    assert arr(d, aid)["counts"] == {"HELD": 598, "CANCELED": 4}, arr(d, aid)
    d.rnx("job", "cancel", f"{aid[:8]}_[9-601:2]", check=True)
    assert arr(d, aid)["counts"] == {"HELD": 301, "CANCELED": 301}, arr(d, aid)
    assert skip_row(d, aid) == "1-3,7-601:2"
    d.kill9()
    d.start()
    assert arr(d, aid)["counts"] == {"HELD": 301, "CANCELED": 301}, arr(d, aid)
    d.rnx("job", "cancel", aid[:8], check=True)
