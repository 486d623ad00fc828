"""A check made at submission must still hold when the job (an array's task, a job let go from its
hold) starts, maybe hours later and after joblet was restarted with another configuration: what
the machine's people took away since is not used (isolation.require_gvisor added for the user;
the user removed from a group, or the account removed and its uid given to another; a GPU taken
offline), and an update of an unrelated field does not give the job what its submission did not
(runtimes.default set since)."""
import json
import os
import pwd
import random
import shutil
import subprocess
import time

import pytest

from conftest import ROOT, api_as, local_account, rnx_as

RUNSC = shutil.which("runsc") or ("/usr/bin/runsc" if os.path.exists("/usr/bin/runsc") else None)
needs_runsc = pytest.mark.skipif(RUNSC is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")

NOBODY = 65534
TERMINAL = ("COMPLETED", "FAILED", "STOPPED", "CANCELED")


def host_kernel():
    return open("/proc/version").read().strip()


def restart_with(d, extra, kill9=False):
    """joblet restarted (stopped, or killed with SIGKILL) with extra appended to its configuration."""
    if kill9:
        d.kill9()
    else:
        d.stop()
    with open(d.config, "a") as f:
        f.write(extra)
    d.start()


@needs_runsc
@pytest.mark.parametrize("kill9", [False, True])
def test_held_job_does_not_run_native_once_require_gvisor_names_its_user(fresh_daemon, kill9):
    # nobody submits a native job held (allowed: require_gvisor names no one); the machine's
    # people then require gVisor for nobody; nobody lets the job go: it must not run natively
    d = fresh_daemon()
    os.chmod(d.dir, 0o755)
    code, job = api_as(d, NOBODY, "POST", "/v1/jobs", {"command": "cat", "args": ["/proc/version"], "hold": True})
    assert code == 201, job
    jid = job["id"]
    restart_with(d, "isolation:\n  require_gvisor: nobody\n", kill9=kill9)
    p = rnx_as(d, NOBODY, "job", "release", jid)
    assert p.returncode == 0, p.stderr
    j = d.wait(jid)
    out = d.output(jid).strip()
    assert out != host_kernel(), f"job {jid} ran natively after require_gvisor named its user: {j}"
    if j["status"] == "FAILED":
        assert "require_gvisor" in (j.get("error") or ""), j


@needs_runsc
def test_array_tasks_made_after_require_gvisor_do_not_run_native(fresh_daemon):
    d = fresh_daemon()
    os.chmod(d.dir, 0o755)
    code, a = api_as(d, NOBODY, "POST", "/v1/jobs",
                     {"command": "cat", "args": ["/proc/version"], "array": "0-1", "hold": True})
    assert code == 201, a
    aid = a["id"]
    restart_with(d, "isolation:\n  require_gvisor: nobody\n")
    p = rnx_as(d, NOBODY, "job", "release", aid)
    assert p.returncode == 0, p.stderr
    a = d.wait(aid, 90)
    code, lst = d.api("GET", "/v1/jobs?expand=1")
    tasks = [j for j in lst["jobs"] if j.get("kind") != "array" and (j.get("array") or {}).get("id") == aid]
    for t in tasks:
        assert d.output(t["id"]).strip() != host_kernel(), f"task {t} ran natively after require_gvisor named its user"
    # refused as its first task is made: the tasks left are canceled at once, saying why
    assert not tasks and a["status"] == "CANCELED", (a, tasks)
    assert "require_gvisor" in json.dumps(d.api("GET", f"/v1/jobs/{aid}?detail=1")[1]), a


# account look-ups are kept server.account_cache_s (core/nsscache.h; a start checks against what
# is kept, as Slurm's GroupUpdateTime): 1 s here, and a change waited past it
CACHE_1S = "server:\n  account_cache_s: 1\n"


def past_the_cache():
    time.sleep(1.2)


@pytest.fixture
def member():
    """A local user (useradd) and a group (groupadd) it is a member of, both removed after the test:
    (user name, uid, group name, gid)."""
    if not shutil.which("groupadd") or not shutil.which("gpasswd"):
        pytest.skip("groupadd and gpasswd are needed")
    group = "jhrg" + os.urandom(3).hex()
    subprocess.run(["groupadd", group], check=True, capture_output=True)
    try:
        gid = int(subprocess.run(["getent", "group", group], check=True, capture_output=True,
                                 text=True).stdout.split(":")[2])
        with local_account("jhr", groups=[group]) as (name, uid, _):
            yield name, uid, group, gid
    finally:
        subprocess.run(["groupdel", group], check=False, capture_output=True)


def test_held_array_makes_no_task_with_a_group_its_owner_has_left(fresh_daemon, member):
    # the same for an array: its tasks are made after the user left the group
    name, uid, group, gid = member
    d = fresh_daemon(CACHE_1S)
    os.chmod(d.dir, 0o755)
    code, a = api_as(d, (uid, gid), "POST", "/v1/jobs", {"command": "id", "args": ["-g"], "array": "0-2", "hold": True})
    assert code == 201, a
    subprocess.run(["gpasswd", "-d", name, group], check=True, capture_output=True)
    past_the_cache()
    p = rnx_as(d, (uid, gid), "job", "release", a["id"])
    assert p.returncode == 0, p.stderr
    a = d.wait(a["id"])
    code, lst = d.api("GET", "/v1/jobs?expand=1")
    tasks = [j for j in lst["jobs"] if j.get("kind") != "array" and (j.get("array") or {}).get("id") == a["id"]]
    for t in tasks:
        assert d.output(t["id"]).strip() != str(gid), f"task {t} ran with gid {gid} of a group its owner has left"
    assert not tasks and a["status"] == "CANCELED", (a, tasks)


def test_held_job_does_not_run_with_a_group_its_owner_has_left(fresh_daemon, member):
    # the user submits as a member of a project group (sg GROUP rnx ...: its gid is the job's),
    # held; the machine's people take it out of the group; released, the job must not run with
    # that group's gid (its files are no longer the user's to read)
    name, uid, group, gid = member
    d = fresh_daemon(CACHE_1S)
    os.chmod(d.dir, 0o755)
    code, job = api_as(d, (uid, gid), "POST", "/v1/jobs", {"command": "id", "args": ["-g"], "hold": True})
    assert code == 201, job
    jid = job["id"]
    subprocess.run(["gpasswd", "-d", name, group], check=True, capture_output=True)
    past_the_cache()
    p = rnx_as(d, (uid, gid), "job", "release", jid)
    assert p.returncode == 0, p.stderr
    j = d.wait(jid)
    assert d.output(jid).strip() != str(gid), f"job {jid} ran with gid {gid} of a group its owner has left: {j}"
    assert j["status"] == "FAILED" and j["end_reason"] == "start_failed", j
    assert f"no longer a member of group {gid}" in (j["error"] or ""), j


def test_an_ended_job_is_not_requeued_with_a_group_its_owner_has_left(fresh_daemon, member):
    # rnx job requeue of an ended job (scontrol requeue) runs it again as its owner: a group the
    # owner has left since is refused at the requeue, naming it, not accepted and failed at start
    name, uid, group, gid = member
    d = fresh_daemon(CACHE_1S)
    os.chmod(d.dir, 0o755)
    code, job = api_as(d, (uid, gid), "POST", "/v1/jobs", {"command": "id", "args": ["-g"]})
    assert code == 201, job
    jid = job["id"]
    assert d.wait(jid)["status"] == "COMPLETED"
    subprocess.run(["gpasswd", "-d", name, group], check=True, capture_output=True)
    past_the_cache()
    p = rnx_as(d, (uid, gid), "job", "requeue", jid)
    assert p.returncode != 0, p.stdout
    assert f"no longer a member of group {gid}" in p.stderr and "cannot run again" in p.stderr, p.stderr
    j = d.job(jid)
    assert j["status"] == "COMPLETED" and not [e for e in d.events(jid) if e[0] == "requeued"], j


@needs_runsc
def test_an_ended_native_job_is_not_requeued_once_require_gvisor_names_its_user(fresh_daemon):
    d = fresh_daemon()
    os.chmod(d.dir, 0o755)
    code, job = api_as(d, NOBODY, "POST", "/v1/jobs", {"command": "true"})
    assert code == 201, job
    jid = job["id"]
    assert d.wait(jid)["status"] == "COMPLETED"
    restart_with(d, "isolation:\n  require_gvisor: nobody\n")
    # root first, just after the start (nobody's account not looked up yet: the requeue waits for
    # it), then its owner
    for p in (d.rnx("job", "requeue", jid), rnx_as(d, NOBODY, "job", "requeue", jid)):
        assert p.returncode != 0, p.stdout
        assert "require_gvisor" in p.stderr and "cannot run again" in p.stderr, p.stderr
    assert d.job(jid)["status"] == "COMPLETED"


def test_a_member_still_in_the_group_runs_with_it_and_a_uid_without_account_runs(fresh_daemon, member):
    # what the check at start must not refuse: the same job while the user is still a member, a
    # gid given by root that was never the account's group, and a uid with no account at all
    name, uid, group, gid = member
    d = fresh_daemon()
    os.chmod(d.dir, 0o755)
    for who, want in (((uid, gid), gid), ((uid, 100), 100), ((47311, 47311), 47311)):
        code, job = api_as(d, who, "POST", "/v1/jobs", {"command": "id", "args": ["-g"], "hold": True})
        assert code == 201, job
        restart_with(d, "")
        p = rnx_as(d, who, "job", "release", job["id"])
        assert p.returncode == 0, p.stderr
        j = d.wait(job["id"])
        assert j["status"] == "COMPLETED" and d.output(job["id"]).strip() == str(want), \
            (who, j["status"], j.get("end_reason"), j.get("error"), d.output(job["id"])[-500:], d.log()[-3000:])


def _uid_taken(uid):
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def test_held_job_does_not_run_as_the_next_account_given_its_uid(fresh_daemon):
    # a user submits a held job, and is removed (userdel); the machine's people give the uid to a
    # new account; released (by anyone who may: root here), the first user's job must not run as
    # the new account: the person who submitted it is gone
    if not shutil.which("useradd") or not shutil.which("userdel"):
        pytest.skip("useradd and userdel are needed")
    first, second = "jhr" + os.urandom(4).hex(), "jhr" + os.urandom(4).hex()
    # a uid of its own, above those useradd gives by itself: other modules' useradd, run meanwhile,
    # takes the highest uid in use plus one, and took this one once it was free (CI run 62)
    mine = next(u for u in (random.randint(42000, 58999) for _ in range(1000)) if not _uid_taken(u))
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--uid", str(mine), first],
                   check=True, capture_output=True)
    try:
        uid = int(subprocess.run(["id", "-u", first], check=True, capture_output=True, text=True).stdout)
        gid = int(subprocess.run(["id", "-g", first], check=True, capture_output=True, text=True).stdout)
        d = fresh_daemon(CACHE_1S)
        os.chmod(d.dir, 0o755)
        code, job = api_as(d, (uid, gid), "POST", "/v1/jobs", {"command": "id", "args": ["-u"], "hold": True})
        assert code == 201, job
        jid = job["id"]
        subprocess.run(["userdel", first], check=True, capture_output=True)
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--uid", str(uid), second],
                       check=True, capture_output=True)
        past_the_cache()
        d.rnx("job", "release", jid, check=True)
        j = d.wait(jid)
        assert d.output(jid).strip() != str(uid), \
            f"job {jid} of a removed account ran as uid {uid}, now account {second}'s: {j}"
        assert j["status"] == "FAILED" and j["end_reason"] == "start_failed", j
        assert f"the account '{first}' that submitted the job is gone" in (j["error"] or ""), j
    finally:
        subprocess.run(["userdel", first], check=False, capture_output=True)
        subprocess.run(["userdel", second], check=False, capture_output=True)


