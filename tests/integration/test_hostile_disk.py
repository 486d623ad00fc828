"""Issue 25, findings 3 and 12: a full state disk, and what a kill -9 leaves behind.

The state directory of each daemon here is a small ext4 filesystem of its own on a loop device
(made and removed by the fixture), so that a test can fill it to the block: the machine's own
disk is never filled. Users are plain uids (setpriv), as in test_hostile_user.py."""
import errno
import os
import sqlite3
import subprocess
import time

import pytest

from conftest import api_as, rnx_as

ALICE = (4331, 4331)
BOB = (4332, 4332)
BLOCK = 4096


@pytest.fixture
def small_state(fresh_daemon):
    """make(config, size_mb, env): a daemon (not started) whose state directory is an ext4 filesystem
    of size_mb on a loop device, no blocks reserved for root. Daemon.cleanup unmounts it and
    detaches the device (release_mounts: everything under the daemon's directory); unmounted
    here too, in case the daemon's cleanup did not run."""
    made = []

    def make(config_text=None, size_mb=96, env=None):
        d = fresh_daemon(config_text, start=False, env=env)
        img = os.path.join(d.dir, "statefs.img")
        with open(img, "wb") as f:
            f.truncate(size_mb << 20)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", img], check=True, capture_output=True)
        os.makedirs(d.state)
        subprocess.run(["mount", "-o", "loop", img, d.state], check=True)
        made.append(d)
        return d

    yield make
    for d in made:
        d.stop()
        subprocess.run(["pkill", "-KILL", "-f", f"joblet-shim {d.state}/"], check=False)
        subprocess.run(["umount", "-R", "-l", d.state], check=False, capture_output=True)


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bfree * st.f_frsize


def fill(state, leave):
    """Fills the filesystem of state with a file of its own until the kernel refuses a byte,
    then gives back `leave` bytes: what is left free is exactly that (to the block)."""
    path = os.path.join(state, "filler")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for chunk in (1 << 20, BLOCK):
            block = b"\0" * chunk
            while True:
                try:
                    os.write(fd, block)
                except OSError as e:
                    assert e.errno == errno.ENOSPC, e
                    break
        os.fsync(fd)
        size = os.fstat(fd).st_size
        os.ftruncate(fd, max(0, size - leave - size % BLOCK))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.sync()  # freed blocks are reusable once the journal has committed the truncate
    return path


def unfill(state):
    try:
        os.unlink(os.path.join(state, "filler"))
    except FileNotFoundError:
        pass
    os.sync()


# ---- finding 3 (a): never 2xx for what is not committed ---------------------------------------

def test_a_full_state_disk_never_acknowledges_what_a_restart_loses(small_state):
    """With no reserve (jobs.state_reserve: 0), the state filesystem is filled to within k
    blocks for k = 0 .. 47 and alice submits a job each time. Whatever each answer is, after
    kill -9 and a restart the jobs that exist are exactly those answered 201; a refusal is a 5xx
    that says the state filesystem is full; and before the restart memory agreed with the
    database (the jobs listed were the same)."""
    d = small_state("jobs:\n  state_reserve: 0\n  work_quota: 0\n")
    d.start()
    acked, refused = [], []
    for k in range(48):
        fill(d.state, k * BLOCK)
        status, body = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "true"})
        if status == 201:
            acked.append(body["id"])
        else:
            refused.append((k, status, body))
            assert status in (500, 503, 507), (k, status, body)
            msg = body["error"]["message"]
            if status == 507:
                assert "state filesystem" in msg and "full" in msg, body
        unfill(d.state)
    status, listing = api_as(d, ALICE, "GET", "/v1/jobs")
    listed_before = sorted(j["id"] for j in listing["jobs"])
    assert refused, "the disk never refused a submission: the test did not fill it"
    assert listed_before == sorted(acked), (listed_before, acked, refused)
    d.kill9()
    d.start()
    status, listing = api_as(d, ALICE, "GET", "/v1/jobs")
    assert status == 200
    after = sorted(j["id"] for j in listing["jobs"])
    assert after == sorted(acked), {"acked_but_lost": sorted(set(acked) - set(after)),
                                    "refused": refused}


