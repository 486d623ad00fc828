"""rnx as people type it (issue 15): flags anywhere, "did you mean", kill, jobs by name, the
guide's status lines, job list's GPUs column and filters.

Every test drives the rnx binary against a real daemon and asserts the exact output or
message a user sees.
"""
import json
import os
import pwd
import re
import subprocess
import time

import pytest

from conftest import BUILD, FakeJoblet, wait_array

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def run_id(d, *args):
    p = d.rnx("job", "run", *args, check=True)
    jid = p.stdout.strip()
    assert UUID_RE.match(jid), p.stdout
    return jid


# ---- kill ------------------------------------------------------------------------------------

# A job that ignores SIGTERM (inherited by sleep): only SIGKILL ends it.
STUBBORN = ["sh", "-c", "trap '' TERM; echo ready; sleep 1000 & sleep 1000; wait"]


def wait_output(d, jid, text, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if text in d.output(jid):
            return
        time.sleep(0.05)
    raise AssertionError(f"job {jid} never printed {text!r}")


@pytest.mark.parametrize("how", [("job", "kill"), ("job", "stop", "--force")], ids=["kill", "stop-force"])
def test_kill_ends_a_job_that_ignores_sigterm_at_once(fresh_daemon, how):
    """`rnx job kill ID` and `rnx job stop --force ID`: SIGKILL to every process at once, no
    grace period (60 s here); the job ends STOPPED, end reason killed, and says who did it."""
    d = fresh_daemon("jobs:\n  stop_grace_s: 60\n")
    jid = run_id(d, *STUBBORN)
    d.wait_status(jid, "RUNNING")
    wait_output(d, jid, "ready")
    p = d.rnx(*how, jid[:8])
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"killing {jid} (SIGKILL to every process)\n"
    t0 = time.time()
    job = d.wait(jid, timeout=60)
    assert time.time() - t0 < 60
    assert job["status"] == "STOPPED"
    assert job["end_reason"] == "killed"
    assert job["signal_name"] == "SIGKILL"
    assert job["stopped_by"] == 0
    text = d.rnx("job", "status", jid, check=True).stdout
    assert re.search(r"^End reason: +killed by uid 0 \(SIGKILL to every process: rnx job kill\)$", text, re.M), text


def test_kill_during_a_stops_grace_period(fresh_daemon):
    """A job that ignores the stop's SIGTERM is STOPPING for the grace period; a kill then ends
    it at once, where another stop is refused."""
    d = fresh_daemon("jobs:\n  stop_grace_s: 60\n")
    jid = run_id(d, *STUBBORN)
    d.wait_status(jid, "RUNNING")
    wait_output(d, jid, "ready")
    d.rnx("job", "stop", jid, check=True)
    time.sleep(1)
    assert d.job(jid)["status"] == "STOPPING"
    p = d.rnx("job", "stop", jid)
    assert p.returncode == 1
    assert p.stderr == f"rnx: job {jid} is STOPPING; only a running job can be stopped\n"
    d.rnx("job", "kill", jid, check=True)
    job = d.wait(jid, timeout=20)
    assert (job["status"], job["end_reason"]) == ("STOPPED", "killed")


def test_kill_of_a_waiting_job_cancels_it_and_of_an_ended_one_is_refused(daemon):
    d = daemon
    jid = run_id(d, "--schedule", "1h", "true")
    p = d.rnx("job", "kill", jid, check=True)
    assert p.stdout == f"canceled {jid} (it had not started)\n"
    assert d.job(jid)["status"] == "CANCELED"
    p = d.rnx("job", "kill", jid)
    assert p.returncode == 1
    assert p.stderr == f"rnx: job {jid} is CANCELED; only a running job can be killed\n"


def test_kill_survives_a_daemon_restart_as_killed(fresh_daemon):
    """The end reason comes from the shim's record: a daemon killed right after the kill
    still reads it as killed on restart."""
    d = fresh_daemon("jobs:\n  stop_grace_s: 60\n")
    jid = run_id(d, *STUBBORN)
    wait_output(d, jid, "ready")
    d.rnx("job", "kill", jid, check=True)
    d.kill9()
    d.start()
    job = d.wait(jid, timeout=20)
    assert (job["status"], job["end_reason"], job["stopped_by"]) == ("STOPPED", "killed", 0)


# ---- did you mean ----------------------------------------------------------------------------

@pytest.mark.parametrize("args,message", [
    (["job", "run", "--gpus=2", "true"], "unknown flag '--gpus' for 'rnx job run'; did you mean '--gpu'?"),
    (["job", "run", "--max-mem", "1G", "true"],
     "unknown flag '--max-mem' for 'rnx job run'; did you mean '--max-memory'?"),
    (["job", "status", "x", "--jsno"], "unknown flag '--jsno' for 'rnx job status'; did you mean '--json'?"),
    (["job", "list", "--stats", "RUNNING"], "unknown flag '--stats' for 'rnx job list'; did you mean '--status'?"),
    (["job", "log", "--folow", "x"], "unknown flag '--folow' for 'rnx job log'; did you mean '--follow'?"),
    (["job", "run", "--zzz", "true"], "unknown flag '--zzz' for 'rnx job run'; see 'rnx job run --help'"),
    # docker run's volume flags (docs/volumes.md): joblet's volumes are named
    (["job", "run", "-v", "data:/data", "true"], "unknown flag '-v' for 'rnx job run'; did you mean '--volume'? "
     "(--volume=NAME or NAME:ro mounts the named volume NAME at /volumes/NAME; rnx volume create NAME --size=1GB)"),
    (["job", "run", "--mount", "type=bind,src=/x,dst=/y", "true"], "unknown flag '--mount' for 'rnx job run'; did "
     "you mean '--volume'? (--volume=NAME or NAME:ro mounts the named volume NAME at /volumes/NAME; rnx volume "
     "create NAME --size=1GB)"),
    (["job", "stauts", "x"], "unknown command 'stauts' for 'rnx job'; did you mean 'status'?"),
    (["jbo", "list"], "unknown command 'jbo' for 'rnx'; did you mean 'job'?"),
    (["gpu", "lst"], "unknown command 'lst' for 'rnx gpu'; did you mean 'list'?"),
    (["workflow", "stats", "x"], "unknown command 'stats' for 'rnx workflow'; did you mean 'status'?"),
    (["job", "frobnicate"], "unknown command 'frobnicate' for 'rnx job'; see 'rnx job --help'"),
    (["job", "log", "-f", "--no-follow", "x"], "job log: -f/--follow and --no-follow contradict each other; give one"),
])
def test_mistakes_get_a_suggestion(daemon, args, message):
    p = daemon.rnx(*args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stderr == f"rnx: {message}\n"
    assert p.stdout == ""


def test_log_short_follow_flag_follows(daemon):
    """`rnx job log -f ID` (as docker logs -f / kubectl logs -f) follows until the job ends."""
    d = daemon
    jid = run_id(d, "sh", "-c", "echo one; sleep 1; echo two")
    p = d.rnx("job", "log", "-f", jid, check=True)
    assert p.stdout == "one\ntwo\n"
    p = d.rnx("job", "log", jid, "-f", check=True)
    assert p.stdout == "one\ntwo\n"


# ---- jobs by name ----------------------------------------------------------------------------

def test_a_unique_name_works_wherever_an_id_does(fresh_daemon):
    """docs/scheduler.md's `rnx job status train`: status, log, metrics, stop, delete by name."""
    d = fresh_daemon()
    jid = run_id(d, "--name", "train", "sh", "-c", "echo hello; sleep 60")
    d.wait_status(jid, "RUNNING")
    wait_output(d, jid, "hello")
    st = json.loads(d.rnx("job", "status", "train", "--json", check=True).stdout)
    assert st["id"] == jid
    assert d.rnx("job", "log", "--no-follow", "train", check=True).stdout == "hello\n"
    m = d.rnx("job", "metrics", "--count", "1", "--json", "train", check=True)
    assert m.stdout.strip()
    assert d.rnx("job", "stop", "train", check=True).stdout == f"stopping {jid}\n"
    d.wait(jid)
    assert d.rnx("job", "delete", "train", check=True).stdout == f"deleted {jid}\n"


def test_an_ambiguous_name_lists_the_candidates(fresh_daemon):
    d = fresh_daemon()
    a = run_id(d, "--name", "dup", "true")
    b = run_id(d, "--name", "dup", "--schedule", "1h", "true")
    d.wait(a)
    p = d.rnx("job", "status", "dup")
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == (f"rnx: 'dup' names 2 jobs: {a[:8]} (COMPLETED), {b[:8]} (SCHEDULED); "
                        "give one's id (or a unique prefix of it)\n")
    # the id prefix still picks one
    assert json.loads(d.rnx("job", "status", "--json", b[:8], check=True).stdout)["id"] == b


def test_a_name_shadows_an_id_prefix_and_an_unknown_name_is_named(fresh_daemon):
    """As docker resolves containers: the full id, then the name, then an id prefix."""
    d = fresh_daemon()
    a = run_id(d, "true")
    b = run_id(d, "--name", a[:4], "true")
    d.wait(a)
    d.wait(b)
    assert json.loads(d.rnx("job", "status", "--json", a[:4], check=True).stdout)["id"] == b
    assert json.loads(d.rnx("job", "status", "--json", a, check=True).stdout)["id"] == a
    p = d.rnx("job", "status", "no-such-name")
    assert p.returncode == 1
    assert p.stderr == ("rnx: no job named 'no-such-name' (a job is given by its id, its number, a unique prefix "
                        "of it, or its --name)\n")


def test_names_with_spaces_and_unicode_are_found(fresh_daemon):
    d = fresh_daemon()
    jid = run_id(d, "--name", "résumé run 1", "true")
    d.wait(jid)
    assert json.loads(d.rnx("job", "status", "--json", "résumé run 1", check=True).stdout)["id"] == jid


def test_another_users_job_name_is_not_found(fresh_daemon):
    """Names resolve only among the caller's own jobs (root sees all)."""
    d = fresh_daemon()
    jid = run_id(d, "--name", "roots-secret-name", "true")
    d.wait(jid)
    nobody = pwd.getpwnam("nobody")
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "status", "roots-secret-name"], capture_output=True,
                       text=True, env=env, user=nobody.pw_uid, group=nobody.pw_gid, timeout=60)
    assert p.returncode == 1
    assert "no job named 'roots-secret-name'" in p.stderr