def test_an_update_does_not_give_a_waiting_job_a_runtime_it_was_not_submitted_with(fresh_daemon):
    # submitted when the machine had no runtimes.default (the host's root); the default set since
    # (a restart); the owner updates an unrelated field of the held job: its root stays the host's
    import busybox_runtime
    d = fresh_daemon(start=False)
    busybox_runtime.make(os.path.join(d.state, "runtimes"))
    d.start()
    jid = d.submit("sh", "-c", "cat /etc/marker 2>/dev/null || echo host", hold=True)
    assert d.job(jid)["runtime"] is None
    restart_with(d, "runtimes:\n  default: busybox\n")
    code, ans = d.api("POST", f"/v1/jobs/{jid}/update", {"max_runtime_s": 600})
    assert code == 200, ans
    assert d.job(jid)["runtime"] is None, d.job(jid)
    d.rnx("job", "release", jid, check=True)
    j = d.wait(jid)
    assert j["status"] == "COMPLETED" and d.output(jid).strip() == "host", (j, d.output(jid))


@pytest.mark.parametrize("how", [["--gpu-ids=1"], ["--device=nvidia.com/gpu=1"], ["--gpu=4"]])
def test_a_held_gpu_job_does_not_start_on_a_gpu_taken_offline_since(fresh_daemon, how):
    # accepted for GPU 1 (by index, by CDI name, or all four by count); an admin takes GPU 1
    # offline while the job is held, then joblet restarts; released, the job must not get it
    fix = os.path.join(ROOT, "tests", "fixtures", "a100-pcie-4", "machine.json")
    d = fresh_daemon(f"gpu:\n  fixture: {fix}\n  scrub: 0\n")
    p = rnx_as(d, 4341, "job", "run", *how, "--hold", "sleep", "600")
    assert p.returncode == 0, p.stderr
    jid = p.stdout.strip()
    d.rnx("gpu", "offline", "1", check=True)
    restart_with(d, "")
    p = rnx_as(d, 4341, "job", "release", jid)
    assert p.returncode == 0, p.stderr
    time.sleep(2)
    j = d.job(jid)
    assert 1 not in [g["index"] for g in j["gpus"]], f"job {jid} started on GPU 1, offline since it was accepted: {j}"
    assert j["status"] != "RUNNING" or j["gpus"], j
    d.rnx("job", "cancel", jid)
