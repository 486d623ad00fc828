"""/work is bounded (issue 14, jobs.work_quota): each user's jobs share a filesystem of that size
(a sparse ext4 image under <state>/work/, workfs.h); a job writing past it gets ENOSPC inside, and
nothing outside fills. The filesystems outlive the daemon (running jobs use them) and are mounted
again through the loop device that already holds them, never a second one."""
import glob
import json
import os
import shutil
import subprocess

import pytest

from conftest import rnx_as, tree_allocated

MiB = 1 << 20
UID = 4322

CONFIG = "jobs:\n  work_quota: 64MB\n"

# writes 1 MiB blocks to /work/FILE until the kernel refuses one; prints how far it got and why
FILL = r"""
import errno, json, os, sys
name, limit = sys.argv[1], int(sys.argv[2])
fd = os.open("/work/" + name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
block, done, err = b"x" * (1 << 20), 0, None
try:
    while done < limit:
        done += os.write(fd, block)
    os.fsync(fd)
except OSError as e:
    err = errno.errorcode[e.errno]
os.close(fd)
print(json.dumps({"written": done, "error": err, "size": os.stat("/work/" + name).st_size}))
"""


def fill(d, name, mb, **fields):
    job, out, _ = d.run("python3", "-c", FILL, name, str(mb * MiB), **fields)
    return job, json.loads(out.strip().splitlines()[-1])


def images(d):
    return sorted(glob.glob(os.path.join(d.state, "work", "*.img")))


def loops_holding(image):
    image = os.path.realpath(image)
    held = []
    for bf in glob.glob("/sys/block/loop*/loop/backing_file"):
        try:
            with open(bf) as f:
                if f.read().strip() == image:
                    held.append(bf.split("/")[3])
        except FileNotFoundError:
            pass   # another test's loop device, detached since the listing (the workers run side by side)
    return held


def allocated(path):
    return os.stat(path).st_blocks * 512


def as_user(d, *args):
    return rnx_as(d, UID, *args)


@pytest.fixture(scope="module")
def quota_daemon():
    from conftest import Daemon, need_root
    need_root()
    if not (os.path.exists("/dev/loop-control") and shutil.which("mke2fs")):
        pytest.skip("no loop devices or no mke2fs here: jobs.work_quota cannot be enforced")
    d = Daemon(CONFIG).start()
    yield d
    d.cleanup()


def test_a_job_writing_past_its_quota_gets_enospc(quota_daemon):
    d = quota_daemon
    # (the daemon's directory, not the host disk's free space: the test's other modules write to
    # the same disk meanwhile, in parallel workers)
    before = tree_allocated(d.state)
    job, r = fill(d, "big", 200)
    try:
        assert job["status"] == "COMPLETED", job
        assert r["error"] == "ENOSPC", r
        assert 40 * MiB <= r["size"] <= 64 * MiB, r
        # nothing outside the image filled: the daemon's directory grew by the image's blocks
        (image,) = images(d)
        assert allocated(image) <= 70 * MiB, allocated(image)
        assert tree_allocated(d.state) - before <= 80 * MiB
        # the job shows the bound and what the owner's jobs use of it
        assert job["work"]["quota_bytes"] <= 64 * MiB and job["work"]["used_bytes"] >= 40 * MiB, job["work"]
        out = d.rnx("job", "status", job["id"], check=True).stdout
        line = next(l for l in out.splitlines() if l.startswith("Work:"))
        assert "used of" in line and "shared by the owner's jobs" in line, out
    finally:
        d.api("DELETE", f"/v1/jobs/{job['id']}")