# ---- the guide's status lines ----------------------------------------------------------------

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")


def dgx(fresh_daemon):
    return fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n")


def test_the_guides_status_sample_verbatim(fresh_daemon):
    """001 "Job Status Inspection": a --gpu=2 --gpu-memory=8GB job's `rnx job status` has the
    guide's four lines, verbatim, first."""
    d = dgx(fresh_daemon)
    jid = run_id(d, "--gpu=2", "--gpu-memory=8GB", "sleep", "60")
    d.wait_status(jid, "RUNNING")
    out = d.rnx("job", "status", jid, check=True).stdout
    assert out.splitlines()[:4] == [
        f"UUID: {jid}",
        "Status: RUNNING",
        "GPUs: [0, 1] (2 GPUs allocated)",
        "GPU Memory: 8192 MB required per GPU",
    ], out
    # then where they are: NUMA node and CPUs (a simulated machine's CPUs are not pinned)
    assert "NUMA: node 0 (the GPUs' CPUs 0-55,112-167)\n" in out
    assert "CPUs: not pinned: simulated GPUs: their CPU lists describe another machine, so the job is not pinned\n" in out
    assert re.search(r"^GPU devices:\n  GPU 0  GPU-\S+  NVIDIA H100 80GB HBM3  81559 MiB  \[simulated\]\n"
                     r"  GPU 1  GPU-\S+  NVIDIA H100 80GB HBM3  81559 MiB  \[simulated\]$", out, re.M), out
    d.rnx("job", "kill", jid, check=True)
    d.wait(jid)
    out = d.rnx("job", "status", jid, check=True).stdout
    assert "GPUs: [0, 1] (2 GPUs allocated; released when the job ended)\n" in out