def test_array_tasks_made_while_the_database_cannot_be_written_wait_until_it_can(small_state):
    """An array's tasks are made as they start. One made while joblet's database cannot be written
    (its state filesystem full) must not start unrecorded: after a crash its array would make it
    again and it would run twice. Such a task waits and says why (not FAILED for the disk, as it
    was), starts once its row is written, and a kill -9 and restart after that find each task
    once, COMPLETED. A job after the array's start (Slurm's after:) waits for a task to start,
    not to be made: a job it also waits for ends meanwhile, and it is decided again then."""
    d = small_state("jobs:\n  state_reserve: 0\n  work_quota: 0\n")
    d.start()
    # a job that ends when told through its own /tmp (a tmpfs: no room on the full disk needed)
    gate = d.submit("sh", "-c", "while [ ! -e /tmp/go ]; do sleep 0.05; done")
    gate_pid = d.wait_status(gate, "RUNNING")["pid"]
    at = time.time() + 4
    code, a = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-3%2",
                                         "schedule_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))})
    assert code == 201, a
    aid = a["id"]
    code, after = d.api("POST", "/v1/jobs", {"command": "true", "after": [{"job": aid, "state": "started"},
                                                                          {"job": gate, "state": "any"}]})
    assert code == 201 and after["status"] == "PENDING", after
    # a delete checkpoints the WAL down to nothing: the next commit needs blocks of its own
    gone = d.submit("true")
    d.wait(gone)
    assert d.api("DELETE", f"/v1/jobs/{gone}")[0] == 200
    fill(d.state, 0)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            code, t0 = d.api("GET", f"/v1/jobs/{aid[:8]}_0")
            if code == 200 and t0.get("kind") != "task" and time.time() > at + 2:
                break
            time.sleep(0.1)
        assert code == 200 and t0["status"] == "QUEUED", t0
        assert "made while joblet's database could not be written" in (t0["wait_reason"] or ""), t0
        open(f"/proc/{gate_pid}/root/tmp/go", "w").close()
        d.wait(gate)
        time.sleep(2)   # passes go by: none of them starts it
        arr = d.api("GET", f"/v1/jobs/{aid}")[1]
        assert arr["array"]["counts"] == {"QUEUED": 4}, arr
        # the two made wait for their rows, the other two to be made: the array says why
        assert "joblet's database cannot be written: no more of its tasks are made" in (arr["array"]["wait"] or ""), arr
        assert d.job(after["id"])["status"] == "PENDING", d.job(after["id"])
    finally:
        unfill(d.state)
    deadline = time.time() + 120
    while d.api("GET", f"/v1/jobs/{aid}")[1]["array"]["counts"] != {"COMPLETED": 4} and time.time() < deadline:
        time.sleep(0.2)
    assert d.api("GET", f"/v1/jobs/{aid}")[1]["array"]["counts"] == {"COMPLETED": 4}
    assert d.wait(after["id"])["status"] == "COMPLETED"
    d.kill9()
    d.start()
    assert d.api("GET", f"/v1/jobs/{aid}")[1]["array"]["counts"] == {"COMPLETED": 4}
    code, listing = d.api("GET", "/v1/jobs?expand=1")
    tasks = sorted(j["array"]["task"] for j in listing["jobs"] if (j.get("array") or {}).get("id") == aid)
    assert tasks == [0, 1, 2, 3], listing


# ---- finding 3 (c): a reserve for the database ------------------------------------------------

def test_the_reserve_refuses_growth_before_the_disk_is_full_and_says_why(small_state):
    """Below jobs.state_reserve free, every kind of growth a user asks for is refused with a 507
    that names the key, the room left and what to do; what only shrinks (a delete) still works,
    and with room again submissions are taken."""
    d = small_state("jobs:\n  state_reserve: 24MB\n  work_quota: 0\n", size_mb=96)
    d.start()
    status, first = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "true"})
    assert status == 201, first
    d.wait(first["id"])
    fill(d.state, 16 << 20)
    before = d.job_count()
    asks = {
        "job": ("POST", "/v1/jobs", {"command": "true"}),
        "streamed upload": ("POST", "/v1/jobs", {"command": "true", "uploads": [{"path": "f", "size": 4096}]}),
        "workflow": ("POST", "/v1/workflows", {"name": "w", "jobs": [{"name": "a", "request": {"command": "true"}}]}),
        "volume": ("POST", "/v1/volumes", {"name": "v1", "size_mb": 16, "type": "memory"}),
    }
    for what, (method, path, body) in asks.items():
        status, ans = api_as(d, BOB, method, path, body)
        assert status == 507, (what, status, ans)
        msg = ans["error"]["message"]
        assert "jobs.state_reserve (24 MB)" in msg and "MB free" in msg and "rnx job delete" in msg, (what, msg)
    p = rnx_as(d, BOB, "job", "run", "true")
    assert p.returncode != 0 and "jobs.state_reserve" in p.stderr, (p.returncode, p.stderr)
    assert d.job_count() == before
    assert not [n for n in os.listdir(os.path.join(d.state, "jobs")) if n.startswith(".incoming")]
    # a delete frees room, and is taken below the reserve
    status, ans = api_as(d, ALICE, "DELETE", f"/v1/jobs/{first['id']}")
    assert status == 200, ans
    unfill(d.state)
    status, ans = api_as(d, BOB, "POST", "/v1/jobs", {"command": "true"})
    assert status == 201, ans


