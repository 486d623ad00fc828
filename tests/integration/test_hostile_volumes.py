"""A hostile local user against volumes (issue 25, findings 2, 9 and 10; docs/hardening.md,
"Second round"): another user's job never mounts your volume (the volume a request names is
pinned by identity from submission to start; a pending upload is one of its users); one user's
memory volumes cannot hold the machine's RAM, and a job scheduled for later does not keep one
alive; one user's filesystem volumes cannot take the disk every other user's volumes need.

Each test drives the real daemon, as root, with unprivileged uids through setpriv (no passwd
entry is needed for them), and cleans up what it made: the daemon's mounts and loop devices by
conftest's cleanup, the small filesystem of the disk test by its fixture."""
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import api_as, need_setpriv, release_mounts, rnx_as, wait_for

MB = 1 << 20
BOB, ALICE = (4341, 4341), (4342, 4342)


@pytest.fixture(autouse=True)
def loop_devices():
    if not os.path.exists("/dev/loop-control") or not shutil.which("mke2fs", path="/usr/sbin:/sbin"):
        pytest.skip("needs /dev/loop-control (the loop driver) and mke2fs (e2fsprogs)")
    need_setpriv()


def volumes_of(d, user=None):
    code, ans = d.api("GET", "/v1/volumes") if user is None else api_as(d, user, "GET", "/v1/volumes")
    assert code == 200, ans
    return {v["name"]: v for v in ans["volumes"]}


def wait_job(d, user, job_id, timeout=60):
    out = {}

    def ended():
        code, j = api_as(d, user, "GET", f"/v1/jobs/{job_id}")
        assert code == 200, j
        out.update(j)
        return j["status"] in ("COMPLETED", "FAILED", "STOPPED", "CANCELED")
    wait_for(ended, f"job {job_id} has not ended", timeout)
    return out


def job_output(d, user, job_id):
    p = rnx_as(d, user, "job", "log", job_id)
    return p.stdout


def at(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))


def mounts_under(root):
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if line.split()[4].startswith(root)]


# ---- Finding 2: another user's job never mounts your volume -----------------------------

def test_a_pending_upload_is_a_user_of_its_volume(fresh_daemon):
    """Bob's job waits for its upload's bytes: the memory volume it names is neither released
    when bob's other job using it ends, nor removable, so its name cannot pass to alice while the
    upload is pending; once the bytes come, bob's job mounts bob's own volume."""
    d = fresh_daemon()
    code, v = api_as(d, BOB, "POST", "/v1/volumes", {"name": "handoff", "size_mb": 4, "type": "memory"})
    assert code in (200, 201), v
    code, ans = api_as(d, BOB, "POST", "/v1/jobs", {
        "command": "sh", "args": ["-c", "cat /volumes/handoff/f; ls /volumes/handoff"], "volumes": ["handoff"],
        "uploads": [{"path": "one", "type": "file", "size": 1}]})
    assert code == 202, ans
    upload = ans["upload"]["path"]
    # bob's writer: its end was the last end of a job naming the volume
    code, w = api_as(d, BOB, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", "echo bobs > /volumes/handoff/f"],
                                                 "volumes": ["handoff"]})
    assert code == 201, w
    assert wait_job(d, BOB, w["id"])["status"] == "COMPLETED"
    d.api("GET", "/v1/version")  # a turn of the loop: the settle step ran
    assert "handoff" in volumes_of(d, BOB), "the memory volume went while an upload naming it was pending"
    # neither its owner nor root removes it while the upload is pending; the refusal says why
    for who in (BOB, None):
        code, err = api_as(d, who, "DELETE", "/v1/volumes/handoff") if who else d.api("DELETE", "/v1/volumes/handoff")
        assert code == 409 and "upload" in err["error"]["message"], (code, err)
    # so its name cannot pass to alice
    code, err = api_as(d, ALICE, "POST", "/v1/volumes", {"name": "handoff", "size_mb": 4, "type": "memory"})
    assert code == 409 and "exists and is another user's" in err["error"]["message"], (code, err)
    code, j = api_as(d, BOB, "PUT", upload, b"1", ctype=None)
    assert code == 201, j
    assert wait_job(d, BOB, j["id"])["status"] == "COMPLETED"
    assert job_output(d, BOB, j["id"]) == "bobs\nf\n"
    # its last user ended: the memory volume goes now
    wait_for(lambda: "handoff" not in volumes_of(d), "the memory volume is still listed", 60)