def test_one_users_jobs_share_the_bound_and_deleting_frees_it(quota_daemon):
    d = quota_daemon
    a, ra = fill(d, "a", 40)
    assert ra["error"] is None and ra["size"] == 40 * MiB, ra
    b, rb = fill(d, "b", 40)
    assert rb["error"] == "ENOSPC" and rb["size"] < 30 * MiB, rb   # a's 40 MB are still there
    # another user's jobs have a filesystem of their own
    p = as_user(d, "job", "run", "--follow", "python3", "-c", FILL, "u", str(40 * MiB))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1])["error"] is None, p.stdout
    assert len(images(d)) == 2, images(d)
    # deleting a job gives its room back, and its work is gone from the image
    work_a = os.path.join(d.state, "work", "0", a["id"])
    assert os.path.isdir(work_a) and not os.path.exists(os.path.join(d.state, "jobs", a["id"], "work"))
    assert d.api("DELETE", f"/v1/jobs/{a['id']}")[0] == 200
    assert not os.path.exists(work_a)
    c, rc = fill(d, "c", 40)
    assert rc["error"] is None, rc
    for j in (b, c):
        d.api("DELETE", f"/v1/jobs/{j['id']}")


def test_jobs_see_no_host_path_for_work(quota_daemon):
    d = quota_daemon
    job, out, _ = d.run("sh", "-c", "grep ' /work ' /proc/self/mountinfo")
    assert job["status"] == "COMPLETED", job
    assert d.dir not in out and "/jobs/" not in out, out
    assert "/dev/loop" in out, out
    # and the job's own directory only: it cannot reach the owner's other jobs' work
    job, out, _ = d.run("sh", "-c", "ls -a /work")
    assert out.split() == [".", ".."], out


def test_uploads_land_in_the_bounded_work(quota_daemon, tmp_path):
    d = quota_daemon
    (tmp_path / "data.txt").write_text("hello\n")
    p = d.rnx("job", "run", "--follow", f"--upload={tmp_path / 'data.txt'}", "sh", "-c",
              "cat /work/data.txt; df -P /work | tail -1", check=True)
    assert p.stdout.startswith("hello\n"), p.stdout
    assert "/dev/loop" in p.stdout, p.stdout


def test_restart_reuses_the_loop_device_that_holds_the_image(fresh_daemon):
    if not (os.path.exists("/dev/loop-control") and shutil.which("mke2fs")):
        pytest.skip("no loop devices or no mke2fs here")
    d = fresh_daemon(CONFIG)
    code, job = d.api("POST", "/v1/jobs", {"command": "sh", "args": ["-c",
                      "echo kept > /work/f; sleep 4; cat /work/f; dd if=/dev/zero of=/work/g bs=1M count=100 2>&1 | grep -o 'No space left on device'"]})
    assert code == 201, job
    d.wait_status(job["id"], "RUNNING")
    (image,) = images(d)
    assert len(loops_holding(image)) == 1
    d.kill9()
    # the daemon's own mount gone (as after a stop in a mount namespace of its own): the running
    # job still holds the filesystem through its loop device
    subprocess.run(["umount", "-l", os.path.join(d.state, "work", "0")], check=True)
    d.start()
    assert len(loops_holding(image)) == 1, loops_holding(image)  # the same device, not a second
    done = d.wait(job["id"], timeout=60)
    assert done["status"] == "COMPLETED", done
    out = d.output(job["id"])
    assert out.startswith("kept\n") and "No space left on device" in out, out
    # a new job after the restart: the same filesystem, the same bound
    j2, r2 = fill(d, "after", 200)
    assert r2["error"] == "ENOSPC", r2
    assert len(loops_holding(image)) == 1


def test_no_quota_keeps_work_in_the_job_directory(fresh_daemon):
    d = fresh_daemon("jobs:\n  work_quota: 0\n")
    job, out, _ = d.run("sh", "-c", "echo x > /work/f; cat /work/f")
    assert out == "x\n" and job["work"] is None, job
    work = os.path.join(d.state, "jobs", job["id"], "work")
    assert os.path.isdir(work) and not os.path.islink(work)
    assert images(d) == []
    assert "Work:" not in d.rnx("job", "status", job["id"], check=True).stdout