def test_gpus_show_as_allocated_only_once_granted(fresh_daemon):
    d = dgx(fresh_daemon)
    a = run_id(d, "--gpu=8", "sleep", "60")
    d.wait_status(a, "RUNNING")
    b = run_id(d, "--gpu=2", "--gpu-memory=8GB", "true")
    out = d.rnx("job", "status", b, check=True).stdout
    assert out.splitlines()[:4] == [f"UUID: {b}", "Status: QUEUED", "GPUs: none allocated yet (2 requested)",
                                    "GPU Memory: 8192 MB required per GPU"], out
    assert "NUMA:" not in out
    d.rnx("job", "cancel", b, check=True)
    out = d.rnx("job", "status", b, check=True).stdout
    assert "GPUs: none allocated (2 requested)\n" in out
    c = run_id(d, "--gpu-ids=3,5", "true")
    uuids = [g["uuid"] for g in d.api("GET", "/v1/gpus")[1]["gpus"]]
    assert f"GPUs: none allocated yet (GPUs {uuids[3]}, {uuids[5]} requested)\n" in d.rnx(
        "job", "status", c, check=True).stdout
    e = run_id(d, "--gpu=all", "true")
    assert "GPUs: none allocated yet (all GPUs requested)\n" in d.rnx("job", "status", e, check=True).stdout
    d.rnx("job", "kill", a, check=True)
    assert d.wait(c)["status"] == "COMPLETED"
    f = run_id(d, "true")
    d.wait(f)
    out = d.rnx("job", "status", f, check=True).stdout
    assert out.splitlines()[:3] == [f"UUID: {f}", "Status: COMPLETED", "GPUs: none"], out
    assert "GPU Memory:" not in out and "NUMA:" not in out