def test_a_waiting_job_never_mounts_a_volume_that_took_its_volumes_name(fresh_daemon):
    """Bob's job waits in the queue (jobs.max_running is 1 and root's job runs) and names his
    memory volume; the machine reboots (the tmpfs goes, joblet forgets the volume) and alice
    makes a filesystem volume of the same name with a secret in it. When bob's re-adopted job
    comes to start, it fails naming the volume; it never mounts alice's."""
    d = fresh_daemon("jobs:\n  max_running: 1\n")
    blocker = d.submit("sleep", "600")
    d.wait_status(blocker, "RUNNING")
    code, v = api_as(d, BOB, "POST", "/v1/volumes", {"name": "shared", "size_mb": 4, "type": "memory"})
    assert code in (200, 201), v
    code, j = api_as(d, BOB, "POST", "/v1/jobs", {
        "command": "sh", "args": ["-c", "cat /volumes/shared/secret; echo bob-was-here > /volumes/shared/owned"],
        "volumes": ["shared"]})
    assert code == 201 and j["status"] == "QUEUED", j
    d.stop()
    subprocess.run(["umount", os.path.join(d.state, "volumes", "shared", "mnt")], check=True)  # what a reboot does
    d.start()
    assert "shared" not in volumes_of(d)
    assert api_as(d, BOB, "GET", f"/v1/jobs/{j['id']}")[1]["status"] == "QUEUED"
    code, v = api_as(d, ALICE, "POST", "/v1/volumes", {"name": "shared", "size_mb": 16})
    assert code in (200, 201), v
    mnt = os.path.join(d.state, "volumes", "shared", "mnt")
    with open(os.path.join(mnt, "secret"), "w") as f:
        f.write("alices-secret\n")
    d.api("POST", f"/v1/jobs/{blocker}/stop")
    ended = wait_job(d, BOB, j["id"], timeout=60)
    out = job_output(d, BOB, j["id"])
    assert "alices-secret" not in out, out
    assert not os.path.exists(os.path.join(mnt, "owned")), "bob's job wrote into alice's volume"
    assert ended["status"] == "FAILED" and ended["end_reason"] == "start_failed", ended
    assert "volume 'shared'" in (ended["error"] or ""), ended


@pytest.fixture
def admin_group():
    """A group of the host (groupadd) named as server.admin_group, for a member who stops being an
    admin when it is deleted; removed after the test."""
    if not shutil.which("groupadd"):
        pytest.skip("groupadd is needed")
    name = "jhv" + os.urandom(4).hex()
    subprocess.run(["groupadd", name], check=True, capture_output=True)
    try:
        gid = int(subprocess.run(["getent", "group", name], check=True, capture_output=True,
                                 text=True).stdout.split(":")[2])
        yield name, gid
    finally:
        subprocess.run(["groupdel", name], check=False, capture_output=True)


def test_a_check_at_submission_holds_at_creation_and_start(fresh_daemon, admin_group):
    """Mallory is an admin (server.admin_group) when she submits two jobs naming alice's volume:
    one waits for its upload's bytes, one waits in the queue. She is then no longer an admin
    (the group is deleted). Her upload's PUT is refused, creating nothing, and her queued job
    fails at its start naming the volume: neither ever reads alice's volume."""
    group, gid = admin_group
    # an account's look-up is kept server.account_cache_s (core/nsscache.h): the upload's end
    # sees the group gone once that has passed
    d = fresh_daemon(f"server:\n  admin_group: {group}\n  account_cache_s: 1\njobs:\n  max_running: 1\n")
    mallory = (4343, gid)
    code, v = api_as(d, ALICE, "POST", "/v1/volumes", {"name": "labdata", "size_mb": 16})
    assert code in (200, 201), v
    mnt = os.path.join(d.state, "volumes", "labdata", "mnt")
    with open(os.path.join(mnt, "secret"), "w") as f:
        f.write("alices-secret\n")
    blocker = d.submit("sleep", "600")
    d.wait_status(blocker, "RUNNING")
    take = {"command": "sh", "args": ["-c", "cat /volumes/labdata/secret; touch /volumes/labdata/taken"],
            "volumes": ["labdata"]}
    code, queued = api_as(d, mallory, "POST", "/v1/jobs", take)
    assert code == 201 and queued["status"] == "QUEUED", queued
    code, ans = api_as(d, mallory, "POST", "/v1/jobs", {**take, "uploads": [{"path": "x", "type": "file", "size": 1}]})
    assert code == 202, ans
    subprocess.run(["groupdel", group], check=True, capture_output=True)
    time.sleep(1.2)
    before = d.job_count()
    code, err = api_as(d, mallory, "PUT", ans["upload"]["path"], b"x", ctype=None)
    assert code == 409 and err["error"]["field"] == "volumes", (code, err)
    assert "volume 'labdata'" in err["error"]["message"] and "may no longer use it" in err["error"]["message"], err
    assert d.job_count() == before
    d.api("POST", f"/v1/jobs/{blocker}/stop")
    ended = wait_job(d, mallory, queued["id"])
    assert "alices-secret" not in job_output(d, mallory, queued["id"])
    assert not os.path.exists(os.path.join(mnt, "taken")), "mallory's job used alice's volume"
    assert ended["status"] == "FAILED" and ended["end_reason"] == "start_failed", ended
    assert "volume 'labdata'" in (ended["error"] or "") and "may no longer use it" in ended["error"], ended


