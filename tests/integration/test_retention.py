"""jobs.keep_ended_s (src/core/retention.c, Slurm's MinJobAge): an ended job is deleted that long
after its end, as `rnx job delete` deletes it (row, directory, logs); a job still running stays;
an array's tasks stay until the whole array ended, a workflow's jobs until the workflow ended;
an array with no job left, and a workflow with none, go too. Against the real daemon and rnx."""
import os
import re
import sqlite3
import subprocess
import time
import uuid

import pytest

from conftest import BUILD, DEAF_SH, TERMINAL, Daemon, need_root, wait_deaf, wait_for
from test_workflows import job, submit, wf_get

KEEP_S = 2


@pytest.fixture(scope="module")
def d():
    need_root()
    dm = Daemon(f"jobs:\n  keep_ended_s: {KEEP_S}\n").start()
    yield dm
    dm.cleanup()


def gone(d, ref):
    return d.api("GET", f"/v1/jobs/{ref}")[0] == 404


def status(d, ref):
    code, j = d.api("GET", f"/v1/jobs/{ref}")
    assert code == 200, (ref, j)
    return j["status"]


def made_status(d, ref):
    """An array task's status once its job is made (only as it is scheduled: a 404 before, which a
    loaded sanitizer pass showed at the first look, run 149), None until then."""
    code, j = d.api("GET", f"/v1/jobs/{ref}")
    assert code in (200, 404), (ref, j)
    return j["status"] if code == 200 else None


def test_an_ended_job_goes_after_keep_ended_s_a_running_one_stays(d):
    running = d.submit("sleep", "600")
    ended = d.submit("sh", "-c", "echo some output")
    assert d.wait(ended)["status"] == "COMPLETED"
    jobdir = os.path.join(d.state, "jobs", ended)
    assert os.path.isdir(jobdir)
    wait_for(lambda: gone(d, ended), f"job {ended} deleted {KEEP_S} s after its end")
    assert not os.path.exists(jobdir)                       # its directory and logs with it
    assert ended not in d.rnx("job", "list", check=True).stdout
    assert status(d, running) == "RUNNING"                  # a job not ended is never a candidate
    assert "jobs.keep_ended_s: " in d.log() and " jobs deleted, ended more than 2 s ago" in d.log()
    d.rnx("job", "stop", running, check=True)
    d.wait(running)
    wait_for(lambda: gone(d, running), f"job {running} deleted once it ended too")


def test_an_arrays_tasks_stay_until_the_whole_array_ended(d):
    aid = d.rnx("job", "run", "--array=0-1", "sh", "-c", '[ "$SLURM_ARRAY_TASK_ID" = 1 ] && exec sleep 600; true',
                check=True).stdout.strip()
    wait_for(lambda: made_status(d, f"{aid}_0") == "COMPLETED" and made_status(d, f"{aid}_1") == "RUNNING",
             "task 0 ended, task 1 running")
    # a job that ends after task 0 going shows that a pass looked past task 0's age
    later = d.submit("true")
    d.wait(later)
    wait_for(lambda: gone(d, later), f"job {later} deleted")
    assert status(d, f"{aid}_0") == "COMPLETED"             # kept: its array runs
    assert status(d, f"{aid}_1") == "RUNNING"
    d.rnx("job", "stop", f"{aid}_1", check=True)
    wait_for(lambda: gone(d, f"{aid}_0") and gone(d, f"{aid}_1"), "the array's tasks deleted once it ended")
    wait_for(lambda: gone(d, aid), f"array {aid} deleted with no job left")
    assert aid not in d.rnx("job", "list", check=True).stdout


def test_an_array_canceled_before_any_task_ran_goes_too(d):
    aid = d.rnx("job", "run", "--hold", "--array=0-9", "true", check=True).stdout.strip()
    d.rnx("job", "cancel", aid, check=True)
    assert d.api("GET", f"/v1/jobs/{aid}")[1]["status"] == "CANCELED"
    wait_for(lambda: gone(d, aid), f"array {aid}, canceled whole, deleted {KEEP_S} s after")


def test_a_workflows_jobs_stay_until_the_workflow_ended(d):
    wid = submit(d, "keep", job("first", "true"), job("second", "exec sleep 600", requires=[("first", "COMPLETED")]))["id"]

    def ids():
        return {j["name"]: j.get("job_id") for j in wf_get(d, wid)["jobs"]}
    wait_for(lambda: ids()["second"] and status(d, ids()["second"]) == "RUNNING", "the second job running")
    first, second = ids()["first"], ids()["second"]
    later = d.submit("true")
    d.wait(later)
    wait_for(lambda: gone(d, later), f"job {later} deleted")
    assert status(d, first) == "COMPLETED"                  # kept: its workflow runs
    d.rnx("job", "stop", second, check=True)
    wait_for(lambda: gone(d, first) and gone(d, second), "the workflow's jobs deleted once it ended")
    wait_for(lambda: d.api("GET", f"/v1/workflows/{wid}")[0] == 404, f"workflow {wid} gone with its last job")


