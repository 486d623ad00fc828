"""Joblet on a v1-only host (exec/cgroup.h), on this machine's real kernel.

This host is hybrid: v1 controllers under /sys/fs/cgroup/<controller> and cgroup2 at
/sys/fs/cgroup/unified. The daemon here runs in a mount namespace of its own without any cgroup2
mount (conftest.V1ONLY_WRAP), so that it finds the v1 controllers only, as on RHEL 8 or Ubuntu
20.04, and everything it does goes through them: limits, statistics, the device list (devices.deny
and devices.allow) and suspend/resume (the v1 freezer's freezer.state). The host's own mounts are
not touched, and each test checks what the kernel holds from outside, in the host's namespace.

One daemon for the module; each test ends the jobs it started."""
import json
import os
import shutil
import stat
import subprocess
import sys
import uuid

import pytest

from conftest import BUILD, need_root, v1only_daemon, wait_for
from test_isolation import CGROUP_HELPER, unused_char_major  # (the device tests' helpers)

HIERARCHIES = ("cpu", "cpuacct", "memory", "pids", "blkio", "cpuset", "devices", "freezer")
# a counter written every 50 ms to /work/n: it stands still while the job is frozen
PIDS_MAX = 64  # jobs.pids_max: every job's pids.max
COUNTER = ["sh", "-c", "i=0; while :; do i=$((i+1)); echo $i > /work/n.tmp; mv /work/n.tmp /work/n; sleep 0.05; done"]


def host_cgroup2_mounts():
    with open("/proc/self/mountinfo") as f:
        return sorted(l.split()[4] for l in f if " - cgroup2 " in l)


def start_v1only():
    need_root()
    for c in ("cpu", "memory", "pids", "devices", "freezer"):
        if not os.path.isfile(f"/sys/fs/cgroup/{c}/cgroup.procs"):
            pytest.skip(f"this host has no v1 {c} controller at /sys/fs/cgroup/{c}")
    if not shutil.which("unshare"):
        pytest.skip("unshare (util-linux) is not installed")
    return v1only_daemon(f"jobs:\n  pids_max: {PIDS_MAX}\n").start()


@pytest.fixture(scope="module")
def d():
    before = host_cgroup2_mounts()
    dm = start_v1only()
    yield dm
    dm.cleanup()
    assert host_cgroup2_mounts() == before, "the host's cgroup2 mounts changed"
    assert_no_cgroups_left(dm)


def assert_no_cgroups_left(dm):
    for base in ["/sys/fs/cgroup/unified"] + [f"/sys/fs/cgroup/{c}" for c in HIERARCHIES]:
        assert not os.path.exists(os.path.join(base, dm.cgroup_root)), f"{base}/{dm.cgroup_root} is left"


def job_dirs(d, jid, uid=0):
    """The job's directory in every v1 hierarchy of the host that holds one."""
    dirs = {c: os.path.join("/sys/fs/cgroup", c, d.cgroup_root, d.job_cgroup(jid, uid)) for c in HIERARCHIES}
    return {c: p for c, p in dirs.items() if os.path.isdir(p)}


def read(path):
    with open(path) as f:
        return f.read().strip()


def counter(d, jid):
    try:
        return int(read(os.path.join(d.work(jid), "n")) or 0)
    except FileNotFoundError:
        return 0


def running_counter(d):
    jid = d.submit(*COUNTER)
    d.wait_status(jid, "RUNNING")
    wait_for(lambda: counter(d, jid) > 0, f"job {jid}'s counter")
    return jid


def end(d, *jids):
    for jid in jids:
        if d.job(jid)["status"] not in ("STOPPED", "COMPLETED", "FAILED", "CANCELED"):
            d.api("POST", f"/v1/jobs/{jid}/kill")
    for jid in jids:
        d.wait(jid)


def gone(d, jid):
    """All the job's cgroups removed, in every v1 hierarchy, once it has ended."""
    wait_for(lambda: not job_dirs(d, jid), f"the cgroups of job {jid} removed (left: {job_dirs(d, jid)})")


# ---- the layout --------------------------------------------------------------------------------

