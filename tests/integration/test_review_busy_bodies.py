"""A hostile read of a copy's body after its helper ended, and of the database locked or read by
another process, through the real daemon (review of dcaf13e, 71cdd67, 8aab041):

- http.c (a copy's body after its helper ended is dropped, not handed back): large bodies, with a
  length or chunked, sent in pieces after the helper refused the path, are answered at once; a
  large chunked tar into a job lands whole;
- db.c (one busy wait per transaction, on_busy): a reader that holds an old snapshot (a sqlite3
  shell, a backup) made every delete's WAL checkpoint wait 5 s on the loop; with the database
  locked by another process, what is answered 201 is there after the lock goes and after a
  restart, and what is refused is not."""
import hashlib
import json
import os
import socket
import sqlite3
import subprocess
import tarfile
import io
import time

import pytest

from conftest import DbLock, UnixHTTPConnection, need_root, need_setpriv, wait_for

MB = 1 << 20


@pytest.fixture(scope="module")
def d():
    need_root()
    need_setpriv()
    from conftest import Daemon
    dm = Daemon("jobs:\n  max_upload_bytes: 64MB\n").start()
    yield dm
    dm.cleanup()


@pytest.fixture(scope="module")
def job(d):
    """A running job with a file in /work."""
    p = d.rnx("--json", "job", "run", "sh", "-c", "printf hi > /work/a.txt && touch /tmp/.ready && exec sleep 300",
              check=True)
    jid = json.loads(p.stdout)["id"]
    d.wait_status(jid, "RUNNING")
    deadline = time.time() + 60
    while d.api("GET", f"/v1/jobs/{jid}/archive?path=/tmp/.ready&stat=1")[0] != 200:
        assert time.time() < deadline, d.job(jid)
        time.sleep(0.2)
    yield jid
    d.rnx("job", "kill", jid)


def helper_running(d):
    return subprocess.run(["pgrep", "-P", str(d.proc.pid), "-f", "joblet-copy"], capture_output=True).returncode == 0