def test_numa_nodes_of_a_job_across_nodes_and_its_cpu_cores(fresh_daemon):
    d = dgx(fresh_daemon)
    jid = run_id(d, "--gpu-ids=3,4", "--cpu-cores=0", "sleep", "60")
    d.wait_status(jid, "RUNNING")
    out = d.rnx("job", "status", jid, check=True).stdout
    assert "GPUs: [3, 4] (2 GPUs allocated)\n" in out
    assert "NUMA: nodes 0, 1 (the GPUs' CPUs 0-55,112-167,56-111,168-223)\n" in out
    assert "CPUs: 0, as --cpu-cores asked\n" in out
    loc = d.job(jid)["gpu_locality"]
    assert loc == {"numa_nodes": [0, 1], "gpu_cpus": "0-55,112-167,56-111,168-223", "cpus": "0", "mems": None,
                   "pinning": "--cpu-cores"}
    d.rnx("job", "kill", jid, check=True)


# ---- job list: GPUS column and filters -------------------------------------------------------

def list_ids(d, *args, env=None):
    p = d.rnx("job", "list", "--json", *args, env=env, check=True)
    return [j["id"] for j in json.loads(p.stdout)]


def test_list_gpus_column_and_gpu_status_filters(fresh_daemon):
    d = dgx(fresh_daemon)
    a = run_id(d, "--gpu=6", "sleep", "60")
    d.wait_status(a, "RUNNING")
    b = run_id(d, "--gpu=4", "true")        # waits: 2 free
    c = run_id(d, "true")
    d.wait(c)
    out = d.rnx("job", "list", check=True).stdout
    lines = out.splitlines()
    # root sees everyone's jobs: the USER column (test_user_journey_small.py)
    assert lines[0].split() == ["ID", "NUM", "NAME", "STATUS", "EXIT", "GPUS", "CREATED", "DURATION", "USER",
                                "COMMAND"]
    rows = {l.split()[0]: l.split()[:1] + l.split()[2:] for l in lines[1:]}   # (NUM: test_cli's)
    assert rows[a[:8]][2:4] == ["RUNNING", "-"] and rows[a[:8]][4] == "0,1,2,3,4,5"
    assert rows[b[:8]][2:6] == ["QUEUED", "-", "4", "wanted"]
    assert rows[c[:8]][2:5] == ["COMPLETED", "0", "-"]
    # newest last
    assert [l.split()[0] for l in lines[1:]] == [a[:8], b[:8], c[:8]]
    assert list_ids(d, "--gpu", "3") == [a]
    uuid5 = d.api("GET", "/v1/gpus")[1]["gpus"][5]["uuid"]
    assert list_ids(d, "--gpu", uuid5) == [a]
    assert list_ids(d, "--gpu", "7") == []
    assert list_ids(d, "--status", "queued") == [b]
    assert list_ids(d, "--status", "RUNNING", "--gpu", "0") == [a]
    p = d.rnx("job", "list", "--gpu", "9")
    assert p.returncode == 1
    # named as typed, like rnx's own refusals of --status, --user and --since (docs/cli.md)
    assert p.stderr == "rnx: --gpu: '9' is not a GPU of this machine; give an index or a UUID (rnx gpu list)\n"
    d.rnx("job", "kill", a, check=True)


def test_list_since_and_user_filters(fresh_daemon):
    d = fresh_daemon()
    a = run_id(d, "true")
    d.wait(a)
    time.sleep(12)    # --since 10s counts in whole seconds; b's run and two rnx starts fit in 10 s
    b = run_id(d, "true")
    d.wait(b)
    assert list_ids(d, "--since", "10s") == [b]
    assert list_ids(d, "--since", "1h") == [a, b]
    assert list_ids(d, "--since", "2099-01-01T00:00:00Z") == []
    assert list_ids(d, "--user", "root") == [a, b]
    assert list_ids(d, "--user", "0") == [a, b]
    nobody = pwd.getpwnam("nobody")
    assert list_ids(d, "--user", str(nobody.pw_uid)) == []
    p = d.rnx("job", "list", "--since", "yesterday")
    assert p.returncode == 2
    assert p.stderr == ("rnx: --since: 'yesterday' is neither a duration (30min, 2h, 1d: that long ago) nor a time "
                        "(2026-11-22T15:00:00Z)\n")
    p = d.rnx("job", "list", "--user", "no-such-user-x")
    assert p.returncode == 2
    assert p.stderr == "rnx: --user: no user 'no-such-user-x' on this machine; give a user name or a uid\n"
    # another user may not list root's jobs
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "list", "--user", "root"], capture_output=True, text=True,
                       env=env, user=nobody.pw_uid, group=nobody.pw_gid, timeout=60)
    assert p.returncode == 1
    assert p.stderr == (f"rnx: user: you see only your own jobs (uid {nobody.pw_uid}); uid 0's jobs are shown "
                        "to root\n")