# ---- finding 12: what a kill -9 leaves is swept at start ---------------------------------------

def cgroup_tree(d):
    """Where the daemon's job cgroups are listed: cgroup2, else the pids controller's tree."""
    for base in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup/pids", "/sys/fs/cgroup"):
        if os.path.isdir(os.path.join(base, d.cgroup_root)):
            return os.path.join(base, d.cgroup_root)
    return None


def test_what_no_database_row_names_is_swept_at_start_and_live_jobs_are_kept(fresh_daemon):
    """Part 1, planted: with the daemon down, a job directory, a /work directory, a gVisor
    bundle and a cgroup (holding a process) named by IDs no job has; a job that still runs
    (re-adopted at start) and an ended one. At start the four go, the process is killed, and
    the two jobs keep everything of theirs. Part 2, for real: kill -9 while a 1,500-job workflow's
    jobs are given their directories (once the first hundred exist): after the restart, every job
    directory and /work directory left is one of a job the daemon knows."""
    d = fresh_daemon("limits:\n  max_queued_per_user: 0\n")   # a workflow of 1,500 jobs below
    ended = d.submit("sh", "-c", "echo kept > /work/f")
    d.wait(ended)
    live = d.submit("sh", "-c", "echo live > /work/f; sleep 60")
    d.wait_status(live, "RUNNING")
    tree = cgroup_tree(d)
    assert tree, "no cgroup tree of the daemon's"
    d.kill9()
    ghosts = [str(__import__("uuid").uuid4()) for _ in range(5)]
    os.makedirs(os.path.join(d.state, "jobs", ghosts[0]))
    with open(os.path.join(d.state, "jobs", ghosts[0], "stdout.data"), "w") as f:
        f.write("left behind")
    workroot = os.path.dirname(d.work(live))
    os.makedirs(os.path.join(workroot, ghosts[1], "deep"))
    os.makedirs(os.path.join(d.state, "runsc", "bundles", ghosts[2]), exist_ok=True)
    level = os.path.join(tree, "user-0")       # root's jobs' level (exec/cgroup.h, cg_user_host)
    assert os.path.isdir(level), os.listdir(tree)
    cg = os.path.join(level, ghosts[3])
    os.makedirs(cg)
    old_layout = os.path.join(tree, ghosts[4])  # a job's cgroup as a joblet before user levels made it
    os.makedirs(old_layout)
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(sleeper.pid))
        d.start()
        assert not os.path.exists(os.path.join(d.state, "jobs", ghosts[0]))
        assert not os.path.exists(os.path.join(workroot, ghosts[1]))
        assert not os.path.exists(os.path.join(d.state, "runsc", "bundles", ghosts[2]))
        assert sleeper.wait(timeout=15) == -9
        assert not os.path.exists(cg) and not os.path.exists(old_layout)
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()
    assert d.job(live)["status"] == "RUNNING"
    for jid, text in ((ended, "kept"), (live, "live")):
        assert os.path.isdir(os.path.join(d.state, "jobs", jid)), jid
        with open(os.path.join(d.work(jid), "f")) as f:
            assert f.read().strip() == text
    assert "the database does not hold" in d.log()
    d.api("POST", f"/v1/jobs/{live}/stop")
    d.wait(live)

    # part 2: a kill -9 in the middle of a workflow's jobs being given their directories
    import threading
    far = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
    body = {"name": "big", "jobs": [{"name": f"j{i}", "request": {"command": "true", "schedule_at": far}}
                                    for i in range(1500)]}
    before = set(d.job_dirs())
    t = threading.Thread(target=lambda: _post_quietly(d, "/v1/workflows", body), daemon=True)
    t.start()
    deadline = time.time() + 120
    while len(d.job_dirs()) < len(before) + 100 and time.time() < deadline:
        time.sleep(0.005)
    d.kill9()
    t.join(30)
    left = set(d.job_dirs()) - before
    assert left, "the workflow made no job directory before the kill"
    d.start()
    known = {j["id"] for j in d.api("GET", "/v1/jobs")[1]["jobs"]}
    # every directory left is a known job's; a known job whose directory was still to be made
    # (core/job_dirs.c: they come a slice per turn) gets it when it starts or its log is read
    assert set(d.job_dirs()) <= known, sorted(set(d.job_dirs()) - known)[:5]
    works = {n for n in os.listdir(workroot) if len(n) == 36}
    assert works <= known, sorted(works - known)[:5]