def test_the_daemon_sees_v1_only_and_the_host_keeps_its_cgroup2(d):
    assert "cgroup layout v1," in d.log(), d.log()[-2000:]
    code, v = d.api("GET", "/v1/version")
    assert code == 200 and v["cgroup_layout"] == "v1", v
    assert "/sys/fs/cgroup/unified" in host_cgroup2_mounts()
    with open(f"/proc/{d.proc.pid}/mountinfo") as f:
        assert not [l for l in f if " - cgroup2 " in l]
    # joblet made nothing on the cgroup2 tree it cannot see
    assert not os.path.exists(os.path.join("/sys/fs/cgroup/unified", d.cgroup_root))


# ---- jobs and their limits ---------------------------------------------------------------------

def test_a_plain_job_runs_and_its_cgroups_go(d):
    jid = d.submit("sh", "-c", "echo hello; while [ ! -e /work/go ]; do sleep 0.05; done")
    d.wait_status(jid, "RUNNING")
    # while it runs: its cgroups in the v1 hierarchies its limits use, its processes in them
    dirs = job_dirs(d, jid)
    assert {"memory", "pids", "devices", "freezer"} <= set(dirs), dirs
    for c in ("memory", "pids", "devices", "freezer"):
        assert read(os.path.join(dirs[c], "cgroup.procs")).split(), (c, dirs[c])
    open(os.path.join(d.work(jid), "go"), "w").close()
    job = d.wait(jid)
    assert job["status"] == "COMPLETED" and job["exit_code"] == 0, job
    assert d.output(jid) == "hello\n"
    assert job["usage"]["cpu_ns"] > 0, job["usage"]
    gone(d, jid)


OOM_PROBE = r"""
chunks = []
for i in range(512):
    chunks.append(b"\x01" * (1 << 20))
print("allocated 512 MiB without being killed", flush=True)
"""


def test_memory_limit_kills_and_is_reported(d):
    job, out, _ = d.run("python3", "-c", OOM_PROBE, max_memory_mb=64)
    assert "without being killed" not in out, job
    assert job["status"] == "FAILED" and job["end_reason"] == "oom_killed" and job["exit_code"] == 137, job
    assert 32 << 20 <= job["usage"]["memory_peak_bytes"] <= 68 << 20, job["usage"]
    assert "out of memory" in d.rnx("job", "status", job["id"], check=True).stdout
    gone(d, job["id"])


FORKS = r"""
import errno, json, os, time
made, err = 0, None
for _ in range(500):
    try:
        pid = os.fork()
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
        break
    if pid == 0:
        time.sleep(3600)
        os._exit(0)
    made += 1
print(json.dumps({"made": made, "error": err}), flush=True)
"""


def test_pids_limit_holds(d):
    job, out, err = d.run("python3", "-c", FORKS)
    assert job["status"] == "COMPLETED", (job, out, err)
    assert job["limits"]["pids_max"] == PIDS_MAX, job["limits"]
    r = json.loads(out.splitlines()[-1])
    # init and the forking python count too
    assert r["error"] == "EAGAIN" and PIDS_MAX - 8 <= r["made"] < PIDS_MAX, r
    gone(d, job["id"])


def test_max_cpu_sets_the_cfs_quota(d):
    jid = d.submit("sleep", "600", max_cpu=50)
    d.wait_status(jid, "RUNNING")
    dirs = job_dirs(d, jid)
    assert read(os.path.join(dirs["cpu"], "cpu.cfs_period_us")) == "100000"
    assert read(os.path.join(dirs["cpu"], "cpu.cfs_quota_us")) == "50000"
    assert read(os.path.join(dirs["cpu"], "cgroup.procs")).split(), "the job is not in its cpu cgroup"
    end(d, jid)
    gone(d, jid)


