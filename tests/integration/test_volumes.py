"""Volumes (docs/volumes.md), with the real daemon and rnx as root: a filesystem volume's size is a
hard limit and its data outlives jobs, a kill -9 of the daemon and a reboot (its mount gone); a
volume in use cannot be removed; :ro is read-only; a memory volume goes with its last job; a
volume is its owner's. Every daemon's mounts and loop devices are released by conftest's
cleanup (release_mounts), also when a test fails."""
import json
import os
import shutil
import subprocess
import threading

import pytest

from conftest import api_as, local_account, need_setpriv, rnx_as, tree_allocated, wait_for

MB = 1 << 20


@pytest.fixture(autouse=True)
def loop_devices():
    """Filesystem volumes are loop-mounted ext4 images: without the loop driver or mke2fs,
    joblet refuses them (tested in test_a_volume_being_created_and_a_creation_that_fails)."""
    if not os.path.exists("/dev/loop-control") or not shutil.which("mke2fs", path="/usr/sbin:/sbin"):
        pytest.skip("needs /dev/loop-control (the loop driver) and mke2fs (e2fsprogs)")


def vol(d, *args, user=None):
    """rnx volume ..., as root or (user=(uid, gid)) as that user through setpriv."""
    return d.rnx("volume", *args) if user is None else rnx_as(d, user, "volume", *args)


def listed(d, user=None):
    p = vol(d, "list", "--json", user=user)
    assert p.returncode == 0, p.stderr
    return {v["name"]: v for v in json.loads(p.stdout)}


def job_run(d, *args):
    """rnx job run --follow ...: (exit code, stdout, stderr)."""
    p = d.rnx("job", "run", "--follow", *args)
    return p.returncode, p.stdout, p.stderr


def mount_points(root):
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if line.split()[4].startswith(root)]


def loop_backing(dev):
    """The image a loop device is bound to, "" when it is free."""
    try:
        with open(f"/sys/block/{os.path.basename(dev)}/loop/backing_file") as f:
            return f.read().strip()
    except OSError:
        return ""


def test_filesystem_volume_is_a_hard_limit_and_outlives_jobs_kill9_and_reboot(fresh_daemon):
    d = fresh_daemon()
    p = vol(d, "create", "data", "--size=64MB")
    assert p.returncode == 0 and "volume data created: filesystem, 64 MB" in p.stdout, (p.stdout, p.stderr)
    v = listed(d)["data"]
    assert v["state"] == "ready" and v["size_mb"] == 64 and v["owner_uid"] == 0 and v["device"], v
    image = os.path.join(d.state, "volumes", "data", "image")
    assert os.path.getsize(image) == 64 * MB
    assert os.stat(image).st_blocks * 512 < 4 * MB, "the image is sparse"
    before = tree_allocated(d.state)   # (the daemon's directory: other modules share the disk)

    # a job tries to write 200 MB: it gets ENOSPC, and the host's disk takes at most the image
    rc, out, err = job_run(d, "--volume=data", "sh", "-c",
                           "echo keep > /volumes/data/keep && dd if=/dev/zero of=/volumes/data/fill bs=1M count=200;"
                           " echo dd=$?")
    assert rc == 0, (out, err)
    assert "No space left on device" in err and "dd=1" in out, (out, err)
    fill = os.path.getsize(os.path.join(d.state, "volumes", "data", "mnt", "fill"))
    assert 40 * MB < fill < 64 * MB, fill
    assert os.stat(image).st_blocks * 512 <= 64 * MB
    grown = tree_allocated(d.state) - before
    # 200 MB asked for; the image holds at most 64 MB
    assert grown < 64 * MB + 16 * MB, f"the daemon's directory grew by {grown >> 20} MB"

    # the next job (root's jobs each run as a uid of their own) reads it and may change it
    rc, out, err = job_run(d, "--volume=data", "sh", "-c",
                           "rm /volumes/data/fill && echo more >> /volumes/data/keep && cat /volumes/data/keep"
                           " && id -u && stat -c %u:%a /volumes/data/keep")
    assert rc == 0, (out, err)
    lines = out.split()
    assert lines[:2] == ["keep", "more"] and lines[3].endswith(":666"), out
    assert lines[3].split(":")[0] != lines[2], "written by the first job's uid, changed by the second's"

    # kill -9 of the daemon: the volume stays mounted and the next daemon uses it
    d.kill9()
    d.start()
    rc, out, err = job_run(d, "--volume=data", "cat", "/volumes/data/keep")
    assert (rc, out) == (0, "keep\nmore\n"), (out, err)

    # a reboot (modelled: daemon stopped, the volume's mount gone): mounted again at start
    d.stop()
    mnt = os.path.join(d.state, "volumes", "data", "mnt")
    subprocess.run(["umount", mnt], check=True)
    # (a mount namespace another test process copied meanwhile keeps the filesystem, and so the
    # device, until that process ends: test_clean_stop.loops_become)
    wait_for(lambda: not loop_backing(v["device"]).startswith(d.state), "the loop device is still bound", 180)
    d.start()
    assert listed(d)["data"]["state"] == "ready"
    rc, out, err = job_run(d, "--volume=data", "cat", "/volumes/data/keep")
    assert (rc, out) == (0, "keep\nmore\n"), (out, err)

    # in use: removal refused, naming the job; once it ended, removed with its loop device
    jid = d.submit("sleep", "30", volumes=["data"])
    d.wait_status(jid, "RUNNING")
    p = vol(d, "remove", "data")
    assert p.returncode == 1 and "in use" in p.stderr and jid in p.stderr, p.stderr
    assert listed(d)["data"]["jobs"] == [jid]
    d.api("POST", f"/v1/jobs/{jid}/stop")
    d.wait(jid)
    dev = listed(d)["data"]["device"]
    p = vol(d, "remove", "data")
    assert p.returncode == 0 and "volume data removed" in p.stdout, p.stderr
    assert "data" not in listed(d)
    assert not os.path.exists(os.path.join(d.state, "volumes", "data"))
    assert not mount_points(os.path.join(d.state, "volumes"))
    wait_for(lambda: not loop_backing(dev).startswith(d.state), f"{dev} is still bound to the image", 180)