def _post_quietly(d, path, body):
    try:
        d.api("POST", path, body, timeout=120)
    except Exception:
        pass  # the daemon is killed under it


# ---- finding 3 (b): a user's jobs' output together is bounded --------------------------------

WRITE = "head -c {n} /dev/zero | tr '\\0' x | fold -w 99"   # n bytes as lines of 99 x and a newline


def output_on_disk(d, owner_jobs):
    total = 0
    for jid in owner_jobs:
        for f in ("stdout.data", "stdout.idx", "stderr.data", "stderr.idx"):
            p = os.path.join(d.state, "jobs", jid, f)
            total += os.path.getsize(p) if os.path.exists(p) else 0
    return total


def test_one_users_output_is_bounded_across_all_of_their_jobs(fresh_daemon):
    """jobs.max_log_bytes_per_user 3 MB: alice's jobs writing 2 MB each get 3 MB on disk
    together, whatever each one's own cap (1 GB) allows; the stream that reaches it ends with a
    line saying so; bob's budget is his own. The count survives a kill -9 (made from the files
    at start), and deleting her jobs gives it back."""
    d = fresh_daemon("jobs:\n  max_log_bytes_per_user: 3MB\n")
    budget = 3 << 20
    two_mb = WRITE.format(n=2000000)
    alice_jobs = []
    for _ in range(3):
        status, job = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", two_mb]})
        assert status == 201, job
        alice_jobs.append(job["id"])
        assert d.wait(job["id"])["status"] == "COMPLETED"
    on_disk = output_on_disk(d, alice_jobs)
    assert budget - 4096 < on_disk <= budget + 32, on_disk  # a closing index entry may pass it
    assert len(d.output(alice_jobs[0])) == 2020202  # fold adds a newline per 99 bytes
    stopped = d.rnx("job", "log", alice_jobs[1], check=True).stdout
    assert stopped.endswith("joblet: stdout stopped here: the output of its owner's jobs together reached "
                            "jobs.max_log_bytes_per_user (3145728 bytes); the rest of the stream was discarded "
                            "(rnx job delete of ended jobs makes room for new ones)\n"), stopped[-300:]
    assert len(stopped.splitlines()[0]) == 99  # whole lines
    status, job = api_as(d, BOB, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", two_mb]})
    assert status == 201 and d.wait(job["id"])["status"] == "COMPLETED"
    assert len(d.output(job["id"])) == 2020202  # fold adds a newline per 99 bytes
    # the count outlives the daemon: made again from the files at start
    d.kill9()
    d.start()
    status, job = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", WRITE.format(n=100000)]})
    assert status == 201 and d.wait(job["id"])["status"] == "COMPLETED"
    alice_jobs.append(job["id"])
    out = d.output(job["id"])
    assert "xxxx" not in out and "jobs.max_log_bytes_per_user" in out, "alice's budget was forgotten at the restart"
    assert output_on_disk(d, alice_jobs) <= budget + 2 * 32
    for jid in alice_jobs:
        assert api_as(d, ALICE, "DELETE", f"/v1/jobs/{jid}")[0] == 200
    status, job = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", two_mb]})
    assert status == 201 and d.wait(job["id"])["status"] == "COMPLETED"
    assert len(d.output(job["id"])) == 2020202  # fold adds a newline per 99 bytes


def _log_bytes(d, jid):
    c = sqlite3.connect(f"file:{d.state}/joblet.db?mode=ro", uri=True)
    try:
        return c.execute("SELECT log_bytes FROM jobs WHERE id = ?", (jid,)).fetchone()[0]
    finally:
        c.close()


def _set_log_bytes(d, jid, value):
    c = sqlite3.connect(os.path.join(d.state, "joblet.db"), isolation_level=None)
    try:
        c.execute("UPDATE jobs SET log_bytes = ? WHERE id = ?", (value, jid))
    finally:
        c.close()


def test_an_ended_jobs_output_size_is_kept_with_its_end_and_a_start_counts_from_it(fresh_daemon):
    """A start sums every user's output for jobs.max_log_bytes_per_user. An ended job's size is
    kept with its end (its shim's end record, the row's log_bytes), so that a start with 100,000
    jobs kept does not look at each one's files; a row without it (from before schema 26) is
    looked at, each start (not written back: a row written again per such job would make one
    transaction as large as the table). The start counts from the row: a row saying more than
    the files hold fills the budget; a requeue's next run adds to it."""
    d = fresh_daemon("jobs:\n  max_log_bytes_per_user: 3MB\n")
    status, job = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", WRITE.format(n=1000000)]})
    assert status == 201 and d.wait(job["id"])["status"] == "COMPLETED", job
    a = job["id"]
    assert _log_bytes(d, a) == output_on_disk(d, [a]) > 1000000
    # requeued: its next run appends; the end keeps both runs' together
    assert d.api("POST", f"/v1/jobs/{a}/requeue")[0] == 200
    assert d.wait(a)["status"] == "COMPLETED"
    assert _log_bytes(d, a) == output_on_disk(d, [a]) > 2000000
    # the start takes the row's figure, not the files': 3 MB said, 2 MB on disk, the budget full
    d.stop()
    _set_log_bytes(d, a, 3 << 20)
    d.start()
    status, job = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", WRITE.format(n=100000)]})
    assert status == 201 and d.wait(job["id"])["status"] == "COMPLETED", job
    capped = job["id"]
    assert "jobs.max_log_bytes_per_user" in d.output(capped) and "xxxx" not in d.output(capped)
    # a row from before (no figure): its files are looked at (the row left as it is)
    d.stop()
    _set_log_bytes(d, a, None)
    d.start()
    assert _log_bytes(d, a) is None
    status, job = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", WRITE.format(n=100000)]})
    assert status == 201 and d.wait(job["id"])["status"] == "COMPLETED", job
    out = d.output(job["id"])
    assert "xxxx" in out and "jobs.max_log_bytes_per_user" not in out, out[-300:]
    # deleting them gives back what was counted
    for jid in (a, capped, job["id"]):
        assert api_as(d, ALICE, "DELETE", f"/v1/jobs/{jid}")[0] == 200
    status, job = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", WRITE.format(n=2900000)]})
    assert status == 201 and d.wait(job["id"])["status"] == "COMPLETED", job
    assert "jobs.max_log_bytes_per_user" not in d.output(job["id"])[-300:]


# ---- finding 3 (d): a /work the kernel made read-only is repaired ------------------------------

def test_a_work_filesystem_the_kernel_made_read_only_is_checked_and_mounted_again(fresh_daemon):
    """A write error (the disk under the sparse image full) makes the kernel remount a user's
    /work read-only (errors=remount-ro); done here by hand. While one of her jobs runs on it, a
    new job is refused saying why; once none does, the next submission unmounts it and starts
    e2fsck in the background (503: being checked; the loop serves everyone meanwhile), which
    mounts it again read-write when it is done, and a job then writes its /work."""
    d = fresh_daemon("jobs:\n  work_quota: 64MB\n")
    status, job = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", "echo one > /work/f"]})
    assert status == 201 and d.wait(job["id"])["status"] == "COMPLETED", job
    mnt = os.path.join(d.state, "work", str(ALICE[0]))
    status, running = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "sleep", "args": ["60"]})
    assert status == 201
    d.wait_status(running["id"], "RUNNING")
    subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
    status, ans = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "true"})
    assert status == 507, (status, ans)
    assert "made read-only by the kernel" in ans["error"]["message"] and running["id"] in ans["error"]["message"]
    assert api_as(d, ALICE, "POST", f"/v1/jobs/{running['id']}/stop")[0] == 200
    d.wait(running["id"])
    refusals = []
    deadline = time.time() + 60
    while time.time() < deadline:
        status, job = api_as(d, ALICE, "POST", "/v1/jobs",
                             {"command": "sh", "args": ["-c", "echo two > /work/g && cat /work/g"]})
        if status != 503:
            break
        refusals.append(job["error"]["message"])
        time.sleep(0.1)
    assert status == 201, (status, job)
    # "waits to be checked" first when another process still holds the filesystem (a mount
    # namespace copied beside it: another test's job), then "is being checked"
    assert refusals and all("checked (e2fsck)" in r for r in refusals), refusals
    assert d.wait(job["id"])["status"] == "COMPLETED", d.job(job["id"])
    assert d.output(job["id"]) == "two\n"
    assert not os.statvfs(mnt).f_flag & os.ST_RDONLY
    assert "checked (e2fsck)" in d.log()