# ---- flags before and after the operands: the same result ------------------------------------

TIME_RE = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?Z?")


def same(d, before, after, subst_b=None, subst_a=None, keys=None):
    """Runs both command lines; their exit codes and outputs must be identical once the
    objects each acted on (subst: text -> placeholder) and wall-clock times are masked. With
    keys, stdout is a JSON object of which those keys are compared (the rest differs between
    two jobs: pids, uids, host names)."""
    outs = []
    for args, subst in ((before, subst_b or {}), (after, subst_a or {})):
        p = d.rnx(*args)
        out = p.stdout
        if keys:
            o = json.loads(out)
            out = json.dumps({k: o.get(k) for k in keys})
        text = out + "\n--stderr--\n" + p.stderr
        for k, v in subst.items():
            text = text.replace(k, v)
        outs.append((p.returncode, TIME_RE.sub("<time>", text)))
    assert outs[0] == outs[1], (before, after, outs)
    return outs[0]


def test_every_command_takes_its_flags_before_or_after_its_operands(fresh_daemon, tmp_path):
    d = dgx(fresh_daemon)
    done = run_id(d, "--name", "done", "--gpu=1", "--gpu-memory=8GB", "sh", "-c", "echo out; echo err >&2")
    d.wait(done)
    p = d.rnx("workflow", "run", os.path.join(os.path.dirname(FIX), "..", "examples", "diamond.yaml"), check=True)
    wid = p.stdout.split()[0] if p.stdout.split() else ""
    # read once it has ended: two reads of a running workflow differ (its durations, its states)
    deadline = time.time() + 60
    while time.time() < deadline and d.api("GET", f"/v1/workflows/{wid}")[1].get("state") in ("PENDING", "RUNNING"):
        time.sleep(0.1)
    wf = tmp_path / "ok.yaml"
    wf.write_text("name: ok\njobs:\n  a:\n    command: 'true'\n")

    # read commands: one object, flags on either side
    reads = [
        (["job", "status", "--json", done], ["job", "status", done, "--json"]),
        (["job", "status", done], ["job", "status", done]),
        (["job", "status", "--json", "done"], ["job", "status", "done", "--json"]),
        (["job", "log", "--no-follow", "--stream", "stdout", done], ["job", "log", done, "--stream", "stdout", "--no-follow"]),
        (["job", "log", "-f", done], ["job", "log", done, "-f"]),
        (["job", "log", "--stream=stderr", "--json", done], ["job", "log", done, "--json", "--stream=stderr"]),
        (["job", "metrics", "--count", "1", "--json", done], ["job", "metrics", done, "--count", "1", "--json"]),
        (["gpu", "topo", "--json"], ["gpu", "--json", "topo"]),
        (["workflow", "status", "--json", wid], ["workflow", "status", wid, "--json"]),
        (["workflow", "status", "--detail", wid], ["workflow", "status", wid, "--detail"]),
        (["workflow", "validate", "--json", str(wf)], ["workflow", "validate", str(wf), "--json"]),
        (["job", "status", "--", done], ["job", "status", done, "--"]),
    ]
    for before, after in reads:
        code, _ = same(d, before, after)
        assert code == 0, (before, after)
    # the live sample may change between two reads: the GPU itself must not
    same(d, ["gpu", "show", "--json", "3"], ["gpu", "show", "3", "--json"], keys=("index", "uuid", "name", "state"))

    # commands that change something: two alike objects, one per form
    def two(*args):
        a, b = run_id(d, *args), run_id(d, *args)
        return a, b

    a, b = two("sleep", "60")
    d.wait_status(a, "RUNNING")
    d.wait_status(b, "RUNNING")
    same(d, ["job", "stop", "--json", a], ["job", "stop", b, "--json"], {a: "<id>"}, {b: "<id>"},
         keys=("id", "status", "end_reason", "stopped_by"))
    a, b = two("sleep", "60")
    d.wait_status(a, "RUNNING")
    d.wait_status(b, "RUNNING")
    same(d, ["job", "stop", "--force", a], ["job", "stop", b, "--force"], {a: "<id>"}, {b: "<id>"})
    a, b = two("sleep", "60")
    d.wait_status(a, "RUNNING")
    d.wait_status(b, "RUNNING")
    same(d, ["job", "kill", "--json", a], ["job", "kill", b, "--json"], {a: "<id>"}, {b: "<id>"},
         keys=("id", "status", "end_reason", "stopped_by"))
    a, b = two("--schedule", "1h", "true")
    same(d, ["job", "cancel", "--json", a], ["job", "cancel", b, "--json"], {a: "<id>"}, {b: "<id>"},
         keys=("id", "status", "end_reason", "stopped_by"))
    d.wait(a)
    d.wait(b)
    same(d, ["job", "delete", "--json", a], ["job", "delete", b, "--json"], {a: "<id>"}, {b: "<id>"})
    code, _ = same(d, ["volume", "create", "--size", "16MB", "--type=memory", "va"],
                   ["volume", "create", "vb", "--size", "16MB", "--type=memory"], {"va": "<v>"}, {"vb": "<v>"})
    assert code == 0
    same(d, ["volume", "remove", "--json", "va"], ["volume", "remove", "vb", "--json"], {"va": "<v>"}, {"vb": "<v>"})
    code, _ = same(d, ["gpu", "drain", "--force", "6"], ["gpu", "drain", "7", "--force"], {"GPU 6": "GPU <n>"},
                   {"GPU 7": "GPU <n>"})
    assert code == 0
    same(d, ["gpu", "online", "--json", "6"], ["gpu", "online", "7", "--json"], keys=("state", "note", "jobs_affected"))
    # a runtime this machine lacks: the same refusal either way
    code, _ = same(d, ["runtime", "info", "--json", "no-such-rt"], ["runtime", "info", "no-such-rt", "--json"])
    assert code == 1
    same(d, ["runtime", "remove", "--json", "no-such-rt"], ["runtime", "remove", "no-such-rt", "--json"])
    same(d, ["audit", "--limit", "3", "--json"], ["audit", "--json", "--limit", "3"])
    # and mistakes are the same mistakes wherever the flag is
    same(d, ["job", "status", "--nope", done], ["job", "status", done, "--nope"])
    same(d, ["job", "log", "--stream", "both", done], ["job", "log", done, "--stream", "both"])
    same(d, ["job", "status", "--json"], ["job", "status", "--json"])