def in_cgroups(node, procs_files):
    p = subprocess.run([sys.executable, "-c", CGROUP_HELPER, node, *procs_files], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_device_list_refuses_a_device_not_given(d):
    node_dir = os.path.join(d.dir, "devtest-" + uuid.uuid4().hex[:8])
    os.mkdir(node_dir, 0o755)
    node = os.path.join(node_dir, "nodev0")
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(unused_char_major(), 0))
    jid = d.submit("sleep", "600")
    try:
        assert in_cgroups(node, [])["node"] in ("ENXIO", "ENODEV")  # outside: no driver, no filter
        d.wait_status(jid, "RUNNING")
        dev = job_dirs(d, jid)["devices"]
        allowed = read(os.path.join(dev, "devices.list")).splitlines()
        assert "a *:* rwm" not in allowed and "c 1:3 rw" in allowed, allowed
        assert in_cgroups(node, [os.path.join(dev, "cgroup.procs")]) == {"node": "EPERM", "null": "ok"}
        # the job itself: its /dev has only the standard nodes, and /dev/null works
        job, out, err = d.run("sh", "-c", "ls /dev; echo x > /dev/null && echo wrote")
        assert job["status"] == "COMPLETED" and out.rstrip().endswith("wrote"), (job, out, err)
    finally:
        end(d, jid)
        os.unlink(node)
        os.rmdir(node_dir)
    gone(d, jid)


# ---- suspend and resume: the v1 freezer --------------------------------------------------------

def test_suspend_freezes_the_job_and_resume_thaws_it(d):
    jid = running_counter(d)
    other = running_counter(d)  # the clock the frozen one is held against
    freezer = job_dirs(d, jid)["freezer"]
    assert read(os.path.join(freezer, "freezer.state")) == "THAWED"
    assert read(os.path.join(freezer, "cgroup.procs")).split(), "the job's init is not in its freezer cgroup"
    p = d.rnx("job", "suspend", jid)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert p.stdout == f"suspended {jid} (SUSPENDED)\n"
    # (FREEZING settles within the second joblet waits for it, or soon after on a loaded host)
    wait_for(lambda: read(os.path.join(freezer, "freezer.state")) == "FROZEN", f"job {jid} frozen")
    assert d.job(jid)["status"] == "SUSPENDED"
    assert "SUSPENDED" in d.rnx("job", "status", jid, check=True).stdout
    # it stands still while the other job's counter goes on 20 steps
    at = counter(d, jid)
    mark = counter(d, other)
    wait_for(lambda: counter(d, other) >= mark + 20, f"job {other}'s counter")
    assert counter(d, jid) == at, "the suspended job's counter moved"
    p = d.rnx("job", "resume", jid)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert p.stdout == f"resumed {jid} (RUNNING)\n"
    assert read(os.path.join(freezer, "freezer.state")) == "THAWED"
    wait_for(lambda: counter(d, jid) > at + 5, f"job {jid}'s counter again after the resume")
    end(d, jid, other)
    gone(d, jid)
    gone(d, other)


def test_a_resumed_job_runs_to_its_end(d):
    jid = d.submit("sh", "-c", "while [ ! -e /work/go ]; do sleep 0.05; done; echo done")
    d.wait_status(jid, "RUNNING")
    d.rnx("job", "suspend", jid, check=True)
    open(os.path.join(d.work(jid), "go"), "w").close()
    d.rnx("job", "resume", jid, check=True)
    job = d.wait(jid)
    assert job["status"] == "COMPLETED" and job["exit_code"] == 0, job
    assert d.output(jid) == "done\n"
    gone(d, jid)


def test_suspend_refusals_are_as_before(d):
    later = d.submit("true", schedule_at="2031-01-01T00:00:00Z")
    code, e = d.api("POST", f"/v1/jobs/{later}/suspend")
    assert (code, e["error"]["message"]) == (409, f"job {later} is SCHEDULED; only a running job can be suspended")
    code, e = d.api("POST", f"/v1/jobs/{later}/resume")
    assert (code, e["error"]["message"]) == (409, f"job {later} is SCHEDULED; only a suspended job can be resumed")
    end(d, later)
    done, _, _ = d.run("true")
    code, e = d.api("POST", f"/v1/jobs/{done['id']}/suspend")
    assert code == 409 and "only a running job can be suspended" in e["error"]["message"], e


def test_stop_and_kill_of_a_suspended_job(d):
    a = running_counter(d)
    b = running_counter(d)
    d.rnx("job", "suspend", a, b, check=True)
    assert d.rnx("job", "stop", a).returncode == 0
    assert d.rnx("job", "kill", b).returncode == 0
    ja, jb = d.wait(a), d.wait(b)
    assert ja["status"] == jb["status"] == "STOPPED", (ja, jb)
    gone(d, a)
    gone(d, b)