def test_read_only_volume(fresh_daemon):
    d = fresh_daemon()
    assert vol(d, "create", "ro1", "--size=16MB").returncode == 0
    rc, out, err = job_run(d, "--volume=ro1", "sh", "-c", "echo x > /volumes/ro1/f")
    assert rc == 0, err
    rc, out, err = job_run(d, "--volume=ro1:ro", "sh", "-c", "cat /volumes/ro1/f; touch /volumes/ro1/g")
    assert rc == 1 and out == "x\n" and "Read-only file system" in err, (rc, out, err)
    # both at once, one of them read-only
    assert vol(d, "create", "rw2", "--size=16MB").returncode == 0
    rc, out, err = job_run(d, "--volume=ro1:ro", "--volume=rw2", "sh", "-c", "cp /volumes/ro1/f /volumes/rw2/g && "
                           "cat /volumes/rw2/g")
    assert (rc, out) == (0, "x\n"), err
    # rnx job cp into the read-only volume is refused as that, before a byte moves (it said
    # libarchive's "Could not unlink")
    jid = d.submit("sleep", "300", volumes=["ro1:ro"])
    try:
        d.wait_status(jid, "RUNNING")
        src = os.path.join(d.state, "..", "cp-src")
        with open(src, "w") as f:
            f.write("y\n")
        p = d.rnx("job", "cp", src, f"{jid}:/volumes/ro1/")
        assert p.returncode != 0 and "/volumes/ro1: a read-only file system in the job" in p.stderr, p.stderr
        assert "unlink" not in p.stderr, p.stderr
    finally:
        d.api("POST", f"/v1/jobs/{jid}/kill")
        d.wait(jid)