def test_workflows_by_name(fresh_daemon, tmp_path):
    d = fresh_daemon()
    f = tmp_path / "w.yaml"
    f.write_text("name: nightly\njobs:\n  a:\n    command: sleep\n    args: ['60']\n")
    w1 = d.rnx("workflow", "run", str(f), check=True).stdout.split()[0]
    st = json.loads(d.rnx("workflow", "status", "nightly", "--json", check=True).stdout)
    assert st["id"].startswith(w1[:8])
    w2 = d.rnx("workflow", "run", str(f), check=True).stdout.split()[0]
    p = d.rnx("workflow", "status", "nightly")
    assert p.returncode == 1
    assert re.fullmatch(r"rnx: 'nightly' names 2 workflows: [0-9a-f]{8} \([A-Z]+\), [0-9a-f]{8} \([A-Z]+\); "
                        r"give one's id \(or a unique prefix of it\)\n", p.stderr), p.stderr
    for w in (w1, w2):
        d.rnx("workflow", "cancel", w, check=True)


# ---- habits from other tools (docs/cli.md, "Habits from other tools") --------------------------

@pytest.mark.parametrize("args,message", [
    (["job", "run", "-d", "true"], "unknown flag '-d' for 'rnx job run'; rnx job run returns once the job is "
     "submitted, as docker run -d does (-f follows its output instead; Slurm's -d, --dependency, is --after=ID:ok)"),
    (["job", "run", "--detach", "true"], "unknown flag '--detach' for 'rnx job run'; rnx job run returns once the "
     "job is submitted, as docker run -d does (-f follows its output instead; Slurm's -d, --dependency, is "
     "--after=ID:ok)"),
    (["job", "run", "--rm", "true"], "unknown flag '--rm' for 'rnx job run'; rnx keeps an ended job's status and "
     "log until 'rnx job delete ID' (or 'rnx job delete-all'); there is no --rm"),
    (["job", "run", "--cpus=2", "true"], "unknown flag '--cpus' for 'rnx job run'; did you mean '--max-cpu'? "
     "(a percent of one core: docker's --cpus=2 is --max-cpu=200)"),
    (["job", "run", "-m", "1g", "true"], "unknown flag '-m' for 'rnx job run'; did you mean '--max-memory'? "
     "(--max-memory=1GB, 512MB, or megabytes: 512)"),
    (["job", "run", "--mem=4G", "true"], "unknown flag '--mem' for 'rnx job run'; did you mean '--max-memory'? "
     "(--max-memory=1GB, 512MB, or megabytes: 512)"),
    (["job", "run", "--time=2h", "true"], "unknown flag '--time' for 'rnx job run'; did you mean '--max-runtime'? "
     "(sbatch's --time: --max-runtime=2:00:00, 1-0, 2h, 30min)"),
    (["job", "run", "--gres=gpu:2", "true"], "unknown flag '--gres' for 'rnx job run'; did you mean '--gpu'? "
     "(sbatch's --gres=gpu:2 is --gpu=2, gpu:h100:2 --gpu=2 --gpu-type=H100)"),
    (["job", "run", "-J", "x", "true"], "unknown flag '-J' for 'rnx job run'; did you mean '--name'?"),
    (["job", "run", "-w", "/tmp", "true"], "unknown flag '-w' for 'rnx job run'; did you mean '--workdir'?"),
    (["job", "list", "-a"], "unknown flag '-a' for 'rnx job list'; rnx job list shows every job you can see, "
     "ended ones too, as docker ps -a (--status=RUNNING: the running ones)"),
    (["job", "list", "-q"], "unknown flag '-q' for 'rnx job list'; rnx job list --json has the ids: rnx job list "
     "--json | jq -r '.[].id'"),
    (["job", "log", "-n", "5", "x"], "unknown flag '-n' for 'rnx job log'; did you mean '--tail'? (--tail=N: the "
     "last N lines, as docker logs -n N)"),
    (["job", "ps"], "unknown command 'ps' for 'rnx job'; did you mean 'list'? (rnx job list: your jobs, ended "
     "ones too; --status=RUNNING for the running)"),
    (["job", "rm", "x"], "unknown command 'rm' for 'rnx job'; did you mean 'delete'? (an ended job's status and "
     "log; stop a running one first)"),
    (["job", "inspect", "x"], "unknown command 'inspect' for 'rnx job'; did you mean 'status'? (rnx job status "
     "ID; --json for the whole object)"),
    # the edit distance offered 'stop' for docker's top, and 'runtime' for run
    (["job", "top", "x"], "unknown command 'top' for 'rnx job'; rnx job metrics ID shows its CPU, memory and GPU "
     "use; rnx job exec ID ps its processes"),
    (["run", "true"], "unknown command 'run' for 'rnx'; did you mean 'rnx job run'?"),
    (["ps"], "unknown command 'ps' for 'rnx'; did you mean 'rnx job list'?"),
    (["logs", "-f", "x"], "unknown command 'logs' for 'rnx'; did you mean 'rnx job log'?"),
    (["sbatch", "x.sh"], "unknown command 'sbatch' for 'rnx'; did you mean 'rnx job batch'? (it reads sbatch's "
     "options and #SBATCH lines)"),
    (["job", "log", "-d", "x"], "unknown flag '-d' for 'rnx job log'; see 'rnx job log --help'"),
    # scontrol's job commands are rnx job's (docs/batch.md, "From Slurm"); it was 'see --help'
    (["scontrol", "hold", "42"], "unknown command 'scontrol' for 'rnx'; scontrol hold|release|update|suspend|"
     "resume|requeue|top ID is 'rnx job hold|release|update|suspend|resume|requeue ID' (top: rnx job update ID "
     "--priority=N), show job ID 'rnx job status ID'"),
    (["sacct", "-j", "42"], "unknown command 'sacct' for 'rnx'; did you mean 'rnx job status ID'? (or 'rnx job "
     "list': ended jobs too)"),
])
def test_habits_from_other_tools_name_the_rnx_way(daemon, args, message):
    """What a Docker, kubectl or Slurm user types by habit is answered with the rnx command or flag
    (each was 'see --help', or a wrong suggestion); -d where it means nothing of the kind (job
    log) gets no detach hint."""
    p = daemon.rnx(*args)
    assert (p.returncode, p.stderr, p.stdout) == (2, f"rnx: {message}\n", "")