def test_a_suspended_job_stays_so_over_a_kill_9_and_resumes_after(request):
    dd = start_v1only()
    request.addfinalizer(lambda: (dd.cleanup(), assert_no_cgroups_left(dd)))
    jid = running_counter(dd)
    other = running_counter(dd)
    freezer = job_dirs(dd, jid)["freezer"]
    dd.rnx("job", "suspend", jid, check=True)
    dd.kill9()
    wait_for(lambda: read(os.path.join(freezer, "freezer.state")) == "FROZEN", f"job {jid} frozen")
    dd.start()
    assert dd.job(jid)["status"] == "SUSPENDED"
    at, mark = counter(dd, jid), counter(dd, other)
    wait_for(lambda: counter(dd, other) >= mark + 20, f"job {other}'s counter")
    assert counter(dd, jid) == at
    dd.rnx("job", "resume", jid, check=True)
    assert read(os.path.join(freezer, "freezer.state")) == "THAWED"
    wait_for(lambda: counter(dd, jid) > at + 5, f"job {jid}'s counter after the resume")
    end(dd, jid, other)
    gone(dd, jid)


def test_kill_ends_a_job_frozen_behind_joblets_back(d):
    """A v1 freezer holds SIGKILL until the thaw (cgroup2's lets it through): a job frozen by
    someone else (an admin writing its freezer.state) still ends by rnx job kill, and its cgroups go."""
    jid = running_counter(d)
    state = os.path.join(job_dirs(d, jid)["freezer"], "freezer.state")
    with open(state, "w") as f:
        f.write("FROZEN")
    wait_for(lambda: read(state) == "FROZEN", f"job {jid} frozen")
    assert d.job(jid)["status"] == "RUNNING"  # joblet did not freeze it
    assert d.rnx("job", "kill", jid).returncode == 0
    job = d.wait(jid)
    assert job["status"] == "STOPPED" and job["end_reason"] == "killed", job
    gone(d, jid)


def test_the_freezer_cgroup_of_a_job_the_database_does_not_hold_is_swept_at_start(request):
    """A joblet killed while a shim made a job's cgroups leaves them for the next start to remove
    (core/orphans.c): the freezer tree's too."""
    dd = start_v1only()
    request.addfinalizer(lambda: (dd.cleanup(), assert_no_cgroups_left(dd)))
    dd.run("true")  # the user's level, in every hierarchy
    dd.stop()
    orphan = str(uuid.uuid4())
    # left in the freezer tree only (the shim's rollback got the others), as in any one tree
    dirs = [os.path.join("/sys/fs/cgroup/freezer", dd.cgroup_root, "user-0", orphan)]
    for p in dirs:
        os.mkdir(p)
    dd.start()
    wait_for(lambda: not any(os.path.exists(p) for p in dirs), f"the cgroups of unknown job {orphan} removed")


def test_a_process_exec_starts_in_a_job_is_in_its_freezer_cgroup(d):
    """rnx job exec's process joins the job's cgroups, its freezer's too: a suspend freezes it
    with the job's own."""
    jid = d.submit("sleep", "600")
    d.wait_status(jid, "RUNNING")
    procs = os.path.join(job_dirs(d, jid)["freezer"], "cgroup.procs")
    before = set(read(procs).split())
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    client = subprocess.Popen([os.path.join(BUILD, "rnx"), "job", "exec", jid, "sleep", "601"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def execd():
            for pid in set(read(procs).split()) - before:
                try:
                    if read(f"/proc/{pid}/cmdline").split("\0")[:2] == ["sleep", "601"]:
                        return pid
                except OSError:
                    pass
        pid = wait_for(execd, "the exec'd process in the job's freezer cgroup")
        d.rnx("job", "suspend", jid, check=True)
        # FROZEN: the kernel froze every task of the cgroup, the exec'd one among them
        wait_for(lambda: read(os.path.join(os.path.dirname(procs), "freezer.state")) == "FROZEN", "frozen")
        assert pid in read(procs).split()
        d.rnx("job", "resume", jid, check=True)
    finally:
        client.kill()
        client.wait()
    end(d, jid)
    gone(d, jid)