def test_a_canceled_workflows_jobs_stay_until_its_last_job_stopped(tmp_path):
    # a canceled workflow says CANCELED at once, while its running jobs are still being stopped
    # (up to jobs.stop_grace_s): its ended jobs stay until the last one ended, as a running one's
    need_root()
    dm = Daemon(f"jobs:\n  keep_ended_s: {KEEP_S}\n  stop_grace_s: 600\n").start()
    try:
        wid = submit(dm, "cancel-keep", job("slow", DEAF_SH),
                     job("after", "true", requires=[("slow", "COMPLETED")]))["id"]

        def ids():
            return {j["name"]: j.get("job_id") for j in wf_get(dm, wid)["jobs"]}
        wait_for(lambda: ids()["slow"], "the first job made")
        wait_deaf(dm, ids()["slow"])                        # (a TERM before its trap ended it: stop 63)
        code, w = dm.api("POST", f"/v1/workflows/{wid}/cancel")
        assert code == 200, w
        assert wf_get(dm, wid)["state"] == "CANCELED"
        slow, after = ids()["slow"], ids()["after"]
        assert status(dm, after) == "CANCELED"
        ended_one_later(dm)
        assert status(dm, slow) == "STOPPING"               # (TERM ignored: 600 s of grace)
        assert status(dm, after) == "CANCELED"              # kept: a job of its workflow still runs
        dm.rnx("job", "kill", "--signal=KILL", slow, check=True)
        wait_for(lambda: gone(dm, slow) and gone(dm, after), "the workflow's jobs deleted once the last ended")
    finally:
        dm.cleanup()


def ended_as(d, ref):
    """The state ref ended in (kept KEEP_S after: seen before it goes)."""
    return wait_for(lambda: d.api("GET", f"/v1/jobs/{ref}")[1].get("status") in TERMINAL
                    and status(d, ref), f"{ref} ended")


def ended_one_later(d):
    """A job ended now and deleted by retention: every job ended before it was past its age in a
    pass since (a pass walks the jobs in submission order: this one last)."""
    later = d.submit("true")
    d.wait(later)
    wait_for(lambda: gone(d, later), f"job {later} deleted")


def test_a_job_a_waiting_job_names_stays_until_it_is_decided(d):
    # Slurm never cancels a job for a dependency MinJobAge purged; here the waiter would be
    # CANCELED "needed job ... to end COMPLETED; it was deleted" though that job completed
    # (done is held until its waiter is linked: ended first, it could go before it was)
    done = d.rnx("job", "run", "--hold", "true", check=True).stdout.strip()
    running = d.submit("sleep", "600")
    waiter = d.rnx("job", "run", f"--after={done}:ok,{running}", "true", check=True).stdout.strip()
    d.rnx("job", "release", done, check=True)
    d.wait(done)
    assert status(d, waiter) == "PENDING"
    ended_one_later(d)
    assert status(d, done) == "COMPLETED"                   # kept: a waiting job names it
    d.rnx("job", "stop", running, check=True)
    assert ended_as(d, waiter) == "COMPLETED", d.job(waiter)
    wait_for(lambda: gone(d, done) and gone(d, waiter), "both deleted once nothing waits on them")


