"""A clean stop leaves no mount of joblet's that no job needs (issue 26, item 6): a daemon stopped
by SIGTERM unmounts the /work filesystem (jobs.work_quota, core/workfs.h) of each owner with no
live job, and its loop device goes with it (autoclear); with no gVisor job left, the runsc tmpfs
(<state>/runsc) as well. An owner whose job still runs keeps its /work: the next daemon re-adopts
the job and uses the same filesystem through the same loop device."""
import glob
import json
import os
import shutil
import subprocess

import pytest

from conftest import BUILD, ROOT, need_root, rnx_as, wait_for

OTHER = 4326  # a second owner, no passwd entry needed (as in test_work_quota.py)
RUNSC = shutil.which("runsc") or ("/usr/bin/runsc" if os.path.exists("/usr/bin/runsc") else None)


def need_loops():
    if not (os.path.exists("/dev/loop-control") and shutil.which("mke2fs")):
        pytest.skip("no loop devices or no mke2fs here: jobs.work_quota cannot be enforced")


def mounts_under(root):
    """The mount points in /proc/self/mountinfo at or below root."""
    root = os.path.realpath(root)
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return sorted(p for p in points if p == root or p.startswith(root + "/"))


def loops_under(root):
    """The loop devices whose backing file lies below root."""
    root = os.path.realpath(root)
    held = []
    for bf in glob.glob("/sys/block/loop*/loop/backing_file"):
        try:
            with open(bf) as f:
                backing = f.read().strip()
        except OSError:
            continue
        if backing.startswith(root + "/"):
            held.append((bf.split("/")[3], backing))
    return sorted(held)


def loops_become(d, want, what):
    """Waits until the loop devices under d's directory are want. A loop device goes when the
    last mount of its filesystem does, in any mount namespace: one another test's process copied
    while the filesystem was mounted (ip netns exec, unshare --mount, a Slurm daemon, in another
    worker) holds it until that process ends."""
    wait_for(lambda: want(loops_under(d.dir)), what, timeout=180)


def test_clean_stop_with_no_live_job_leaves_no_mount(fresh_daemon):
    need_loops()
    d = fresh_daemon()
    # two owners, each with a /work filesystem of its own; every job ended
    root_job, out, _ = d.run("sh", "-c", "echo root > /work/f; cat /work/f")
    assert root_job["status"] == "COMPLETED" and out == "root\n", (root_job, out)
    p = rnx_as(d, OTHER, "job", "run", "--follow", "sh", "-c", "echo other > /work/f; cat /work/f")
    assert p.returncode == 0 and "other" in p.stdout, (p.stdout, p.stderr)
    if RUNSC:  # a gVisor job mounts the runsc tmpfs
        job, out, _ = d.run("sh", "-c", "echo sandboxed", isolation="gvisor", timeout=120)
        assert job["status"] == "COMPLETED", (job, d.log()[-3000:])
        assert os.path.join(d.state, "runsc") in mounts_under(d.dir)
    assert os.path.join(d.state, "work", "0") in mounts_under(d.dir)
    assert os.path.join(d.state, "work", str(OTHER)) in mounts_under(d.dir)
    assert len(loops_under(d.dir)) == 2, loops_under(d.dir)
    d.stop()
    assert d.proc.returncode == 0, d.log()[-3000:]
    assert mounts_under(d.dir) == [], (mounts_under(d.dir), d.log()[-3000:])
    loops_become(d, lambda ls: ls == [], "no loop device left after the stop")
    # the images and their jobs' work stay: a daemon started again mounts them and serves
    d.start()
    assert os.path.join(d.state, "work", "0") in mounts_under(d.dir)
    with open(os.path.join(d.state, "work", "0", root_job["id"], "f")) as f:
        assert f.read() == "root\n"
    job, out, _ = d.run("cat", "/etc/hostname")
    assert job["status"] == "COMPLETED", job
    d.stop()
    assert mounts_under(d.dir) == [], mounts_under(d.dir)
    loops_become(d, lambda ls: ls == [], "no loop device left after the stop")


