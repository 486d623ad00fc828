"""One user's share of the CPU may never starve another's.

User A runs four busy jobs, user B one, all on one CPU (cpu_cores, so that they compete whatever
the host's size). The CPU is split between the users' levels <root>/user-UID, not between their
jobs' threads: B's one job gets about as much as A's four together (half each; without the split
B's got a fifth, a quarter of A's). On v2 hosts the cgroup2 cpu controller, enabled at the root and
at each user's level, does it; on hybrid and v1 hosts a job without a CPU limit has no v1 cpu
cgroup of its own and joins its user's level there (exec/cgroup.h, cg_job_cpu_level). Compared
from the jobs' usage.cpu_ns over a few seconds; no wall-clock bound is asserted.

Run twice on a hybrid host: by the daemon as it finds the host, and by one that sees v1 only
(conftest.V1ONLY_WRAP), where the job's CPU time is counted by its own v1 cpuacct cgroup."""
import os
import time

import pytest

from conftest import Daemon, api_as, need_root, need_setpriv, v1only_daemon, wait_for

USER_A, USER_B = 4881, 4882
BUSY = ["-c", "while :; do :; done"]
A_JOBS = 4
SECONDS = 4.0


def host_is_hybrid():
    return os.path.isfile("/sys/fs/cgroup/unified/cgroup.procs")


def has_v1_cpu():
    return os.path.isfile("/sys/fs/cgroup/cpu/cgroup.procs")


@pytest.fixture(params=["host", "v1only"])
def d(request):
    need_root()
    need_setpriv()
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("fewer than 2 CPUs: the busy jobs would hold the only one the daemon and the test have")
    v2 = os.path.isfile("/sys/fs/cgroup/cgroup.controllers")
    if request.param == "v1only" and not (host_is_hybrid() and has_v1_cpu()):
        pytest.skip("a v1-only daemon is made on a hybrid host with a v1 cpu controller only")
    if request.param == "host" and not v2 and not has_v1_cpu():
        pytest.skip("this hybrid or v1 host has no v1 cpu controller at /sys/fs/cgroup/cpu")
    dm = (v1only_daemon() if request.param == "v1only" else Daemon()).start()
    yield dm
    dm.cleanup()


def submit(d, user, cpu):
    st, job = api_as(d, user, "POST", "/v1/jobs", {"command": "sh", "args": BUSY, "cpu_cores": str(cpu)})
    assert st == 201, job
    return job["id"]


def cpu_ns(d, jid):
    job = d.job(jid)
    assert job["status"] == "RUNNING", job
    return job["usage"]["cpu_ns"]


def cpu_cgroup_of(pid):
    """The pid's cgroup in the v1 cpu hierarchy ("" on a host without one)."""
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if "cpu" in ctrls.split(","):
                return path
    return ""


def test_one_job_of_a_user_gets_as_much_cpu_as_four_of_another(d):
    cpu = max(os.sched_getaffinity(0))
    a = [submit(d, USER_A, cpu) for _ in range(A_JOBS)]
    b = [submit(d, USER_B, cpu)]
    try:
        for jid in a + b:
            d.wait_status(jid, "RUNNING")
        # the scheduler has had a moment with all five before the first sample
        wait_for(lambda: all(cpu_ns(d, j) > 0 for j in a + b), "every busy job counted some CPU time")
        time.sleep(0.5)
        before = {j: cpu_ns(d, j) for j in a + b}
        time.sleep(SECONDS)
        after = {j: cpu_ns(d, j) for j in a + b}
        got = {j: after[j] - before[j] for j in a + b}
        total_a, total_b = sum(got[j] for j in a), got[b[0]]
        assert total_a > 0 and total_b > 0, got
        # half each with the split, B a quarter of A without it
        assert total_b >= 0.5 * total_a, (f"user B's one job got {total_b / 1e9:.2f} s of CPU, user A's {A_JOBS} "
                                          f"jobs {total_a / 1e9:.2f} s: the CPU is split per job, not per user", got)
        if has_v1_cpu():
            # where the v1 cpu controller is used, each job's processes are in its user's level there
            for user, jids in ((USER_A, a), (USER_B, b)):
                for jid in jids:
                    pid = d.job(jid).get("pid")
                    if pid:
                        want = f"/{d.cgroup_root}/user-{user}"
                        assert cpu_cgroup_of(pid) == want, (jid, cpu_cgroup_of(pid))
    finally:
        for jid in a + b:
            d.api("POST", f"/v1/jobs/{jid}/stop")
        for jid in a + b:
            d.wait(jid)