def test_an_array_a_waiting_array_names_stays_until_it_is_decided(d):
    # whole: the array named is not reaped under its waiter, task by task (Slurm's aftercorr):
    # its tasks' jobs are not deleted while the waiter's tasks wait for them
    # named is held until its waiters are linked: had it ended first, retention could delete its
    # tasks' jobs (KEEP_S later) before they were, and corr's task 0 be CANCELED ("its job was
    # deleted", as it should be) -- what a loaded sanitizer pass showed once (run 154)
    named = d.rnx("job", "run", "--hold", "--array=0-1", "true", check=True).stdout.strip()
    none = d.rnx("job", "run", "--hold", "--array=0-1", "true", check=True).stdout.strip()
    d.rnx("job", "cancel", none, check=True)               # no task ran: no job of it to keep
    running = d.submit("sleep", "600")
    whole = d.rnx("job", "run", "--array=0-1", f"--after={named}:ok,{none}:notok,{running}", "true",
                  check=True).stdout.strip()
    corr = d.rnx("job", "run", "--array=0-1%1", f"--after={named}:corr", "sh", "-c",
                 '[ "$SLURM_ARRAY_TASK_ID" = 0 ] && exec sleep 600; true', check=True).stdout.strip()
    d.rnx("job", "release", named, check=True)
    wait_for(lambda: status(d, named) == "COMPLETED", f"array {named} ended")
    wait_for(lambda: made_status(d, f"{corr}_0") not in (None, "PENDING", "QUEUED", "SCHEDULED"),
             "the first task of the task-by-task array started")
    assert status(d, f"{corr}_0") == "RUNNING"
    ended_one_later(d)
    ended_one_later(d)                                      # (an array with no job left: a pass later)
    assert status(d, f"{named}_1") == "COMPLETED"           # kept: waited for
    assert status(d, none) == "CANCELED"                    # kept, with no job left
    d.rnx("job", "stop", running, check=True)
    d.rnx("job", "stop", f"{corr}_0", check=True)
    assert ended_as(d, whole) == "COMPLETED"
    assert ended_as(d, f"{corr}_1") == "COMPLETED"
    wait_for(lambda: gone(d, named) and gone(d, none), "the arrays deleted once nothing waits on them")


def test_a_job_whose_log_is_read_stays_until_the_reader_is_done(d):
    # a slow reader of a large log (rnx job log > file over a slow link) gets all of it; deleted
    # under it, it got 0.5 MB of 30 MB and "the log stream ended before the job did"
    lines = 1_000_000                                       # (7 MB: more than the sockets hold)
    big = d.submit("sh", "-c", f"seq -w 1 {lines}")
    d.wait(big)
    p = subprocess.Popen([os.path.join(BUILD, "rnx"), "job", "log", big], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env={"JOBLET_SOCKET": d.sock, "PATH": "/usr/bin:/bin"})
    try:
        first = p.stdout.read(100)                          # the reader stops, the socket fills
        ended_one_later(d)
        assert status(d, big) == "COMPLETED"                # kept: its log is being read
        out = first + p.stdout.read()
        assert p.wait() == 0, p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert out.count(b"\n") == lines
    wait_for(lambda: gone(d, big), f"job {big} deleted once its reader is done")


def test_keep_ended_s_is_checked(tmp_path):
    need_root()
    dm = Daemon("jobs:\n  keep_ended_s: -1\n")
    try:
        with pytest.raises(RuntimeError) as ex:
            dm.start()
        assert "jobs.keep_ended_s" in str(ex.value), str(ex.value)
    finally:
        dm.cleanup()


def test_a_workflows_array_tasks_stay_until_the_workflow_ended(d):
    """A workflow's array is one of its jobs: its tasks stay, as its other jobs do, until the
    workflow ended (not once the array ended, while another job of the workflow runs)."""
    wid = submit(d, "keep-sweep", job("sweep", "true", array="0-1"), job("long", "exec sleep 600"))["id"]

    def entry(name):
        return next(j for j in wf_get(d, wid)["jobs"] if j["name"] == name)
    wait_for(lambda: entry("sweep")["status"] == "COMPLETED" and entry("long")["status"] == "RUNNING",
             "the sweep ended, the long job running")
    aid, long_id = entry("sweep")["job_id"], entry("long")["job_id"]
    later = d.submit("true")
    d.wait(later)
    wait_for(lambda: gone(d, later), f"job {later} deleted")
    assert status(d, f"{aid}_0") == "COMPLETED" and status(d, f"{aid}_1") == "COMPLETED"  # kept: the workflow runs
    d.rnx("job", "stop", long_id, check=True)
    wait_for(lambda: gone(d, f"{aid}_0") and gone(d, f"{aid}_1") and gone(d, long_id),
             "the workflow's tasks and jobs deleted once it ended")


def test_a_deleted_task_is_not_said_to_be_queued(tmp_path):
    """An array's tasks go keep_ended_s after it ended, the array itself keep_ended_s after it was
    found with no job left: between the two, its task ID_N was answered as a task not made yet
    (QUEUED, 'not started yet'), though it ran and was deleted; it is 404, saying so."""
    need_root()
    keep = 6  # the window between the tasks' delete and the array's
    dm = Daemon(f"jobs:\n  keep_ended_s: {keep}\n").start()
    try:
        aid = dm.rnx("job", "run", "--array=0-1", "true", check=True).stdout.strip()
        wait_for(lambda: dm.api("GET", f"/v1/jobs/{aid}")[1]["array"].get("deleted") == 2, "the tasks deleted",
                 timeout=120)
        code, t = dm.api("GET", f"/v1/jobs/{aid}_0")
        arr = dm.api("GET", f"/v1/jobs/{aid}")[0]
        if arr != 200:
            pytest.skip("the array went too before its task was asked about (a machine too slow for the window)")
        assert code == 404 and "was deleted" in t["error"]["message"], (code, t)
        p = dm.rnx("job", "status", f"{aid}_1")
        assert p.returncode != 0 and "was deleted" in p.stderr and "QUEUED" not in p.stdout, (p.stdout, p.stderr)
    finally:
        dm.cleanup()