# ---- Finding 9: memory volumes are charged to their owner --------------------------------

def mem_total_mb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) >> 10
    raise AssertionError("no MemTotal")


def test_one_user_cannot_take_the_machines_memory_volumes(fresh_daemon):
    """Memory volumes together were bounded for the machine only (half its memory): one user
    could take all of it. By default a user's memory volumes together are at most
    volumes.memory_percent_per_user (25 %) of the memory; other users keep theirs."""
    d = fresh_daemon()
    total = mem_total_mb()
    share = total * 25 // 100
    # one volume past the user's share, under the machine's half
    code, err = api_as(d, BOB, "POST", "/v1/volumes", {"name": "hog", "size_mb": share + 64, "type": "memory"})
    assert code in (400, 409, 429) and err["error"]["field"] == "size_mb", (code, err)
    assert "volumes.memory_percent_per_user" in err["error"]["message"], err
    # two that fit alone, not together
    code, v = api_as(d, BOB, "POST", "/v1/volumes", {"name": "hog1", "size_mb": share - 64, "type": "memory"})
    assert code in (200, 201), v
    code, err = api_as(d, BOB, "POST", "/v1/volumes", {"name": "hog2", "size_mb": 128, "type": "memory"})
    assert code in (400, 409, 429) and "volumes.memory_percent_per_user" in err["error"]["message"], (code, err)
    # another user still gets a share of their own
    code, v = api_as(d, ALICE, "POST", "/v1/volumes", {"name": "mine", "size_mb": share // 2, "type": "memory"})
    assert code in (200, 201), v


def shmem_kb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Shmem:"):
                return int(line.split()[1])
    return 0


def test_a_job_scheduled_far_ahead_does_not_keep_a_memory_volume(fresh_daemon):
    """A job scheduled 3,000 days ahead kept bob's memory volume, and the pages its writer
    left, for 3,000 days. Now only jobs that may run now (and pending uploads) keep one: when
    the writer ends, it goes, and the scheduled job will fail at its start naming it."""
    d = fresh_daemon()
    code, v = api_as(d, BOB, "POST", "/v1/volumes", {"name": "pinned", "size_mb": 96, "type": "memory"})
    assert code in (200, 201), v
    code, s = api_as(d, BOB, "POST", "/v1/jobs", {"command": "cat", "args": ["/volumes/pinned/f"],
                                                 "volumes": ["pinned"], "schedule_at": at(3000 * 86400)})
    assert code == 201 and s["status"] == "SCHEDULED", s
    before = shmem_kb()
    code, w = api_as(d, BOB, "POST", "/v1/jobs", {
        "command": "sh", "args": ["-c", "dd if=/dev/zero of=/volumes/pinned/f bs=1M count=64 2>/dev/null"],
        "volumes": ["pinned"]})
    assert code == 201, w
    assert wait_job(d, BOB, w["id"])["status"] == "COMPLETED"
    mnt = os.path.join(d.state, "volumes", "pinned", "mnt")
    wait_for(lambda: "pinned" not in volumes_of(d), "the memory volume is still kept by a job 3,000 days ahead", 60)
    assert not mounts_under(mnt)
    print(f"Shmem: {before} kB before the writer, {shmem_kb()} kB after the volume went")
    assert api_as(d, BOB, "GET", f"/v1/jobs/{s['id']}")[1]["status"] == "SCHEDULED"


# ---- Finding 10: a user's share of the promised disk -----------------------------------

@pytest.fixture
def small_disk():
    """A 1 GiB ext4 filesystem of the test's own (a loop device), for volumes.dir: the disk a
    volume may promise is this one's, whatever the host's disk holds."""
    base = tempfile.mkdtemp(prefix="joblet-hv-")
    image, mnt = os.path.join(base, "disk.img"), os.path.join(base, "mnt")
    os.mkdir(mnt)
    with open(image, "wb") as f:
        f.truncate(1 << 30)
    try:
        subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-m", "0", image], check=True, capture_output=True)
        subprocess.run(["mount", "-o", "loop", image, mnt], check=True, capture_output=True)
        vdir = os.path.join(mnt, "volumes")
        os.mkdir(vdir, 0o700)
        yield vdir
    finally:
        release_mounts(base)
        shutil.rmtree(base, ignore_errors=True)


def test_one_sparse_volume_cannot_promise_every_users_disk(small_disk, fresh_daemon):
    """One filesystem volume as large as the free disk (a sparse image: it takes a few MB) made
    every other user's volume creation fail. By default a user's filesystem volumes together
    are promised at most volumes.disk_percent_per_user (25 %) of the disk under volumes.dir."""
    d = fresh_daemon(f"volumes:\n  dir: {small_disk}\n")
    st = os.statvfs(small_disk)
    size_mb, free_mb = st.f_blocks * st.f_frsize // MB, st.f_bavail * st.f_frsize // MB
    share = size_mb * 25 // 100
    code, err = api_as(d, BOB, "POST", "/v1/volumes", {"name": "everything", "size_mb": free_mb - 8})
    assert code in (400, 409, 429) and err["error"]["field"] == "size_mb", (code, err)
    assert "volumes.disk_percent_per_user" in err["error"]["message"], err
    # bob's share, in two volumes: the second past it is refused
    code, v = api_as(d, BOB, "POST", "/v1/volumes", {"name": "b1", "size_mb": share - 40})
    assert code in (200, 201), v
    code, err = api_as(d, BOB, "POST", "/v1/volumes", {"name": "b2", "size_mb": 64})
    assert code in (400, 409, 429) and "volumes.disk_percent_per_user" in err["error"]["message"], (code, err)
    # alice's volumes are not starved by bob's
    code, v = api_as(d, ALICE, "POST", "/v1/volumes", {"name": "a1", "size_mb": share - 40})
    assert code in (200, 201), v
    used = {n: v["image_bytes"] for n, v in volumes_of(d).items()}
    print(f"disk {size_mb} MB, free {free_mb} MB, share {share} MB; images take {used}")


def test_a_memory_volume_kept_by_an_upload_goes_when_the_upload_is_dropped(fresh_daemon):
    """Its last job ended while an upload naming it was pending, so it stayed; the upload never
    comes (jobs.upload_timeout_s): then nothing keeps it, and it goes rather than pin its memory
    until some later job of it ends. (The upload waits 8 s: with 2 s, a sanitizer build's job
    that used the volume ran past it, and the volume was gone before the test looked.)"""
    d = fresh_daemon("jobs:\n  upload_timeout_s: 8\n")
    code, v = api_as(d, BOB, "POST", "/v1/volumes", {"name": "dropped", "size_mb": 4, "type": "memory"})
    assert code in (200, 201), v
    code, ans = api_as(d, BOB, "POST", "/v1/jobs", {"command": "true", "volumes": ["dropped"],
                                                   "uploads": [{"path": "one", "type": "file", "size": 1}]})
    assert code == 202, ans
    code, w = api_as(d, BOB, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", "echo x > /volumes/dropped/f"],
                                                 "volumes": ["dropped"]})
    assert code == 201, w
    assert wait_job(d, BOB, w["id"])["status"] == "COMPLETED"
    d.api("GET", "/v1/version")
    assert "dropped" in volumes_of(d, BOB), "the upload still pending did not keep it"
    wait_for(lambda: "dropped" not in volumes_of(d), "the memory volume outlived the upload that kept it", 40)
