"""What a user's jobs cost the host, and who may touch a gVisor sandbox (issue 25, findings 4
and 8; docs/hardening.md, "Second round").

Finding 8: every runsc ran its sandbox as host uid nobody, so any nobody process could kill
every user's gVisor job. Each sandbox now has a host uid of its own: the probes below try to
signal a gVisor job's host processes as nobody and as another job's sandbox uid (signal 0, the
kernel's permission check, then a real SIGKILL: the only thing it could hurt is this test's own
job, which must still be running afterwards).

Finding 4: a user's jobs together hold at most jobs.max_pids_per_user host tasks, gVisor's
runsc, gofer and sandbox and the per-job shim included (the per-user cgroup level), and at most
limits.max_running_per_user jobs run at once (the others wait QUEUED). The tests count host
tasks in the cgroups, not processes of the user's uid."""
import glob
import json
import os
import shutil
import subprocess

import pytest

from conftest import local_account, need_setpriv, rnx_as, setpriv, wait_for

RUNSC = shutil.which("runsc") or ("/usr/bin/runsc" if os.path.exists("/usr/bin/runsc") else None)
needs_runsc = pytest.mark.skipif(RUNSC is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")
NOBODY = 65534
CG_BASES = ["/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"]


def job_cgroup(d, job_id):
    """The job's directory in the hierarchy that counts tasks (pids on v1/hybrid, else cgroup2),
    wherever it sits under the daemon's cgroup root."""
    for base in CG_BASES:
        if not os.path.exists(os.path.join(base, "cgroup.procs")):
            continue
        found = glob.glob(os.path.join(base, d.cgroup_root, "**", job_id), recursive=True)
        if found:
            return found[0]
    return None


def tasks_of(cg):
    """Every host task (thread) in a cgroup and its descendants."""
    out = set()
    for dirpath, _, _ in os.walk(cg):
        try:
            with open(os.path.join(dirpath, "cgroup.threads" if os.path.exists(
                    os.path.join(dirpath, "cgroup.threads")) else "tasks")) as f:
                out |= {int(x) for x in f.read().split()}
        except FileNotFoundError:
            pass
    return out


def procs_of(cg):
    out = set()
    for dirpath, _, _ in os.walk(cg):
        try:
            with open(os.path.join(dirpath, "cgroup.procs")) as f:
                out |= {int(x) for x in f.read().split()}
        except FileNotFoundError:
            pass
    return out


def uid_of(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def signal_as(uid, pids, sig):
    """Sends sig to each pid as uid (setpriv, no groups); returns {pid: errno name or 'ok'}."""
    code = ("import os, sys, errno\n"
            "for p in map(int, sys.argv[2:]):\n"
            "    try:\n"
            "        os.kill(p, int(sys.argv[1])); print(p, 'ok')\n"
            "    except OSError as e:\n"
            "        print(p, errno.errorcode[e.errno])\n")
    p = subprocess.run([*setpriv(uid), "/usr/bin/python3", "-c", code, str(sig), *map(str, sorted(pids))],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return {int(a): b for a, b in (l.split() for l in p.stdout.splitlines())}


def running_gvisor_job(d, seconds=60):
    jid = d.submit("sh", "-c", f"echo up; sleep {seconds}; echo survived", isolation="gvisor")
    d.wait_status(jid, "RUNNING", timeout=60)
    wait_for(lambda: d.output(jid) == "up\n", f"gVisor job {jid} never printed", timeout=60)
    cg = wait_for(lambda: job_cgroup(d, jid), f"no cgroup for job {jid}", timeout=60)
    return jid, cg


@needs_runsc
def test_gvisor_sandbox_cannot_be_signalled_by_nobody_or_another_sandbox(fresh_daemon):
    d = fresh_daemon()
    a, cg_a = running_gvisor_job(d)
    b, cg_b = running_gvisor_job(d)
    pa, pb = procs_of(cg_a), procs_of(cg_b)
    uids_a = {uid_of(p) for p in pa} - {None}
    uids_b = {uid_of(p) for p in pb} - {None}
    # runsc and its gofer as root; the sandbox (the Sentry and its stubs) as one other uid
    sandbox_a, sandbox_b = uids_a - {0}, uids_b - {0}
    assert len(sandbox_a) == 1 and len(sandbox_b) == 1, (uids_a, uids_b)
    (vb,) = sandbox_b
    for who in (NOBODY, vb):
        # the kernel's permission check first (signal 0 sends nothing) ...
        got = signal_as(who, pa, 0)
        allowed = {p for p, r in got.items() if r == "ok"}
        assert not allowed, f"uid {who} may signal job {a}'s host processes {sorted(allowed)} (uids {uids_a})"
        assert all(r in ("EPERM", "ESRCH") for r in got.values()), got
        # ... then the real thing: nothing of job a may die of it
        signal_as(who, pa, 9)
    # a uid of each sandbox's own: not nobody, not the other's, not a job's
    assert NOBODY not in uids_a | uids_b, f"a sandbox runs as nobody: {uids_a} {uids_b}"
    assert sandbox_a != sandbox_b, (sandbox_a, sandbox_b)
    assert not (sandbox_a | sandbox_b) & {d.job(a)["uid"], d.job(b)["uid"]}, (sandbox_a, sandbox_b)
    assert d.job(a)["status"] == "RUNNING", d.job(a)
    assert all(uid_of(p) is not None for p in pa), "a process of job a died"
    # the job's own files are still its user's: the gofer writes as the job's uid
    jid = d.submit("sh", "-c", "echo x > /work/f; id -u", isolation="gvisor")
    job = d.wait(jid)
    assert job["exit_code"] == 0, (job, d.output(jid, "stderr"))
    assert os.stat(os.path.join(d.work(jid), "f")).st_uid == int(d.output(jid).strip())
    for j in (a, b):
        d.api("POST", f"/v1/jobs/{j}/kill")
    for j in (a, b):
        assert d.wait(j)["end_reason"] == "killed"


@needs_runsc
def test_gvisor_job_of_nobody_keeps_nobodys_files_and_a_sandbox_uid_of_its_own(fresh_daemon):
    """nobody's own gVisor job: its sandbox is not nobody either, and what it writes to /work is
    still nobody's on the host (the namespace swaps the two ids, exec/oci.h)."""
    d = fresh_daemon()
    p = rnx_as(d, NOBODY, "--json", "job", "run", "--isolation=gvisor", "sh", "-c",
               "echo up; echo x > /work/f; sleep 60")
    assert p.returncode == 0, p.stderr
    jid = json.loads(p.stdout)["id"]
    d.wait_status(jid, "RUNNING", timeout=60)
    wait_for(lambda: d.output(jid) == "up\n", f"gVisor job {jid} never printed", timeout=60)
    cg = wait_for(lambda: job_cgroup(d, jid), "no cgroup", timeout=60)
    uids = {uid_of(p) for p in procs_of(cg)} - {None}
    assert NOBODY not in uids and len(uids - {0}) == 1, uids
    got = signal_as(NOBODY, procs_of(cg), 0)
    assert not [p for p, r in got.items() if r == "ok"], got
    assert os.stat(os.path.join(d.work(jid), "f")).st_uid == NOBODY
    d.api("POST", f"/v1/jobs/{jid}/kill")
    assert d.wait(jid)["end_reason"] == "killed"


@pytest.fixture
def user():
    """A local user (useradd, jhg…), removed after the test."""
    need_setpriv()
    with local_account("jhg") as (_, uid, gid):
        yield uid, gid


def submit_as(d, user, *args):
    p = rnx_as(d, user, "--json", "job", "run", *args)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["id"]


def host_tasks_of_user(d, uid):
    """Host tasks (threads) of a user's unfinished jobs, counted where they are: every task in
    each job's cgroup, and each job's shim with its threads. Nothing here asks for the uid the
    tasks run as: gVisor's run as root and as its sandbox's uid."""
    n = 0
    for j in d.api("GET", "/v1/jobs")[1]["jobs"]:
        if j["owner_uid"] != uid or j["status"] not in ("RUNNING", "QUEUED", "STOPPING"):
            continue
        job = d.job(j["id"])
        cg = job_cgroup(d, j["id"])
        if cg:
            n += len(tasks_of(cg))
        if job.get("shim_pid"):
            try:
                n += len(os.listdir(f"/proc/{job['shim_pid']}/task"))
            except FileNotFoundError:
                pass
    return n


FORKER = """
import os, time
n = 0
for i in range(300):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    n += 1
print("got", n, flush=True)
time.sleep(120)
"""


@needs_runsc
def test_a_users_gvisor_and_native_jobs_never_hold_more_host_tasks_than_the_users_bound(fresh_daemon, user):
    """One gVisor job is ~50 host tasks (runsc, gofer, Sentry, stubs; none of them the user's
    uid, so RLIMIT_NPROC never saw them). With a bound of 120, two fit and the third cannot
    start; a native job that then forks as much as it can gets only what is left."""
    bound = 120
    d = fresh_daemon(f"jobs:\n  max_pids_per_user: {bound}\n")
    uid = user[0]
    gv = []
    for k in range(3):
        gv.append(submit_as(d, user, "--isolation=gvisor", "sh", "-c", "echo up; sleep 120"))
        jid = gv[-1]
        # the first two fit and start; the third may start, fail, or hang short of its tasks
        wait_for(lambda: d.job(jid)["status"] != "QUEUED", f"job {jid} never started", timeout=60)
        if k < 2:
            wait_for(lambda: d.output(jid) == "up\n", f"gVisor job {jid} never printed", timeout=60)
    # a native job forks sleepers until it cannot, then says how many it got
    native = submit_as(d, user, "python3", "-c", FORKER)
    wait_for(lambda: d.output(native).startswith("got") or d.job(native)["status"] in ("FAILED", "COMPLETED"),
             "the native job never said how many it forked", timeout=60)
    most = max(host_tasks_of_user(d, uid) for _ in range(20))
    assert most <= bound, f"uid {uid}'s jobs hold {most} host tasks, more than the bound of {bound}"
    # the bound was reached, not sidestepped: the native job got fewer than it wanted, or, when
    # the gVisor jobs had taken it all, could not start or fork at all
    out, job = d.output(native), d.job(native)
    if out.startswith("got "):
        assert int(out.split()[1]) < 300, out
    else:
        said = (job.get("error") or "") + d.output(native, "stderr")
        assert job["status"] == "FAILED" and ("jobs.max_pids_per_user" in said or "Resource temporarily" in said
                                              or "fork" in said), (job, said)
    for jid in gv + [native]:
        d.api("POST", f"/v1/jobs/{jid}/kill")


def test_a_users_jobs_beyond_max_running_per_user_wait_queued(fresh_daemon, user):
    """limits.max_running_per_user: a user's jobs past it wait QUEUED (not refused) and say
    why; the next starts when one ends; root's are not counted."""
    d = fresh_daemon("limits:\n  max_running_per_user: 2\n")
    uid = user[0]
    jobs = [submit_as(d, user, "sleep", "60") for _ in range(4)]
    wait_for(lambda: sum(d.job(j)["status"] == "RUNNING" for j in jobs) == 2, "two never ran", timeout=30)
    states = [d.job(j) for j in jobs]
    assert sorted(s["status"] for s in states) == ["QUEUED", "QUEUED", "RUNNING", "RUNNING"], states
    waiting = [s for s in states if s["status"] == "QUEUED"]
    for s in waiting:
        assert f"uid {uid}" in s["wait_reason"] and "limits.max_running_per_user is 2" in s["wait_reason"], s
    p = d.rnx("job", "status", waiting[0]["id"], check=True)
    assert "limits.max_running_per_user" in p.stdout, p.stdout
    # root's jobs beside them are not held back by the user's bound
    mine = [d.submit("sleep", "60") for _ in range(3)]
    for j in mine:
        d.wait_status(j, "RUNNING")
    # one of the user's ends: exactly one waiting job takes its place
    first = next(s["id"] for s in states if s["status"] == "RUNNING")
    d.api("POST", f"/v1/jobs/{first}/kill")
    d.wait(first)
    wait_for(lambda: sum(d.job(j)["status"] == "RUNNING" for j in jobs) == 2, "none took its place", timeout=30)
    assert sum(d.job(j)["status"] == "QUEUED" for j in jobs) == 1
    for j in jobs + mine:
        d.api("POST", f"/v1/jobs/{j}/kill")


def sandbox_uid(d, jid):
    status, o = d.api("GET", f"/v1/jobs/{jid}?detail=1")
    assert status == 200, o
    return o["detail"]["spec"]["sandbox_uid"]


@needs_runsc
def test_a_restarted_joblet_keeps_a_running_sandboxs_uid_held(fresh_daemon, user):
    """With a range of three uids (two given out: the last is root's shared-GPU jobs'), a sandbox
    uid is reused as soon as it is free: after a kill -9 and restart, a running gVisor job's
    sandbox uid must still count as taken."""
    d = fresh_daemon("jobs:\n  uid_range_size: 3\n")
    a = submit_as(d, user, "--isolation=gvisor", "sleep", "120")
    d.wait_status(a, "RUNNING", timeout=60)
    b = submit_as(d, user, "--isolation=gvisor", "sleep", "120")
    d.wait_status(b, "RUNNING", timeout=60)
    ua, ub = sandbox_uid(d, a), sandbox_uid(d, b)
    assert ua != ub and 2000000000 <= min(ua, ub) and max(ua, ub) <= 2000000001, (ua, ub)
    d.kill9()
    d.start()
    assert d.job(a)["status"] == "RUNNING"
    d.api("POST", f"/v1/jobs/{b}/kill")
    d.wait(b)
    c = submit_as(d, user, "--isolation=gvisor", "sleep", "120")
    d.wait_status(c, "RUNNING", timeout=60)
    assert sandbox_uid(d, c) == ub, (ua, ub, sandbox_uid(d, c))
    cg = job_cgroup(d, c)
    assert ua not in {uid_of(p) for p in procs_of(cg)}, "job c's sandbox runs as job a's uid"
    for j in (a, c):
        d.api("POST", f"/v1/jobs/{j}/kill")


def test_root_shared_gpu_uid_is_never_given_out_even_with_every_uid_busy(fresh_daemon):
    """The range's last uid is root's shared-GPU jobs' (jobs_run_uid); with every other uid busy,
    root's jobs and sandboxes share among the others (jobs_free_uid), never that one: a job of
    root's on it ran as the MPS clients' uid, able to signal and trace them."""
    d = fresh_daemon("jobs:\n  uid_range_size: 2\n")
    ids = [d.submit("sleep", "120") for _ in range(3)]
    for j in ids:
        d.wait_status(j, "RUNNING")
    uids = [d.job(j)["uid"] for j in ids]
    assert uids == [2000000000] * 3, uids
    for j in ids:
        d.api("POST", f"/v1/jobs/{j}/kill")


STUCK_RUNSC = """#!/bin/sh
# a runsc whose sandbox never answers: run starts and waits, kill hangs (for 100 s, so that
# nothing outlives the test for long even where the shim waits for it)
case "$1" in
--version) printf 'runsc version release-20221219.0-stuck\\nspec: 1.0.2\\n'; exit 0 ;;
flags | --help) printf '  -platform string\\n    \\tptrace, kvm.\\n'; exit 0 ;;
esac
for a in "$@"; do
    case "$a" in
    run) echo started; exec sleep 100 ;;
    kill) exec sleep 100 ;;
    esac
done
exit 0
"""


def test_a_stuck_sandbox_is_still_stopped(fresh_daemon, tmp_path):
    """A sandbox short of tasks at its user's bound can hang; `runsc kill` to it then never
    returns. The shim waits for it a bounded time (gvisor.c), then the stop goes on: SIGKILL to
    the job's cgroup after the grace period, as for any job."""
    fake = tmp_path / "runsc"
    fake.write_text(STUCK_RUNSC)
    fake.chmod(0o755)
    os.chmod(tmp_path, 0o755)
    d = fresh_daemon(f"isolation:\n  runsc: {fake}\n  platform: ptrace\n")
    jid = d.submit("sleep", "100", isolation="gvisor")
    d.wait_status(jid, "RUNNING", timeout=60)
    wait_for(lambda: d.output(jid) == "started\n", "the fake runsc never started", timeout=30)
    assert d.api("POST", f"/v1/jobs/{jid}/stop")[0] == 200
    job = d.wait(jid, timeout=60)
    assert job["end_reason"] == "stopped", job