def test_a_pass_looks_at_the_jobs_kept_ahead_once_not_once_a_turn(tmp_path):
    """10,000 jobs kept (HELD) ahead, by seq, of 500 due: a pass deletes the 500 in slices of 48 a
    loop turn, each turn going on after the last job the turn before looked at, and looking at
    4,096 jobs at most. Walked from the first job each turn, each of its 11 turns looked at the
    10,000 again (and collected what waiters name, and moved the whole table once per job)."""
    need_root()
    held_n, due_n, looks_max = 10_000, 500, 4096
    dm = Daemon("limits:\n  max_jobs_per_user: 0\n  max_queued_per_user: 0\n").start()
    try:
        held = dm.rnx("job", "run", "--hold", "sleep", "600", check=True).stdout.strip()
        done = dm.submit("true")
        dm.wait(done)
        dm.stop()
        # copies of the two rows, as months of history would leave them: the held ones first
        db = sqlite3.connect(os.path.join(dm.state, "joblet.db"))
        db.row_factory = sqlite3.Row
        cols = [r[1] for r in db.execute("PRAGMA table_info(jobs)")]
        seq = db.execute("SELECT max(seq) FROM (SELECT seq FROM jobs UNION ALL SELECT seq FROM arrays"
                         " UNION ALL SELECT seq FROM workflows)").fetchone()[0] + 1
        rows, dirs = [], []
        long_ago = int(time.time() * 1000) - 86400 * 1000
        for tpl, n in ((dict(db.execute("SELECT * FROM jobs WHERE id = ?", (held,)).fetchone()), held_n),
                       (dict(db.execute("SELECT * FROM jobs WHERE id = ?", (done,)).fetchone()), due_n)):
            for _ in range(n):
                r = dict(tpl, id=str(uuid.uuid4()), seq=seq)
                if r["ended_ms"]:
                    r.update(created_ms=long_ago, joined_ms=long_ago, started_ms=long_ago + 1000,
                             ended_ms=long_ago + 2000)
                    if r.get("spec"):
                        r["spec"] = r["spec"].replace(done, r["id"])
                seq += 1
                rows.append(tuple(r[c] for c in cols))
                dirs.append(r["id"])
        db.execute("BEGIN")
        db.executemany(f"INSERT INTO jobs ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})", rows)
        db.commit()
        db.close()
        for jid in dirs:
            os.makedirs(os.path.join(dm.state, "jobs", jid), mode=0o700, exist_ok=True)
        with open(dm.config) as f:
            text = f.read()
        with open(dm.config, "w") as f:
            f.write(text.replace("jobs:\n", "jobs:\n  keep_ended_s: 60\n", 1))
        dm.start()
        wait_for(lambda: f"jobs.keep_ended_s: {due_n} jobs deleted" in dm.log(), f"the {due_n} due jobs deleted",
                 timeout=300)
        turns = [(int(m.group(1)), int(m.group(2)), m.group(3)) for m in re.finditer(
            r"jobs\.keep_ended_s: a turn looked at (\d+) jobs from seq \d+, deleted (\d+); (more next turn|the pass is done)",
            dm.log())]
        first_pass = turns[:next(i for i, t in enumerate(turns) if t[2] == "the pass is done") + 1]
        looked = [t[0] for t in first_pass]
        assert sum(t[1] for t in first_pass) == due_n, first_pass
        assert max(looked) <= looks_max, first_pass
        # each job once a pass (and the one a full slice stopped at, again the next turn)
        assert sum(looked) <= held_n + due_n + 2 + len(first_pass), (sum(looked), first_pass)
        assert len(first_pass) >= due_n // 48, first_pass
        assert status(dm, held) == "HELD" and status(dm, done) == "COMPLETED"  # (not due: ended a moment ago)
        text = dm.metrics_text()
        assert f'joblet_jobs{{state="HELD"}} {held_n + 1}' in text, text   # the 10,000 kept
        assert 'joblet_jobs{state="COMPLETED"} 1' in text, text
    finally:
        dm.cleanup()