def test_memory_volume_goes_with_its_last_job(fresh_daemon):
    d = fresh_daemon()
    p = vol(d, "create", "scratch", "--size=8MB", "--type=memory")
    assert p.returncode == 0 and "gone when the last job using it ends" in p.stdout, p.stdout
    p = vol(d, "list")
    assert "scratch" in p.stdout and "gone when its last job ends, and on reboot" in p.stdout, p.stdout
    # a tmpfs of its size: 16 MB do not fit
    # (a ends only once b runs, b only once the test says so: b's start is not raced with a's
    # end, which a loaded machine lost, b still starting QUEUED when a ended)
    a = d.submit("sh", "-c", "dd if=/dev/zero of=/volumes/scratch/big bs=1M count=16; rm -f /volumes/scratch/big;"
                 " while [ ! -e /volumes/scratch/b ]; do sleep 0.1; done; echo shared > /volumes/scratch/f",
                 volumes=["scratch"])
    b = d.submit("sh", "-c", "touch /volumes/scratch/b; while [ ! -e /volumes/scratch/go ]; do sleep 0.1; done;"
                 " cat /volumes/scratch/f", volumes=["scratch"])
    ja = d.wait(a)
    assert "No space left on device" in d.output(a, "stderr"), d.output(a, "stderr")
    assert ja["status"] == "COMPLETED", ja
    # b still uses it: it stays
    assert d.job(b)["status"] == "RUNNING" and "scratch" in listed(d)
    with open(os.path.join(d.state, "volumes", "scratch", "mnt", "go"), "w"):
        pass
    assert d.wait(b)["status"] == "COMPLETED" and d.output(b) == "shared\n"
    wait_for(lambda: "scratch" not in listed(d), "the memory volume is still listed", 60)
    assert not mount_points(os.path.join(d.state, "volumes"))
    assert not os.path.exists(os.path.join(d.state, "volumes", "scratch"))
    rc, out, err = job_run(d, "--volume=scratch", "true")
    assert rc == 1 and "no volume 'scratch'" in err, err


def test_memory_volume_survives_a_daemon_restart_not_a_reboot(fresh_daemon):
    d = fresh_daemon()
    assert vol(d, "create", "m", "--size=4MB", "--type=memory").returncode == 0
    d.kill9()
    d.start()
    assert listed(d)["m"]["state"] == "ready"
    d.stop()
    subprocess.run(["umount", os.path.join(d.state, "volumes", "m", "mnt")], check=True)  # what a reboot does
    d.start()
    assert "m" not in listed(d)
    assert "memory volume m: its tmpfs went with a reboot" in d.log(), d.log()[-3000:]


@pytest.fixture
def alice():
    """A user of the host (useradd), removed after the test."""
    need_setpriv()
    with local_account("jv") as account:
        yield account


def test_a_volume_is_its_owners(fresh_daemon, alice):
    if subprocess.run(["getent", "group", "adm"], capture_output=True).returncode != 0:
        pytest.skip("no group adm to make an admin with")
    d = fresh_daemon("server:\n  admin_group: adm\n")
    name, uid, gid = alice
    bob, admin = (4323, 4323), (4322, 4)  # gid 4: adm, an admin
    p = vol(d, "create", "alices", "--size=16MB", user=(uid, gid))
    assert p.returncode == 0, p.stderr
    rc = rnx_as(d, (uid, gid), "job", "run", "--follow", "--volume=alices", "sh", "-c",
                "id -u > /volumes/alices/who; stat -c %u /volumes/alices")
    assert rc.returncode == 0 and rc.stdout.strip() == str(uid), (rc.stdout, rc.stderr)
    assert os.stat(os.path.join(d.state, "volumes", "alices", "mnt", "who")).st_uid == uid
    p = vol(d, "list")
    assert "alices" in p.stdout and name in p.stdout, p.stdout  # the owner by name
    # bob: does not see it, cannot use it, remove it, or take its name
    assert "alices" not in listed(d, user=bob)
    p = rnx_as(d, bob, "job", "run", "--volume=alices", "true")
    assert p.returncode == 1 and "--volume: volume 'alices' is another user's" in p.stderr, p.stderr
    p = vol(d, "remove", "alices", user=bob)
    assert p.returncode == 1 and "is another user's" in p.stderr, p.stderr
    p = vol(d, "create", "alices", "--size=16MB", user=bob)
    assert p.returncode == 1 and "exists and is another user's" in p.stderr, p.stderr
    # (whose it is, not said: a uid names the owner)
    for out in (p.stderr,):
        assert str(uid) not in out, out
    assert "alices" in listed(d)
    # an admin sees it and may use it
    assert "alices" in listed(d, user=admin)
    p = rnx_as(d, admin, "job", "run", "--follow", "--volume=alices:ro", "cat", "/volumes/alices/who")
    assert p.returncode == 0 and p.stdout.strip() == str(uid), (p.stdout, p.stderr)
    # its owner removes it
    p = vol(d, "remove", "alices", user=(uid, gid))
    assert p.returncode == 0, p.stderr
    assert "alices" not in listed(d)