def test_habits_that_work_as_typed(daemon):
    """docker's --name, --gpus's --gpu all (rnx's --gpu=all), rnx job kill, rnx job log -f."""
    p = daemon.rnx("job", "run", "--name", "habit", "--gpu", "all", "true")
    # no GPU on the test daemon: refused for want of GPUs, not for the flag's spelling
    assert "unknown flag" not in p.stderr and "--gpu" in p.stderr + p.stdout, p.stderr


def test_env_without_a_value_passes_rnx_own(daemon):
    """`-e NAME` (docker run -e NAME) passes rnx's own $NAME; `-s NAME` too, kept off the command
    line; rnx job exec alike. A name not set is refused naming it (it was "'FOO' is not KEY=VALUE"
    for every -e NAME)."""
    d = daemon
    env = {"HABIT_FOO": "from rnx", "HABIT_TOKEN": "s3cret"}
    p = d.rnx("job", "run", "-f", "-e", "HABIT_FOO", "-s", "HABIT_TOKEN", "-e", "BAR=1", "sh", "-c",
              'echo "$HABIT_FOO|$HABIT_TOKEN|$BAR"', env=env)
    assert (p.returncode, p.stdout) == (0, "from rnx|s3cret|1\n"), p.stderr
    jid = run_id(d, "sleep", "30")
    d.wait_status(jid, "RUNNING")
    p = d.rnx("job", "exec", "-e", "HABIT_FOO", jid, "sh", "-c", 'echo "$HABIT_FOO"', env=env)
    assert (p.returncode, p.stdout) == (0, "from rnx\n"), p.stderr
    for args in (["job", "run", "-e", "HABIT_UNSET", "true"], ["job", "exec", "-e", "HABIT_UNSET", jid, "true"]):
        p = d.rnx(*args)
        assert (p.returncode, p.stderr) == (2, "rnx: --env: 'HABIT_UNSET' has no value here: it is not set in your "
                                               "environment (give HABIT_UNSET=VALUE, or export HABIT_UNSET first)\n")
    p = d.rnx("job", "run", "-s", "HABIT_UNSET", "true")
    assert p.returncode == 2 and p.stderr.startswith("rnx: --secret-env: 'HABIT_UNSET' has no value here"), p.stderr
    d.rnx("job", "kill", jid, check=True)