def put_archive(d, jid, path, body, chunked, piece, pause=0.0, wait_helper=False, timeout=30):
    """PUT body into path, in pieces of piece bytes (chunked: each a chunk); the status line's
    code, or the exception met. wait_helper: the body starts once the copy's helper has ended."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(d.sock)
    try:
        length = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(body)}"
        s.sendall(f"PUT /v1/jobs/{jid}/archive?path={path} HTTP/1.1\r\nHost: joblet\r\n"
                  f"Content-Type: application/x-tar\r\n{length}\r\n\r\n".encode())
        if wait_helper:
            deadline = time.time() + 20
            time.sleep(0.1)
            while time.time() < deadline and helper_running(d):
                time.sleep(0.05)
            time.sleep(0.2)
        t = time.monotonic()
        for at in range(0, len(body), piece):
            chunk = body[at:at + piece]
            if chunked:
                s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            else:
                s.sendall(chunk)
            if pause:
                time.sleep(pause)
        if chunked:
            s.sendall(b"0\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            more = s.recv(65536)
            if not more:
                break
            head += more
        took = time.monotonic() - t
        line = head.split(b"\r\n", 1)[0]
        return (int(line.split()[1]) if line.startswith(b"HTTP/1.1 ") else line), head, took
    except OSError as e:
        return repr(e), b"", None
    finally:
        s.close()


@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
@pytest.mark.parametrize("path,code", [("/work/a.txt", 400), ("/work/nothere", 404)], ids=["file", "missing"])
def test_a_large_body_into_a_refused_path_is_answered(d, job, chunked, path, code):
    """The helper refuses the path and ends; 6 MB follow in pieces, some after it ended (the pipe
    full or closed): the refusal comes once the body is in, not after the idle timeout."""
    got, head, took = put_archive(d, job, path, os.urandom(6 * MB), chunked, 200003, pause=0.005,
                                  wait_helper=True)
    assert got == code, (got, head[:300], d.log()[-2000:])


@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
def test_a_large_tar_in_odd_pieces_lands_whole(d, job, chunked):
    """6 MB of a file in a tar, in pieces that are not the pipe's: the helper takes it all (the
    connection waits while the pipe is full) and the file has every byte."""
    data = os.urandom(6 * MB + 17)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        info = tarfile.TarInfo(f"big-{int(chunked)}")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    got, head, took = put_archive(d, job, "/tmp", buf.getvalue(), chunked, 99991)
    assert got == 200, (got, head[:500], d.log()[-2000:])
    code, ans = d.api("GET", f"/v1/jobs/{job}/archive?path=/tmp/big-{int(chunked)}&stat=1")
    assert code == 200 and ans["bytes"] == len(data), ans


# ---- db.c: another process's locks ----

def run_to_end(d, n):
    ids = [d.submit("true") for _ in range(n)]
    for j in ids:
        assert d.wait(j, 60)["status"] == "COMPLETED"
    return ids


def test_deletes_with_a_reader_holding_an_old_snapshot_do_not_each_hold_the_loop(fresh_daemon):
    """A sqlite3 shell (or a backup) left in a read transaction: each delete's commit goes
    through, but its WAL checkpoint (TRUNCATE) waits for that reader, 5 s every time, holding
    the loop: every request waited with it. Like the writes' waits (on_busy), once one such
    wait gave up, the next checkpoints do not wait 5 s again."""
    d = fresh_daemon()
    ids = run_to_end(d, 4)
    reader = sqlite3.connect(os.path.join(d.state, "joblet.db"), timeout=30, isolation_level=None)
    took = []
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM jobs").fetchall()
        for j in ids:
            t = time.monotonic()
            p = d.rnx("job", "delete", j, timeout=120)
            took.append(time.monotonic() - t)
            assert p.returncode == 0, p.stderr
    finally:
        reader.execute("ROLLBACK")
        reader.close()
    print("deletes with a reader open: " + ", ".join(f"{s:.2f} s" for s in took))
    assert max(took[1:]) < 4.5, took   # (a checkpoint that waited would be 5 s)
    # the checkpoint is done again once the reader is gone: the WAL is emptied at the next delete
    more = run_to_end(d, 1)
    assert d.rnx("job", "delete", more[0]).returncode == 0
    assert [j for j in ids + more if d.api("GET", f"/v1/jobs/{j}")[0] != 404] == []


def locked_db(d):
    lock = sqlite3.connect(os.path.join(d.state, "joblet.db"), timeout=30, isolation_level=None,
                           check_same_thread=False)
    lock.execute("BEGIN IMMEDIATE")
    return lock


def test_submissions_while_locked_are_there_once_if_answered_201(fresh_daemon):
    """Submissions while another process holds the write lock, and as it lets it go: each is
    answered 201 (saved) or refused; once the lock is gone, every 201 runs once and no refused
    one exists, and a restart finds exactly those."""
    import threading
    d = fresh_daemon()
    before = d.submit("true")
    d.wait(before, 30)
    lock = locked_db(d)
    answers = []
    gone = threading.Event()

    def let_go():
        lock.execute("ROLLBACK")
        lock.close()
        gone.set()
    retry_after = []
    try:
        for i in range(3):
            c = UnixHTTPConnection(d.sock, timeout=120)
            c.request("POST", "/v1/jobs", body=json.dumps({"command": "sh", "args": ["-c", f"echo run-{i}"]}),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            answers.append((r.status, json.loads(r.read())))
            retry_after.append(r.getheader("Retry-After"))
            c.close()
        threading.Timer(1.0, let_go).start()
        for i in range(3, 30):
            answers.append(d.api("POST", "/v1/jobs", {"command": "sh", "args": ["-c", f"echo run-{i}"]},
                                 timeout=120))
            if gone.is_set() and sum(s == 201 for s, _ in answers) >= 3:
                break
            time.sleep(0.1)
    finally:
        if not gone.wait(10):
            let_go()
    made = [b["id"] for s, b in answers if s == 201]
    refused = [s for s, b in answers if s != 201]
    # refused as a commit that fails is (503: try again), not 500 (a 500 "internal" before)
    assert refused and all(s == 503 for s in refused), answers
    # and says when to (RFC 9110's Retry-After, on every 503)
    assert all(ra == "1" for (s, _), ra in zip(answers, retry_after) if s == 503), (answers, retry_after)
    assert made, answers
    for j in made:
        assert d.wait(j, 60)["status"] == "COMPLETED"
    listed = {j["id"] for j in d.api("GET", "/v1/jobs")[1]["jobs"]} - {before}
    assert listed == set(made), (answers, listed)
    d.kill9()
    d.start()
    ids = {j["id"] for j in d.api("GET", "/v1/jobs")[1]["jobs"]} - {before}
    assert ids == set(made), (answers, ids)
    for j in made:
        assert d.job(j)["status"] == "COMPLETED"
        assert d.output(j).count("run-") == 1, d.output(j)


# ---- depend.c: a deleted dependency looked for only when something was taken out ----

def test_waiters_on_a_dependency_deleted_before_a_restart_are_canceled(fresh_daemon):
    """A ended and is deleted while W (after A and B) and H (the same, held) wait; joblet is killed
    and started (core.removed and every waiter's last look start again at 0): W is canceled at the
    start, H once it is released, though nothing is deleted after the start."""
    d = fresh_daemon()
    a = d.submit("true")
    d.wait(a, 30)
    b = d.submit("sleep", "30")
    d.wait_status(b, "RUNNING")
    w = d.submit("true", after=[{"job": a}, {"job": b}])
    h = d.submit("true", after=[{"job": a}, {"job": b}], hold=True)
    assert d.rnx("job", "delete", a).returncode == 0
    d.kill9()
    d.start()
    assert d.wait(w, 30)["status"] == "CANCELED"
    assert d.api("POST", f"/v1/jobs/{h}/release")[0] == 200
    assert d.wait(h, 30)["status"] == "CANCELED"


def test_a_start_while_another_process_holds_the_lock_for_8_s(fresh_daemon):
    """joblet killed with a job running, started again while another process holds the write lock
    for 8 s (more than one wait of 5 s): it starts, the job's end is recorded once the lock goes,
    and a restart finds it so."""
    import threading
    d = fresh_daemon()
    j = d.submit("sleep", "3")
    d.wait_status(j, "RUNNING")
    d.kill9()
    lock = locked_db(d)
    gone = threading.Event()
    threading.Timer(8, lambda: (lock.execute("ROLLBACK"), lock.close(), gone.set())).start()
    d.start()
    assert d.wait(j, 60)["status"] == "COMPLETED"
    assert gone.wait(30)
    k = d.submit("true")
    assert d.wait(k, 30)["status"] == "COMPLETED"
    time.sleep(1)
    d.kill9()
    d.start()
    assert d.job(j)["status"] == "COMPLETED" and d.job(k)["status"] == "COMPLETED"


def test_rnx_asks_again_while_joblet_says_busy_and_not_when_it_would_not_mend(fresh_daemon):
    """A submission while another process holds the database's write lock for 8 s is answered
    503 "nothing was submitted: try again" with Retry-After (common/err.h jerr_busy): rnx asks
    again, as sbatch does while slurmctld is busy, says so once on stderr, and the job is made
    once the lock goes, once (before: rnx failed, and a sweep's script with it). A 503 that a
    retry would not mend (events.max_streams reached) carries no Retry-After, and rnx does not
    wait on it."""
    import threading
    d = fresh_daemon("events:\n  max_streams: 1\n")
    d.wait(d.submit("true"), 30)
    mark = "busy-" + os.urandom(4).hex()
    lock = locked_db(d)
    threading.Timer(8, lambda: (lock.execute("ROLLBACK"), lock.close())).start()
    p = d.rnx("--json", "job", "run", "--name", mark, "true", timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("is busy") == 1 and "asking again" in p.stderr, p.stderr
    jid = json.loads(p.stdout)["id"]
    assert d.wait(jid, 60)["status"] == "COMPLETED"
    assert [j["id"] for j in d.api("GET", "/v1/jobs")[1]["jobs"] if j.get("name") == mark] == [jid]
    # one event stream open: the next is refused (503) without Retry-After, at once
    held = UnixHTTPConnection(d.sock, timeout=30)
    held.request("GET", "/v1/events")
    assert held.getresponse().status == 200
    try:
        c = UnixHTTPConnection(d.sock, timeout=30)
        c.request("GET", "/v1/events")
        r = c.getresponse()
        assert r.status == 503 and r.getheader("Retry-After") is None, (r.status, r.getheaders())
        c.close()
    finally:
        held.close()


def test_rnx_sends_the_files_again_when_their_submission_finds_the_database_locked(fresh_daemon, tmp_path):
    """rnx job run --upload and rnx workflow run with uploads while another process holds the
    database's write lock for 10 s: the files' PUT is answered 503 busy (its commit found the lock;
    joblet dropped the upload: nothing was made), and rnx submits again, files and all, once the
    pause joblet asks for is over, as it does a submission without files (before: the PUT's 503
    was rnx's answer, and the sweep's script failed). Each is made once, with its files."""
    import threading
    d = fresh_daemon()
    d.wait(d.submit("true"), 30)
    mark = "busy-up-" + os.urandom(4).hex()
    (tmp_path / "data.txt").write_text(mark + "\n")
    # larger than a socket's buffers: the PUT that finds the upload dropped is answered 404 before
    # its body is read, and rnx reads that answer though its send fails
    big = os.urandom(6 << 20)
    (tmp_path / "big.bin").write_bytes(big)
    (tmp_path / "flow.yml").write_text(f"name: {mark}\njobs:\n  show:\n    command: cat\n    args: [data.txt]\n"
                                       "    uploads: [data.txt]\n")
    for what in ("job", "workflow"):
        lock = DbLock(d.state)
        threading.Timer(10, lock.release).start()
        if what == "job":
            p = d.rnx("--json", "job", "run", "--name", mark, "--upload", str(tmp_path / "data.txt"), "--upload",
                      str(tmp_path / "big.bin"), "sh", "-c", "cat data.txt; sha256sum < big.bin", timeout=120)
        else:
            p = d.rnx("--json", "workflow", "run", str(tmp_path / "flow.yml"), timeout=120)
        assert p.returncode == 0, (what, p.stderr)
        assert p.stderr.count("is busy") == 1 and "asking again" in p.stderr, (what, p.stderr)
        made = json.loads(p.stdout)["id"]
        if what == "job":
            assert d.wait(made, 60)["status"] == "COMPLETED"
            assert d.output(made) == f"{mark}\n{hashlib.sha256(big).hexdigest()}  -\n"
            assert [j["id"] for j in d.api("GET", "/v1/jobs")[1]["jobs"] if j.get("name") == mark] == [made]
        else:
            wfs = [w for w in d.api("GET", "/v1/workflows")[1]["workflows"] if w.get("name") == mark]
            assert [w["id"] for w in wfs] == [made], wfs
            jobs = d.api("GET", f"/v1/workflows/{made}")[1]["jobs"]
            assert len(jobs) == 1, jobs
            assert d.wait(jobs[0]["job_id"], 60)["status"] == "COMPLETED"
            assert d.output(jobs[0]["job_id"]) == mark + "\n"
    # the uploads dropped at the locked commits are said in the log
    assert d.log().count("dropped") >= 2, d.log()


def test_arrays_workflows_and_volumes_refused_busy_while_locked_are_not_there(fresh_daemon):
    """While another process holds the database's write lock, an array's, a workflow's and a
    volume's creation (and a volume's removal) are refused as a job's is: 503 "nothing was
    submitted/created/...: try again" with Retry-After, which rnx asks again (before: 500
    "internal", which rnx and scripts take as final). Nothing of the refused ones is there
    afterwards, and each goes through once the lock is gone. (A network's: test_networks, whose
    group owns the host's joblet links.)"""
    d = fresh_daemon()
    mark = "lk" + os.urandom(3).hex()
    tries = [("POST", "/v1/jobs", {"command": "true", "array": "0-3", "name": mark}, "submitted"),
             ("POST", "/v1/workflows", {"name": mark, "jobs": [{"name": "a", "request": {"command": "true"}}]},
              "submitted"),
             ("POST", "/v1/volumes", {"name": mark, "size_mb": 1, "type": "memory"}, "created")]

    lock = DbLock(d.state)
    try:
        for method, path, body, nothing in tries:
            status, retry, ans = d.api_retry_after(method, path, body)
            assert status == 503 and retry == "1", (path, status, retry, ans)
            assert f"nothing was {nothing}" in ans["error"]["message"], ans
    finally:
        lock.release()
    assert [j for j in d.api("GET", "/v1/jobs")[1]["jobs"] if j.get("name") == mark] == []
    assert [w for w in d.api("GET", "/v1/workflows")[1]["workflows"] if w.get("name") == mark] == []
    assert d.api("GET", f"/v1/volumes/{mark}")[0] == 404
    for method, path, body, _ in tries:
        code, ans = d.api(method, path, body)
        assert code == 201, (path, code, ans)
    lock = DbLock(d.state)
    try:
        status, retry, ans = d.api_retry_after("DELETE", f"/v1/volumes/{mark}")
        assert status == 503 and retry == "1" and "nothing was removed" in ans["error"]["message"], ans
    finally:
        lock.release()
    # still there, whole, and removed once asked again
    assert d.api("GET", f"/v1/volumes/{mark}")[0] == 200
    assert d.rnx("volume", "remove", mark).returncode == 0
    # an array none of whose tasks was made (held, then canceled): its delete is refused busy too
    # (it was 500); one whose tasks' jobs went first says how many, without Retry-After (test_review_today)
    code, held = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-3", "hold": True})
    assert code == 201, held
    assert d.api("POST", f"/v1/jobs/{held['id']}/cancel")[0] == 200
    lock = DbLock(d.state)
    try:
        status, retry, ans = d.api_retry_after("DELETE", f"/v1/jobs/{held['id']}")
        assert status == 503 and retry == "1" and "nothing was deleted" in ans["error"]["message"], ans
    finally:
        lock.release()
    assert d.api("GET", f"/v1/jobs/{held['id']}")[0] == 200
    assert d.api("DELETE", f"/v1/jobs/{held['id']}")[0] == 200


def test_a_suspend_whose_commit_failed_is_not_answered_200(fresh_daemon):
    """A suspend is answered once the freezer is done, maybe turns after the one it was made in;
    when that turn's commit failed (another process holds the database's lock), the answer said
    200 all the same: the later turn's commit had nothing of it to fail on. It says "not saved"
    (503) now, as any change a commit could not save; the job is suspended, and its row is
    written once the lock goes (a resume then is answered 200)."""
    d = fresh_daemon()
    j = d.submit("sleep", "60")
    h = d.submit("true", hold=True)
    d.wait_status(j, "RUNNING")
    lock = DbLock(d.state)
    try:
        status, _, ans = d.api_retry_after("POST", f"/v1/jobs/{j}/suspend")
        assert status == 503 and ans["error"]["message"].startswith("not saved: "), (status, ans)
        assert d.job(j)["status"] == "SUSPENDED"
        # a change made in the answer's own turn: "not saved" too, without the refusal's "try
        # again" (it was done: sent again, it would be refused or done twice)
        status, retry, ans = d.api_retry_after("POST", f"/v1/jobs/{h}/update", {"priority": 7})
        assert status == 503 and retry is None and ans["error"]["message"].startswith("not saved: "), ans
        assert "try again" not in ans["error"]["message"], ans
    finally:
        lock.release()
    code, ans = d.api("POST", f"/v1/jobs/{j}/resume")
    assert code == 200 and ans["status"] == "RUNNING", ans
    assert d.api("POST", f"/v1/jobs/{j}/stop")[0] == 200


def test_a_work_filesystem_busy_is_not_said_to_be_the_database(fresh_daemon):
    """A submission whose owner's /work filesystem cannot be mounted because its loop device is
    busy (EBUSY, here: another process holds the device open exclusively) is refused as that
    filesystem's fault, 507, without Retry-After. Before: submit.c turned any EBUSY of its first
    steps into "joblet's database is locked by another process ...; nothing was submitted: try
    again" (503, Retry-After), which rnx asks again for a minute, and which sends an admin to
    the database: only a database write's EBUSY (store/db.c) is the database's."""
    import glob
    import shutil
    if not (os.path.exists("/dev/loop-control") and shutil.which("mke2fs") and shutil.which("losetup")):
        pytest.skip("no loop devices, mke2fs or losetup here: jobs.work_quota cannot be enforced")
    d = fresh_daemon("jobs:\n  work_quota: 64MB\n")
    d.wait(d.submit("true"), 60)  # root's /work filesystem made and mounted
    (image,) = glob.glob(os.path.join(d.state, "work", "*.img"))
    mnt = image[:-len(".img")]
    subprocess.run(["umount", mnt], check=True)
    dev = subprocess.run(["losetup", "--find", "--show", image], capture_output=True, text=True,
                         check=True).stdout.strip()
    fd = None
    try:
        fd = os.open(dev, os.O_RDONLY | os.O_EXCL)  # mount() through it: EBUSY
        c = UnixHTTPConnection(d.sock, timeout=60)
        c.request("POST", "/v1/jobs", body=json.dumps({"command": "true"}),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        status, retry, ans = r.status, r.getheader("Retry-After"), json.loads(r.read())
        c.close()
        msg = ans["error"]["message"]
        assert "database" not in msg and "/work filesystem" in msg, (status, retry, ans)
        assert status == 507 and retry is None, (status, retry, ans)
    finally:
        if fd is not None:
            os.close(fd)
        subprocess.run(["losetup", "-d", dev])
    # the device let go: once it is (a detach while udev still probes the device is deferred to its
    # last close: local run 167 submitted before, and joblet mounted through the device being torn
    # down, EIO), the filesystem is mounted again, and a job runs
    backing = f"/sys/block/{os.path.basename(dev)}/loop/backing_file"

    def detached():
        try:
            with open(backing) as f:
                return f.read().strip() != os.path.realpath(image)
        except OSError:
            return True
    wait_for(detached, f"{dev} detached", timeout=60)
    assert d.wait(d.submit("true"), 60)["status"] == "COMPLETED"


def test_a_loop_device_naming_the_work_image_that_holds_no_filesystem_is_gone_around(fresh_daemon):
    """A loop device whose backing file is the owner's /work image but through which the
    filesystem cannot be mounted, and which nothing holds exclusively, holds no filesystem: a
    device being torn down (local run 167: a detach deferred while udev probed the device, and
    joblet mounted through it, EIO, 507), or here someone's device over the image at an offset.
    joblet attaches the image to a fresh device and the job runs (src/core/diskimg.c); a device
    held exclusively is not gone around (the test above)."""
    import glob
    import shutil
    if not (os.path.exists("/dev/loop-control") and shutil.which("mke2fs") and shutil.which("losetup")):
        pytest.skip("no loop devices, mke2fs or losetup here: jobs.work_quota cannot be enforced")
    d = fresh_daemon("jobs:\n  work_quota: 64MB\n")
    d.wait(d.submit("true"), 60)
    (image,) = glob.glob(os.path.join(d.state, "work", "*.img"))
    mnt = image[:-len(".img")]
    subprocess.run(["umount", mnt], check=True)
    # read-only, 64 KiB in: no ext4 superblock where mount looks for one, and nothing written
    dev = subprocess.run(["losetup", "--find", "--show", "--read-only", "--offset", "65536", image],
                         capture_output=True, text=True, check=True).stdout.strip()
    try:
        job = d.wait(d.submit("sh", "-c", "echo kept > /work/f; cat /work/f"), 60)
        assert job["status"] == "COMPLETED", job
        assert d.output(job["id"]).strip() == "kept"
        said = d.log()
        assert f"mounting it through {dev}, which names it, failed" in said, said[-3000:]
        assert "(attached anew)" in said
        # the filesystem the job wrote is the image's: mounted through a device that is not dev
        with open("/proc/self/mountinfo") as f:
            line = next(x for x in f if f" {mnt} " in x)
        assert dev not in line, line
    finally:
        subprocess.run(["losetup", "-d", dev])