def test_a_volumes_owner_sees_others_jobs_using_it_counted_not_named(fresh_daemon, alice):
    """root's job (and array waiting to make tasks) mounts alice's volume: alice sees that it is
    used, and by how many, not the ids of jobs she may not see (GET /v1/jobs/ID is 403 to her),
    in the volume's listing and in the refusal of its removal; root sees them all (review finding)."""
    d = fresh_daemon()
    name, uid, gid = alice
    assert vol(d, "create", "alices", "--size=16MB", "--type=memory", user=(uid, gid)).returncode == 0
    j = d.submit("sleep", "60", volumes=["alices"])
    held = d.rnx("job", "run", "--array=0-3", "--hold", "--volume=alices", "true", check=True).stdout.strip()
    try:
        st, v = api_as(d, uid, "GET", "/v1/volumes/alices")
        assert st == 200, v
        assert v["jobs"] == [] and v["jobs_count"] == 1, v
        assert v["arrays"] == [] and v["arrays_count"] == 1, v
        st, out = api_as(d, uid, "GET", f"/v1/jobs/{j}")
        assert st == 403, out
        p = vol(d, "remove", "alices", user=(uid, gid))
        assert p.returncode == 1 and "in use by 1 job not yet ended: 1 of another user" in p.stderr, p.stderr
        assert j[:8] not in p.stderr, p.stderr
        st, v = d.api("GET", "/v1/volumes/alices")
        assert v["jobs"] == [j] and v["arrays"] == [held], v
        p = d.rnx("volume", "remove", "alices")
        assert p.returncode == 1 and j in p.stderr, p.stderr
        d.api("POST", f"/v1/jobs/{j}/kill")
        d.wait(j)
        p = vol(d, "remove", "alices", user=(uid, gid))
        assert p.returncode == 1 and "tasks not started yet: 1 of another user" in p.stderr, p.stderr
        assert held[:8] not in p.stderr, p.stderr
    finally:
        d.api("POST", f"/v1/jobs/{j}/kill")
        d.rnx("job", "cancel", held)


def test_unknown_volume_and_bad_input_are_refused(fresh_daemon):
    d = fresh_daemon()
    before = d.job_count()
    rc, out, err = job_run(d, "--volume=nope", "true")
    assert rc == 1 and "--volume: no volume 'nope' on this machine" in err and "rnx volume list" in err, err
    code, e = d.api("POST", "/v1/jobs", {"command": "true", "volumes": ["nope:ro"]})
    assert code == 400 and e["error"]["field"] == "volumes" and "no volume 'nope'" in e["error"]["message"], e
    assert d.job_count() == before
    cases = [
        (("create", "a/b", "--size=1GB"), "'a/b' is not a volume name"),
        (("create", ".x", "--size=1GB"), "'.x' is not a volume name"),
        (("create", "small", "--size=8MB"), "--size: 8 MB is not a size for a filesystem volume; give from 16 MB"),
        (("create", "huge", "--size=15TB"), "--size: 15 TB is more than the disk under volumes.dir"),
        (("create", "mem", "--size=100TB", "--type=memory"), "--size: 100 TB is not a size for a memory volume"),
        (("create", "t", "--size=1GB", "--type=disk"), "--type: 'disk' is not a volume type; use filesystem"),
        (("create", "t", "--size=lots"), "--size: 'lots' is not a size"),
        (("create", "t"), "--size is required"),
        (("list", "x"), "takes no arguments"),
        (("remove",), "expected one NAME"),
        (("remove", "nope"), "no volume 'nope'"),
    ]
    for args, msg in cases:
        p = vol(d, *args)
        assert p.returncode in (1, 2) and msg in p.stderr, (args, p.stderr)
    for body, field in [({"name": "x", "size_mb": 64, "color": "red"}, "color"), ({"name": "x"}, "size_mb"),
                        ({"size_mb": 64}, "name"), ({"name": "x", "size_mb": "64"}, "size_mb"),
                        ({"name": "x", "size_mb": 64, "type": "tape"}, "type")]:
        code, e = d.api("POST", "/v1/volumes", body)
        assert code == 400 and e["error"]["field"] == field and e["error"]["message"].startswith(field), (body, e)
    assert listed(d) == {}
    assert d.api("GET", "/v1/volumes/nope")[0] == 404