def test_a_live_job_keeps_its_work_across_a_clean_stop(fresh_daemon):
    need_loops()
    d = fresh_daemon()
    # root's job runs on across the stop; the other owner's has ended
    jid = d.submit("sh", "-c", "echo before > /work/f; while [ ! -e /work/go ]; do sleep 0.05; done; "
                               "cat /work/f /work/go")
    d.wait_status(jid, "RUNNING")
    p = rnx_as(d, OTHER, "job", "run", "--follow", "true")
    assert p.returncode == 0, (p.stdout, p.stderr)
    root_fs = os.path.join(d.state, "work", "0")
    other_fs = os.path.join(d.state, "work", str(OTHER))
    assert root_fs in mounts_under(d.dir) and other_fs in mounts_under(d.dir)
    (root_loop,) = [dev for dev, img in loops_under(d.dir) if img.endswith("/0.img")]
    d.stop()
    assert d.proc.returncode == 0, d.log()[-3000:]
    assert mounts_under(d.dir) == [root_fs], (mounts_under(d.dir), d.log()[-3000:])
    loops_become(d, lambda ls: [dev for dev, _ in ls] == [root_loop], "only the live job's loop device kept")
    # the next daemon re-adopts the job, which goes on with the same /work
    d.start()
    assert d.job(jid)["status"] == "RUNNING", d.job(jid)
    with open(os.path.join(root_fs, jid, "go"), "w") as f:
        f.write("after\n")
    done = d.wait(jid, timeout=60)
    assert done["status"] == "COMPLETED", done
    assert d.output(jid) == "before\nafter\n", d.output(jid)
    assert [dev for dev, img in loops_under(d.dir) if img.endswith("/0.img")] == [root_loop]
    # the other owner's filesystem, unmounted at the stop, was mounted again at the start
    assert other_fs in mounts_under(d.dir)
    d.stop()
    assert mounts_under(d.dir) == [], mounts_under(d.dir)
    loops_become(d, lambda ls: ls == [], "no loop device left after the stop")


@pytest.mark.skipif(RUNSC is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")
def test_a_live_gvisor_job_keeps_the_runsc_tmpfs_across_a_clean_stop(fresh_daemon):
    d = fresh_daemon()
    runsc = os.path.join(d.state, "runsc")
    jid = d.submit("sh", "-c", "echo up; sleep 600", isolation="gvisor")
    d.wait_status(jid, "RUNNING", timeout=60)
    d.stop()
    assert d.proc.returncode == 0, d.log()[-3000:]
    assert runsc in mounts_under(d.dir), mounts_under(d.dir)  # its sandbox's state is there
    d.start()
    assert d.job(jid)["status"] == "RUNNING", d.job(jid)  # re-adopted, its sandbox's state found
    d.rnx("job", "stop", jid, check=True)
    assert d.wait(jid)["status"] in ("STOPPED", "KILLED", "FAILED"), d.job(jid)
    d.stop()
    assert mounts_under(d.dir) == [], mounts_under(d.dir)


# ---- issue 26, item 9 (part): what rnx and joblet say about simulated and allocated GPUs ----

def sim_config():
    return f"gpu:\n  fixture: {ROOT}/tests/fixtures/dgx-h100/machine.json\n  scrub: 0\n"


def show(d, gpu):
    p = d.rnx("gpu", "show", str(gpu), check=True)
    return {line.split(":", 1)[0] + ":": line.split(":", 1)[1].strip() for line in p.stdout.splitlines()
            if ":" in line and not line.startswith(" ")}


def test_gpu_show_says_an_allocated_gpu_takes_no_new_job(fresh_daemon):
    d = fresh_daemon(sim_config())
    p = d.rnx("job", "run", "--gpu=2", "sleep", "600", check=True)
    jid = p.stdout.strip()
    held = [g["index"] for g in d.wait_status(jid, "RUNNING")["gpus"]]
    free = next(g["index"] for g in d.api("GET", "/v1/gpus")[1]["gpus"] if g["index"] not in held)
    for g in held:
        s = show(d, g)
        assert s["State:"].startswith("allocated"), s
        # docs/health.md: allocated -> takes new jobs: no
        assert s["Takes new jobs:"].startswith("no") and jid in s["Takes new jobs:"], s
    s = show(d, free)
    assert s["State:"] == "available" and s["Takes new jobs:"] == "yes", s
    d.rnx("job", "stop", jid, check=True)
    d.wait(jid)
    s = show(d, held[0])
    assert s["Takes new jobs:"] == "yes", s


def test_cdi_generate_marks_a_simulated_machine(tmp_path):
    cfg = tmp_path / "joblet.yml"
    cfg.write_text(sim_config())
    out = tmp_path / "nvidia.json"
    p = subprocess.run([os.path.join(BUILD, "joblet"), "--config", str(cfg), "cdi", "generate", "--output", str(out)],
                       capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    spec = json.loads(out.read_text())
    # every GPU is named, none has a node: the spec says why
    assert all(d["containerEdits"]["deviceNodes"] == [] for d in spec["devices"]), spec["devices"][:2]
    assert spec["annotations"]["joblet.dev/simulated"] == "true", spec.get("annotations")
    assert "simulated" in spec["annotations"]["joblet.dev/note"]
    assert spec["cdiVersion"] == "0.6.0"  # the first CDI version with annotations
    assert "simulated" in p.stderr and "no device nodes" in p.stderr, p.stderr


def test_cdi_generate_leaves_real_gpus_unmarked(tmp_path):
    need_root()
    from test_cdi import generate  # the fake NVML machine of test_cdi.py: device nodes made with mknod
    p, _ = generate(tmp_path, "dgx-h100")
    spec = json.loads(p.stdout)
    assert "annotations" not in spec and spec["cdiVersion"] == "0.5.0", spec.get("annotations")
    assert "simulated" not in p.stderr, p.stderr