def test_an_arrays_refusals_speak_rnx(daemon):
    """rnx job log|metrics|cp of an array said 'name one task, e.g. X_0, for GET logs' (the API's
    words, not what was typed); a cancel of an ended array said 'no task  was left' (two spaces)."""
    d = daemon
    aid = d.rnx("job", "run", "--array=0-2", "true", check=True).stdout.strip()
    wait_array(d, aid)
    short = aid[:8]
    for args, words in ((["job", "log", aid], "output (rnx job log)"),
                        (["job", "metrics", aid], "usage (rnx job metrics)"),
                        (["job", "cp", f"{aid}:/work", "-"], "files (rnx job cp)")):
        p = d.rnx(*args)
        assert (p.returncode, p.stderr) == (1, f"rnx: {aid} is a job array (3 tasks), which has no {words} of its "
                                               f"own: name one task, e.g. {short}_0\n"), args
    p = d.rnx("job", "log", f"{short}_[0-1]")
    assert p.stderr == (f"rnx: tasks [0-1] of array {aid}: each task has its own output (rnx job log): name one "
                        f"({short}_0)\n")
    p = d.rnx("job", "cancel", aid)
    assert (p.returncode, p.stderr) == (1, f"rnx: array {aid}: no task was left to cancel\n")


def test_a_change_whose_answer_never_came_says_it_may_have_been_done(tmp_path):
    """joblet killed after it took a request whole and before it answered (it may have committed
    it: a requeue, a submission): rnx says the connection went, and that the change may be done,
    to look before asking again (a second requeue would run the job twice). A look (GET) that
    got no answer says nothing of the kind. A socket of the test's own that reads each request
    and closes."""
    path = str(tmp_path / "s.sock")
    f = FakeJoblet(path, [None])
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": path}
    try:
        p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "requeue", "3f2a1b2c"], capture_output=True,
                           text=True, env=env, timeout=60)
        assert p.returncode != 0, p.stdout
        assert "lost the connection" in p.stderr and "may have done it" in p.stderr, p.stderr
        p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "status", "3f2a1b2c"], capture_output=True,
                           text=True, env=env, timeout=60)
        assert p.returncode != 0 and "lost the connection" in p.stderr, p.stderr
        assert "may have done it" not in p.stderr, p.stderr
    finally:
        f.close()