def cpu_cgroups_of(pid):
    """A process's cgroups in the hierarchies that account its CPU (v1 cpu and cpuacct, cgroup2)."""
    out = {}
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            for name in ("cpu", "cpuacct", ""):
                if name in ctrls.split(","):
                    out[name or "cgroup2"] = path
    return out


def shim_of(d, jid):
    pid = d.job(jid)["pid"]
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def test_a_jobs_shim_spends_the_cpu_its_output_costs_in_its_users_level(d):
    """The shim reads the job's output into its log: about as much CPU as writing it cost the job
    (1.5 s for 1 GB here), and as much for what it drops past the log's cap. On hybrid and v1 hosts
    the shim was in the daemon's CPU cgroups (its user's level held it for tasks only), where each
    shim weighs as much as a whole user's level: a user's jobs writing output took that CPU from
    every other user's share. Past 8 MiB of output the shim is in its user's level ("shims") in
    every hierarchy that accounts CPU; a job of little output does not pay the moves."""
    big = api_as(d, USER_A, "POST", "/v1/jobs", {"command": "sh", "args": [
        "-c", "head -c 64000000 /dev/zero; echo; echo WROTE; exec sleep 300"]})[1]["id"]
    small = api_as(d, USER_A, "POST", "/v1/jobs", {"command": "sh", "args": ["-c", "echo hi; exec sleep 300"]})[1]["id"]
    try:
        d.wait_status(big, "RUNNING")
        d.wait_status(small, "RUNNING")
        wait_for(lambda: "WROTE" in d.output(big)[-16:], "the big job's output is in its log")
        level = f"/{d.cgroup_root}/user-{USER_A}/shims"
        got = cpu_cgroups_of(shim_of(d, big))
        if d.wrap:  # a v1-only daemon (V1ONLY_WRAP) does not see the cgroup2 hierarchy
            got.pop("cgroup2", None)
        assert got and all(p == level for p in got.values()), (level, got)
        if not os.path.isfile("/sys/fs/cgroup/cgroup.controllers"):
            # (on a v2 host every shim is in its user's level from its start)
            small_got = cpu_cgroups_of(shim_of(d, small))
            assert not any(p.startswith(level) for p in small_got.values()), small_got
    finally:
        for jid in (big, small):
            d.api("POST", f"/v1/jobs/{jid}/kill")
        for jid in (big, small):
            d.wait(jid)


def shims_cpu_ns(d, user):
    """CPU time spent so far in the user's level's "shims" of the hierarchy that accounts CPU:
    v1 cpuacct where there is one, else cgroup2's cpu.stat. -1 when it is not there."""
    acct = f"/sys/fs/cgroup/cpuacct/{d.cgroup_root}/user-{user}/shims/cpuacct.usage"
    if os.path.exists("/sys/fs/cgroup/cpuacct/cgroup.procs"):
        return int(open(acct).read()) if os.path.exists(acct) else -1
    base = "/sys/fs/cgroup/unified" if host_is_hybrid() else "/sys/fs/cgroup"
    stat = f"{base}/{d.cgroup_root}/user-{user}/shims/cpu.stat"
    if not os.path.exists(stat):
        return -1
    return next(int(l.split()[1]) * 1000 for l in open(stat) if l.startswith("usage_usec"))


def test_a_copy_out_of_a_job_spends_its_cpu_in_its_users_level(d):
    """rnx job cp makes a tar of what it copies in joblet-copy, as the job's user: CPU in
    proportion to the bytes (and libarchive's work per entry). It was counted in its user's level
    for tasks only, its CPU the daemon's on hybrid and v1 hosts; now it is in the level's "shims"
    in every hierarchy that accounts CPU. No output is written (so the job's shim does not join
    the level: test above); the CPU of shims grows by the copy's."""
    import subprocess
    from conftest import BUILD, setpriv
    jid = api_as(d, USER_B, "POST", "/v1/jobs", {"command": "sh", "args": [
        "-c", "head -c 300000000 /dev/zero > /work/big && touch /work/done; exec sleep 300"]})[1]["id"]
    try:
        d.wait_status(jid, "RUNNING")
        wait_for(lambda: os.path.exists(os.path.join(d.work(jid), "done")), "the job wrote its file")
        before = shims_cpu_ns(d, USER_B)
        env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock,
               **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}}
        p = subprocess.run([*setpriv(USER_B), os.path.join(BUILD, "rnx"), "job", "cp", "-q", f"{jid}:/work/big", "-"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, timeout=150)
        assert p.returncode == 0, p.stderr
        after = shims_cpu_ns(d, USER_B)
        assert after > max(before, 0), (f"the copy of 300 MB spent no CPU in user {USER_B}'s level "
                                        f"(shims: {before} -> {after} ns)")
    finally:
        d.api("POST", f"/v1/jobs/{jid}/kill")
        d.wait(jid)
