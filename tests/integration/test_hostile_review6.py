"""A hostile review of paths earlier reviews left alone: a copy (`rnx job cp`) out of and into a
job that is deleted meanwhile (by jobs.keep_ended_s or `rnx job delete`). (Terminals and execs
across `rnx job requeue`, a workflow's array across `kill -9` while its tasks are made, and
`rnx job update --after` racing holds and releases were probed too, and held.) Each test checks
one thing found broken; every probe is harmless if it succeeds (the daemon is the test's own, the
files are its jobs')."""
import glob
import io
import os
import subprocess
import tarfile
import threading
import time

from conftest import BUILD, Daemon, UnixHTTPConnection, need_root, wait_for

FILES = 200
MAKE_BIG = f"mkdir /work/big; for i in $(seq 1 {FILES}); do head -c 200000 /dev/urandom > /work/big/f$i; done"


def gone(d, ref):
    return d.api("GET", f"/v1/jobs/{ref}")[0] == 404


def tar_members(data):
    """The entries a tar stream holds, read as far as it goes."""
    n = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r|") as t:
            for _ in t:
                n += 1
    except (tarfile.TarError, EOFError):
        pass
    return n


def slow_copy_out(d, jid, meanwhile):
    """`rnx job cp JID:/work/big -` whose reader stops after 64 KB (the pipes fill) while
    meanwhile() runs, then reads the rest: its exit code, the tar's entries, its stderr."""
    p = subprocess.Popen([os.path.join(BUILD, "rnx"), "job", "cp", f"{jid}:/work/big", "-"], env=d.rnx_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = p.stdout.read(65536)
        meanwhile()
        rest = p.stdout.read()
        err = p.stderr.read().decode(errors="replace")
        rc = p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return rc, tar_members(first + rest), err


def test_a_copy_out_cut_short_by_the_jobs_delete_is_not_said_to_be_whole(tmp_path):
    """`rnx job cp ID:/work/big -` of an ended job (200 files) whose reader is slow, while
    jobs.keep_ended_s deletes the job: rnx exited 0 and the tar it wrote held the directory and 3
    of its 200 files, and joblet's answer was a whole 200 (the chunked stream's last chunk, the
    tar's end blocks). joblet-copy (src/exec/copy_main.c send_out) takes libarchive's ARCHIVE_WARN
    for files that vanished during its walk as success. docs/api.md, "Copying files": "A stream
    that breaks later (a file that vanished) ends without its last chunk, so the client knows it
    is cut short". A job whose log is being read is kept until its reader is done
    (test_retention); a copy is not even told. Either the job stays until the copy ends and it
    is whole, or rnx says it was cut short (a non-zero exit); never a partial copy said whole.
    The same happens with the owner's `rnx job delete` during the copy, and in a running job
    that removes files the copy has not reached yet."""
    need_root()
    d = Daemon("jobs:\n  keep_ended_s: 2\n").start()
    try:
        jid = d.submit("sh", "-c", MAKE_BIG)
        assert d.wait(jid, 180)["status"] == "COMPLETED"
        def meanwhile():
            # jobs.keep_ended_s deletes it within ~3 s (a pass every second), unless the copy keeps it
            deadline = time.time() + 8
            while not gone(d, jid) and time.time() < deadline:
                time.sleep(0.1)
            time.sleep(1)

        rc, n, err = slow_copy_out(d, jid, meanwhile)
        assert rc != 0 or n == FILES + 1, \
            f"rnx job cp exited 0 with {n - 1} of {FILES} files (job deleted meanwhile: {gone(d, jid)}); stderr: {err}"
    finally:
        d.cleanup()


def small_files_tar(n, size=100):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for i in range(n):
            ti = tarfile.TarInfo(f"d{i % 20}/f{i}")
            ti.size = size
            t.addfile(ti, io.BytesIO(b"x" * size))
    return buf.getvalue()


def test_a_copy_into_a_job_deleted_meanwhile_leaves_nothing_behind(fresh_daemon):
    """A copy into an ended job's /work (`rnx job cp DIR ID:/work`, 3,000 small files) while
    `rnx job delete ID` deletes the job: the delete answered 200 and the PUT 404, but the copy's
    helper went on writing into the tree being removed, the removal failed (`<state>/work/0/<id>:
    not removed: Directory not empty` in joblet's log) and the job's /work stayed on its owner's
    filesystem, out of any job, until joblet's next start swept it (2 to 4 of 6 tries here). The same
    with jobs.keep_ended_s deleting the job. What a delete leaves of a job is nothing: the copy
    is stopped (its helper ended) before the tree goes, or the delete waits for it."""
    d = fresh_daemon()
    body = small_files_tar(3000)
    deleted = []
    for k in range(6):
        jid = d.submit("true")
        d.wait(jid)
        res = {}

        def put(jid=jid, res=res):
            c = UnixHTTPConnection(d.sock, timeout=120)
            c.request("PUT", f"/v1/jobs/{jid}/archive?path=/work", body=body,
                      headers={"Content-Type": "application/x-tar"})
            r = c.getresponse()
            res["put"] = (r.status, r.read()[:300])

        t = threading.Thread(target=put)
        t.start()
        time.sleep(0.05 + 0.03 * k)                       # (the copy's helper is extracting then)
        code, ans = d.api("DELETE", f"/v1/jobs/{jid}")
        t.join(120)
        if code == 409:                                   # (a delete that waits for the copy: again)
            code, ans = d.api("DELETE", f"/v1/jobs/{jid}")
        assert code == 200, ans
        deleted.append(jid)
    # (trash's thread removes what is left, in the background: up to a minute under a whole run)
    try:
        wait_for(lambda: not [j for j in deleted if glob_work(d, j)], "the deleted jobs' /work removed", 60)
    except AssertionError:
        pass
    left = [j for j in deleted if glob_work(d, j)]
    assert not left, (f"{len(left)} of {len(deleted)} jobs deleted during a copy into them left their /work: "
                      f"{[glob_work(d, j)[0] for j in left]}\n" +
                      "\n".join(ln for ln in d.log().splitlines() if "not removed" in ln))


def glob_work(d, jid):
    """What is left of job jid's /work and directory on disk."""
    return glob.glob(os.path.join(d.state, "work", "*", jid)) + glob.glob(os.path.join(d.state, "jobs", jid))


def test_a_copy_out_of_a_running_job_that_removes_what_it_has_not_reached_is_cut_short(daemon):
    """`rnx job cp ID:/work/big -` of a running job (200 files) whose reader is slow, while the job
    removes the directory: the walk of a directory removed whole reads as an empty one, no
    error, and the copy was said whole with 3 of its 200 files. The helper counts what it sent
    against what its walk found at the start: fewer, and the stream is cut short (rnx exits
    non-zero, saying so; joblet's log says why), as tar says "file removed before we read it"."""
    d = daemon
    jid = d.submit("sh", "-c", MAKE_BIG + "; touch /work/made; while [ ! -e /work/go ]; do sleep 0.05; done; "
                   "rm -rf /work/big; touch /work/removed; sleep 600")
    try:
        work = d.work(jid)
        wait_for(lambda: os.path.exists(os.path.join(work, "made")), "the job's files made", timeout=180)

        def meanwhile():
            open(os.path.join(work, "go"), "w").close()
            wait_for(lambda: os.path.exists(os.path.join(work, "removed")), "the job removed /work/big")

        rc, n, err = slow_copy_out(d, jid, meanwhile)
        assert rc != 0 and n < FILES + 1, f"rnx job cp exited {rc} with {n - 1} of {FILES} files; stderr: {err}"
        assert "cut short" in err, err
        wait_for(lambda: "vanished during it: the copy is cut short" in d.log(), "joblet's log says why")
    finally:
        d.rnx("job", "stop", jid)



def test_a_decided_jobs_dependency_keeps_its_state_after_a_restart(fresh_daemon):
    """A job let go by its --after before a kill -9 of joblet is not linked again at the next
    start (nothing to decide): its `after` said job_state null. It says the state of what it
    named, by id, and DELETED once that is deleted."""
    d = fresh_daemon()
    a = d.submit("true")
    d.wait(a)
    b = d.rnx("job", "run", f"--after={a}:ok", "true", check=True).stdout.strip()
    assert d.wait(b)["status"] == "COMPLETED"
    d.kill9()
    d.start()
    assert [x["job_state"] for x in d.job(b)["after"]] == ["COMPLETED"], d.job(b)["after"]
    d.rnx("job", "delete", a, check=True)
    assert [x["job_state"] for x in d.job(b)["after"]] == ["DELETED"], d.job(b)["after"]


def test_an_attach_whose_run_is_requeued_says_the_job_goes_on(daemon):
    """`rnx job attach` to a job that `rnx job requeue` sends back to the queue: the session ends
    with the run (its exit code, 143), and rnx said nothing more, as if the job had ended; its
    history said "detached ... : the job ended". rnx says the job went back to the queue and how
    to follow its next run; the history says the run ended and the job went back to the queue."""
    d = daemon
    jid = d.submit("sh", "-c", "while :; do sleep 0.05; done", stdin=True)
    p = subprocess.Popen([os.path.join(BUILD, "rnx"), "job", "attach", "--no-stdin", jid], env=d.rnx_env(),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        d.wait_status(jid, "RUNNING")
        wait_for(lambda: any(e["event"] == "attached" for e in
                             d.api("GET", f"/v1/jobs/{jid}?detail=1")[1]["detail"]["events"]), "the attach")
        d.rnx("job", "requeue", jid, check=True)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    try:
        assert p.returncode == 143, (p.returncode, err)
        assert "goes back to the queue" in err and f"rnx job attach {jid[:8]} follows its next run" in err, err
        events = [(e["event"], e["detail"]) for e in d.api("GET", f"/v1/jobs/{jid}?detail=1")[1]["detail"]["events"]]
        assert ("detached", "by uid 0: its run ended: the job went back to the queue (requeued)") in events, events
    finally:
        d.api("POST", f"/v1/jobs/{jid}/cancel")
        d.api("POST", f"/v1/jobs/{jid}/stop")