# ---- a new /work image counts the volumes' promises -------------------------------------------

def first_job_where_10_mb_can_be_promised(small_state, quota):
    """A 512 MB state disk whose volumes (bob's) leave 10 MB it can promise, and alice's first
    job there: (daemon, her image's path, the refusal's message)."""
    d = small_state(f"jobs:\n  state_reserve: 32MB\n  work_quota: {quota}\n"
                    "volumes:\n  disk_percent_per_user: 100\n", size_mb=512)
    d.start()
    image = os.path.join(d.state, "work", f"{ALICE[0]}.img")
    free_mb = os.statvfs(d.state).f_bavail * os.statvfs(d.state).f_frsize >> 20
    status, v = api_as(d, BOB, "POST", "/v1/volumes", {"name": "most", "size_mb": free_mb - 32 - 10})
    assert status in (200, 201), (status, v)
    status, ans = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "true"})
    if status == 201:   # refused at its creation instead: the job says why
        j = d.wait(ans["id"])
        return d, image, j.get("error") or f"none: {j['status']}"
    assert status == 507, (status, ans)
    return d, image, ans["error"]["message"]


def test_a_quota_under_16_mb_is_raised_before_the_disks_room_is_compared(small_state):
    """jobs.work_quota under 16 MB gives a /work image of 16 MB (the least mke2fs makes of use);
    it was raised after the disk's room was compared with the quota, so that a disk that could
    promise 10 MB got a 16 MB image. Now that disk refuses it (507), saying why, and makes none."""
    d, image, msg = first_job_where_10_mb_can_be_promised(small_state, "4MB")
    assert "can promise no new /work image (16 MB at least)" in msg, msg
    assert not os.path.exists(image), f"a {os.stat(image).st_size >> 20} MB image where 10 MB could be promised"
    # with the volume smaller, the image is 16 MB, not the 4 of the quota
    assert api_as(d, BOB, "DELETE", "/v1/volumes/most")[0] == 200
    status, job = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "true"})
    assert status == 201, job
    assert d.wait(job["id"])["status"] == "COMPLETED"
    assert os.stat(image).st_size >> 20 == 16