def test_create_is_idempotent_and_parallel_creations_all_finish(fresh_daemon):
    d = fresh_daemon()
    assert vol(d, "create", "same", "--size=32MB").returncode == 0
    p = vol(d, "create", "same", "--size=32MB")
    assert p.returncode == 0 and "exists already" in p.stdout, p.stdout
    p = vol(d, "create", "same", "--size=48MB")
    assert p.returncode == 1 and "exists as a filesystem volume of 32 MB, not filesystem of 48 MB" in p.stderr
    code, v = d.api("POST", "/v1/volumes", {"name": "same", "size_mb": 32})
    assert code == 200 and v["created"] is False
    results = {}

    def make(n):
        results[n] = vol(d, "create", f"p{n}", "--size=32MB")

    threads = [threading.Thread(target=make, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n, p in results.items():
        assert p.returncode == 0, (n, p.stderr)
    have = listed(d)
    assert all(have[f"p{n}"]["state"] == "ready" for n in range(6)), have
    for n in range(6):
        assert vol(d, "remove", f"p{n}").returncode == 0
    assert set(listed(d)) == {"same"}


WORKFLOW = """\
name: vols
jobs:
  produce:
    command: sh
    args: ["-c", "echo made > /volumes/scratch/x && echo kept > /volumes/results/y"]
    volumes:
      - {name: scratch, size: 16MB, type: memory}
      - results:32MB
  consume:
    command: sh
    args: ["-c", "cat /volumes/scratch/x /volumes/results/y; touch /volumes/results/z || echo read-only"]
    volumes: [scratch, "results:ro"]
    requires:
      - produce: COMPLETED
"""


def test_workflow_creates_its_volumes_idempotently(fresh_daemon, tmp_path):
    d = fresh_daemon()
    wf = tmp_path / "vols.yaml"
    # validate asks joblet for every check of a submission (dry run): nothing is created
    wf.write_text(WORKFLOW.replace("results:32MB", "results:8MB"))
    p = d.rnx("workflow", "validate", str(wf))
    assert p.returncode == 1 and f"{wf}:8:9: volume 'results': size: 8 MB is not a size for a filesystem volume" \
        in p.stderr, p.stderr
    wf.write_text(WORKFLOW)
    p = d.rnx("workflow", "validate", str(wf))
    assert p.returncode == 0, p.stderr
    assert listed(d) == {}
    # a missing volume named before one the workflow creates: refused at its own line (the
    # daemon's field is the whole list; the line was the list's last item's, line 8)
    wf.write_text(WORKFLOW.replace("      - results:32MB", "      - data-lake\n      - results:32MB"))
    p = d.rnx("workflow", "validate", str(wf))
    assert p.returncode == 1 and f"{wf}:8:9: job 'produce': volumes: no volume 'data-lake'" in p.stderr, p.stderr
    wf.write_text(WORKFLOW.replace("{name: scratch, size: 16MB, type: memory}", "{name: lake, read_only: true}"))
    p = d.rnx("workflow", "validate", str(wf))
    assert p.returncode == 1 and f"{wf}:7:9: job 'produce': volumes: no volume 'lake'" in p.stderr, p.stderr
    wf.write_text(WORKFLOW)
    p = d.rnx("workflow", "run", "--follow", str(wf))
    assert p.returncode == 0, (p.stdout, p.stderr)
    status = json.loads(d.rnx("workflow", "list", "--json").stdout)[0]
    jobs = {j["name"]: j["job_id"] for j in d.api("GET", f"/v1/workflows/{status['id']}")[1]["jobs"]}
    assert d.output(jobs["consume"]) == "made\nkept\nread-only\n"
    assert "Read-only file system" in d.output(jobs["consume"], "stderr")
    # the memory volume went with its last job; the filesystem one stays, and a second run
    # finds it as asked
    have = listed(d)
    assert set(have) == {"results"} and have["results"]["size_mb"] == 32, have
    p = d.rnx("workflow", "run", "--follow", str(wf))
    assert p.returncode == 0, (p.stdout, p.stderr)
    # asked for with another size: refused at the line that asks, nothing submitted
    before = d.job_count()
    wf.write_text(WORKFLOW.replace("results:32MB", "results:64MB"))
    p = d.rnx("workflow", "run", str(wf))
    assert p.returncode == 1 and f"{wf}:8:9: volume 'results' exists as a filesystem volume of 32 MB, not " \
        "filesystem of 64 MB" in p.stderr, p.stderr
    assert d.job_count() == before
    # an invalid workflow creates no volume
    wf.write_text(WORKFLOW.replace("results:32MB", "other:32MB").replace("  consume:", "  consume:\n    resources:"
                                                                          " {max_cpu: 100000}"))
    p = d.rnx("workflow", "run", str(wf))
    assert p.returncode == 1 and "max_cpu" in p.stderr, p.stderr
    assert set(listed(d)) == {"results"}


def fake_mke2fs(d, body):
    """A volumes.mke2fs script in the daemon's directory (the real one for the rest)."""
    path = os.path.join(d.dir, "mke2fs")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, 0o755)
    return path


def test_a_volume_being_created_and_a_creation_that_fails(fresh_daemon):
    d = fresh_daemon(start=False)
    gate = os.path.join(d.dir, "go")
    with open(d.config, "a") as f:
        f.write(f"volumes:\n  mke2fs: {os.path.join(d.dir, 'mke2fs')}\n")
    fake_mke2fs(d, f'while [ ! -e {gate} ]; do sleep 0.05; done\nexec /usr/sbin/mke2fs "$@"\n')
    d.start()
    results = {}
    threads = [threading.Thread(target=lambda k=k: results.__setitem__(k, vol(d, "create", "slow", "--size=16MB")))
               for k in range(2)]
    for t in threads:
        t.start()
    wait_for(lambda: listed(d).get("slow", {}).get("state") == "creating", "never creating", 60)
    # meanwhile: the loop serves, the volume cannot be used or removed yet
    rc, out, err = job_run(d, "--volume=slow", "true")
    assert rc == 1 and "--volume: volume 'slow' is still being created" in err, err
    p = vol(d, "remove", "slow")
    assert p.returncode == 1 and "is being created" in p.stderr, p.stderr
    open(gate, "w").close()
    for t in threads:
        t.join()
    assert all(p.returncode == 0 for p in results.values()), [p.stderr for p in results.values()]
    assert listed(d)["slow"]["state"] == "ready"
    # mke2fs fails: the request says why, and nothing of the volume is left
    fake_mke2fs(d, 'echo "mke2fs: something is wrong" >&2\nexit 3\n')
    p = vol(d, "create", "broken", "--size=16MB")
    assert p.returncode == 1 and "mke2fs exited with status 3: mke2fs: something is wrong" in p.stderr, p.stderr
    assert "broken" not in listed(d) and not os.path.exists(os.path.join(d.state, "volumes", "broken"))
    # the daemon killed while mke2fs runs: the next start removes what the creation left
    os.unlink(gate)
    fake_mke2fs(d, f'while [ ! -e {gate} ]; do sleep 0.05; done\nexec /usr/sbin/mke2fs "$@"\n')
    t = threading.Thread(target=lambda: vol(d, "create", "cut", "--size=16MB"))
    t.start()
    wait_for(lambda: listed(d).get("cut", {}).get("state") == "creating", "never creating", 60)
    d.kill9()
    t.join()
    open(gate, "w").close()
    d.start()
    assert set(listed(d)) == {"slow"}
    assert not os.path.exists(os.path.join(d.state, "volumes", "cut"))
    assert "volume cut: removed what a creation cut short left" in d.log()
    # no mke2fs at all: refused before anything is made, naming what is missing
    os.unlink(os.path.join(d.dir, "mke2fs"))
    p = vol(d, "create", "none", "--size=16MB")
    assert p.returncode == 1 and "--type: filesystem volumes need mke2fs (Debian package e2fsprogs" in p.stderr, p.stderr
    assert vol(d, "create", "none", "--size=16MB", "--type=memory").returncode == 0