def test_a_new_work_image_is_no_larger_than_what_the_volumes_left_of_the_disk(small_state):
    """Volumes count the users' /work images' promises (finding 10); a user's first job made a
    /work image of jobs.work_quota whatever the filesystem volumes on the same disk had been
    promised, so the two together promised more than the disk held. A new image is now the quota
    or what the disk can still promise (its free space less the volumes' promises and
    jobs.state_reserve), and a first job where that is under 16 MB is refused (507) saying why."""
    # bob's volume takes all the disk can promise but a few MB
    d, image, msg = first_job_where_10_mb_can_be_promised(small_state, "400MB")
    assert "can promise no new /work image" in msg and "filesystem volumes" in msg, msg
    assert not os.path.exists(image), "an image was made past what the disk can promise"
    # a smaller volume leaves less than the quota: the image takes what is left, and works
    assert api_as(d, BOB, "DELETE", "/v1/volumes/most")[0] == 200
    status, v = api_as(d, BOB, "POST", "/v1/volumes", {"name": "half", "size_mb": 200})
    assert status in (200, 201), (status, v)
    free_mb = os.statvfs(d.state).f_bavail * os.statvfs(d.state).f_frsize >> 20
    status, job = api_as(d, ALICE, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", "df -m /work | tail -n1"]})
    assert status == 201, job
    assert d.wait(job["id"])["status"] == "COMPLETED"
    size_mb = os.stat(image).st_size >> 20
    print(f"disk free {free_mb} MB, volume 200 MB promised, reserve 32 MB: /work image {size_mb} MB (quota 400)")
    assert 16 <= size_mb < 400 and size_mb <= free_mb - 200 - 32 + 4, (size_mb, free_mb)
    assert "not the 400 of jobs.work_quota" in d.log()
    # and the volumes count it in turn: one more volume of the room the image took is refused
    status, ans = api_as(d, BOB, "POST", "/v1/volumes", {"name": "more", "size_mb": free_mb - 200 - 32 - 8})
    assert status in (400, 409, 429, 507) and "users' /work" in ans["error"]["message"], (status, ans)
