"""rnx, the command-line client, driven against a real joblet daemon.

Every test goes through the rnx binary; the raw API (d.api) is only used to look at what rnx
did, never to do it.
"""
import calendar
import hashlib
import json
import os
import re
import socket
import stat
import subprocess
import uuid

import pytest

from conftest import BUILD, ROOT

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
JOB_FIELDS = {"id", "name", "status", "owner_uid", "uid", "gid", "command", "args", "env", "secret_env",
              "workdir", "network", "hostname", "limits", "uploads", "created_at", "scheduled_at",
              "started_at", "ended_at", "exit_code", "signal", "end_reason", "stopped_by", "error", "pid",
              "queue_position", "usage", "gpus"}
LIMIT_FIELDS = {"max_cpu", "max_memory_mb", "max_iobps", "cpu_cores", "max_runtime_s", "pids_max"}
USAGE_FIELDS = {"cpu_ns", "memory_peak_bytes", "io_read_bytes", "io_write_bytes"}
RFC3339_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def run_id(d, *args):
    """`rnx job run ARGS` that must succeed; returns the printed job id."""
    p = d.rnx("job", "run", *args, check=True)
    jid = p.stdout.strip()
    assert UUID_RE.match(jid), p.stdout
    return jid


def status_json(d, jid):
    p = d.rnx("job", "status", "--json", jid, check=True)
    return json.loads(p.stdout)


def parse_ts(s):
    """Seconds since the epoch of an API time ("2026-11-22T10:00:00.123Z")."""
    m = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z$", s)
    assert m, s
    y, mo, da, h, mi, se, frac = m.groups()
    t = calendar.timegm((int(y), int(mo), int(da), int(h), int(mi), int(se)))
    return t + (float("0." + frac) if frac else 0.0)


# ---- job run ---------------------------------------------------------------------------------

def test_run_prints_only_the_job_id(daemon):
    """`rnx job run CMD` prints exactly one line, the new job's UUID, and exits 0."""
    d = daemon
    p = d.rnx("job", "run", "sh", "-c", "echo should-not-be-printed; exit 3")
    assert p.returncode == 0, p.stderr
    assert UUID_RE.match(p.stdout.rstrip("\n")), repr(p.stdout)
    assert p.stdout.count("\n") == 1
    assert p.stderr == ""
    job = d.wait(p.stdout.strip())
    assert job["exit_code"] == 3
    assert d.output(job["id"]) == "should-not-be-printed\n"


def test_run_follow_splits_streams_and_exits_with_job_code(daemon):
    """`rnx job run --follow` streams stdout/stderr apart and exits with the job's exit code."""
    p = daemon.rnx("job", "run", "--follow", "sh", "-c", "echo out; echo err >&2; exit 7")
    assert p.returncode == 7, p.stderr
    assert p.stdout == "out\n"
    assert "err" in p.stderr
    assert "out" not in p.stderr


def test_run_follow_short_flag_and_success(daemon):
    """`-f` is --follow, and a job exiting 0 makes rnx exit 0."""
    p = daemon.rnx("job", "run", "-f", "echo", "hello")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "hello\n"


@pytest.mark.parametrize("form", [["--max-memory=64"], ["--max-memory", "64"]], ids=["equals", "space"])
def test_flag_value_forms_both_work(daemon, form):
    """Both `--flag=value` and `--flag value` set the limit."""
    jid = run_id(daemon, *form, "true")
    assert status_json(daemon, jid)["limits"]["max_memory_mb"] == 64
    daemon.wait(jid)


def test_flags_after_command_belong_to_job(daemon):
    """Anything after COMMAND, even one of rnx's flags, is passed to the job untouched."""
    p = daemon.rnx("job", "run", "--follow", "echo", "--max-cpu=5", "--follow")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "--max-cpu=5 --follow\n"
    jobs = json.loads(daemon.rnx("job", "list", "--json", check=True).stdout)
    job = [j for j in jobs if j["args"] == ["--max-cpu=5", "--follow"]][0]
    assert job["limits"]["max_cpu"] is None


def test_double_dash_separates_flags_from_command(daemon):
    """`--` ends rnx's flags; what follows is the job's command line."""
    p = daemon.rnx("job", "run", "--follow", "--", "echo", "--name", "x")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "--name x\n"


# ---- ids and prefixes ------------------------------------------------------------------------

def test_status_accepts_unique_prefix(daemon):
    """`rnx job status` finds a job by the first 8 characters of its id."""
    jid = run_id(daemon, "true")
    daemon.wait(jid)
    p = daemon.rnx("job", "status", "--json", jid[:8])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["id"] == jid
    p = daemon.rnx("job", "status", jid[:8])
    assert p.returncode == 0, p.stderr
    assert jid in p.stdout


def test_ambiguous_prefix_is_refused(daemon):
    """A prefix shared by several jobs fails with exit 1 and says it matches several jobs."""
    d = daemon
    for _ in range(40):
        ids = [j["id"] for j in d.api("GET", "/v1/jobs")[1]["jobs"]]
        firsts = [i[0] for i in ids]
        # (not 1-9: digits alone are a job's number, Slurm's job id, before any id prefix)
        shared = [c for c in set(firsts) if firsts.count(c) >= 2 and c not in "123456789"]
        if shared:
            break
        d.submit("true")
    assert shared, "could not make two jobs share a first character that is not a number"
    c = shared[0]
    p = d.rnx("job", "status", c)
    assert p.returncode == 1, p
    assert p.stdout == ""
    assert "matches" in p.stderr and "jobs" in p.stderr, p.stderr
    assert f"'{c}'" in p.stderr


def test_unknown_id_is_refused_naming_it(daemon):
    """An id that matches no job fails with exit 1 and a message naming the id."""
    missing = str(uuid.uuid4())
    p = daemon.rnx("job", "status", missing)
    assert p.returncode == 1
    assert missing in p.stderr
    assert "no job" in p.stderr


# ---- --json ----------------------------------------------------------------------------------

def test_status_json_has_api_fields(daemon):
    """`rnx job status --json` prints the job object with the fields of docs/api.md."""
    jid = run_id(daemon, "--name", "jsonjob", "--max-memory", "32", "sh", "-c", "exit 4")
    daemon.wait(jid)
    job = status_json(daemon, jid)
    assert JOB_FIELDS <= set(job), JOB_FIELDS - set(job)
    assert LIMIT_FIELDS <= set(job["limits"])
    assert USAGE_FIELDS <= set(job["usage"])
    assert job["id"] == jid and job["name"] == "jsonjob"
    assert job["status"] == "FAILED" and job["exit_code"] == 4 and job["end_reason"] == "exit"
    assert job["command"] == "sh" and job["args"] == ["-c", "exit 4"]
    assert job["limits"]["max_memory_mb"] == 32
    for k in ("created_at", "started_at", "ended_at"):
        assert RFC3339_MS.match(job[k]), (k, job[k])
    assert parse_ts(job["created_at"]) <= parse_ts(job["started_at"]) <= parse_ts(job["ended_at"])
    assert job["gpus"] == []
    assert job == daemon.job(jid)


def test_status_json_usage_has_pids_current(daemon):
    """The job's usage object carries every field docs/api.md lists, pids_current included."""
    jid = run_id(daemon, "true")
    daemon.wait(jid)
    usage = status_json(daemon, jid)["usage"]
    assert set(usage) >= USAGE_FIELDS | {"pids_current"}, f"usage fields: {sorted(usage)}"
    assert all(isinstance(v, int) and v >= 0 for v in usage.values()), usage


def test_list_json_is_array_of_job_objects(daemon):
    """`rnx job list --json` prints a JSON array of job objects, including a new job."""
    jid = run_id(daemon, "--name", "listed", "true")
    daemon.wait(jid)
    p = daemon.rnx("job", "list", "--json")
    assert p.returncode == 0, p.stderr
    jobs = json.loads(p.stdout)
    assert isinstance(jobs, list)
    mine = [j for j in jobs if j["id"] == jid]
    assert len(mine) == 1
    assert JOB_FIELDS <= set(mine[0])
    assert mine[0]["name"] == "listed" and mine[0]["status"] == "COMPLETED" and mine[0]["exit_code"] == 0


def test_global_json_flag_before_command(daemon):
    """The global `rnx --json job list` form prints the same JSON array."""
    p = daemon.rnx("--json", "job", "list")
    assert p.returncode == 0, p.stderr
    assert isinstance(json.loads(p.stdout), list)


def test_log_json_records_parse(daemon):
    """`rnx job log --json` prints one API record per line, ending with the end record."""
    jid = run_id(daemon, "sh", "-c", "echo a; echo b >&2; exit 2")
    daemon.wait(jid)
    p = daemon.rnx("job", "log", "--json", jid)
    assert p.returncode == 0, p.stderr
    recs = [json.loads(line) for line in p.stdout.splitlines()]
    assert [(r["stream"], r["data"]) for r in recs[:-1]] == [("stdout", "a\n"), ("stderr", "b\n")]
    assert recs[-1]["end"] is True
    assert recs[-1]["status"] == "FAILED" and recs[-1]["exit_code"] == 2 and recs[-1]["end_reason"] == "exit"


# ---- text output -----------------------------------------------------------------------------

def test_list_table_shows_short_id_name_status(daemon):
    """The `rnx job list` table has a row with the job's short id, number (its SLURM_JOB_ID), name
    and status."""
    jid = run_id(daemon, "--name", "tabled", "sh", "-c", "exit 5")
    number = daemon.wait(jid)["number"]
    p = daemon.rnx("job", "list")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split()[:5] == ["ID", "NUM", "NAME", "STATUS", "EXIT"]
    row = [l for l in lines if l.startswith(jid[:8] + " ")]
    assert len(row) == 1, p.stdout
    assert row[0].split()[:5] == [jid[:8], str(number), "tabled", "FAILED", "5"]


def test_status_text_shows_exit_reason_times_limits_usage(daemon):
    """`rnx job status` shows exit code, end reason in words, start/end times, limits and usage."""
    jid = run_id(daemon, "--max-memory", "64", "--max-cpu", "50", "--max-runtime", "90", "--name", "detail",
                 "sh", "-c", "exit 3")
    daemon.wait(jid)
    p = daemon.rnx("job", "status", jid)
    assert p.returncode == 0, p.stderr
    fields = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition(":")
        if v:
            fields.setdefault(k.strip(), v.strip())
    assert fields["UUID"] == jid
    assert fields["Number"] == f"{daemon.job(jid)['number']} (SLURM_JOB_ID)"
    assert fields["Name"] == "detail"
    assert fields["Status"] == "FAILED"
    assert fields["Exit code"] == "3"
    assert fields["End reason"] == "exited"
    assert re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", fields["Started"]), fields
    assert re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", fields["Ended"]), fields
    assert "memory 64 MB" in fields["Limits"]
    assert "max_cpu 50%" in fields["Limits"]
    assert "max runtime 1m30s" in fields["Limits"]
    assert "CPU time" in fields["Usage"] and "memory peak" in fields["Usage"]


def test_version_prints_client_and_server(daemon):
    """`rnx --version` prints the client's version and the daemon's."""
    with open(os.path.join(ROOT, "meson.build")) as f:
        client_version = re.search(r"version\s*:\s*'([^']+)'", f.read()).group(1)
    server_version = daemon.api("GET", "/v1/version")[1]["version"]
    p = daemon.rnx("--version")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == f"rnx {client_version}"
    # the SPANK plugin this build made: the Slurm release of the spank.h it found (slurm_version.h)
    if os.path.exists("/usr/include/slurm/slurm_version.h"):
        with open("/usr/include/slurm/slurm_version.h") as f:
            n = int(re.search(r"#define SLURM_VERSION_NUMBER (0x[0-9a-f]+)", f.read()).group(1), 16)
        release = f"{n >> 16}.{(n >> 8) & 0xff:02d}.{n & 0xff}"
        assert lines[1].startswith(f"Slurm plugin: built for Slurm {release} ("), lines[1]
        j = json.loads(daemon.rnx("--json", "--version").stdout)["slurm_plugin"]
        assert j["slurm_release"] == release and j["path"].endswith("/slurm-wlm/joblet.so"), j
        assert j["installed"] == os.path.exists(j["path"]), j
    else:
        assert lines[1] == "Slurm plugin: not built (no slurm/spank.h)", lines[1]
    assert lines[2].startswith(f"joblet {server_version}")


# ---- environment and secrets -----------------------------------------------------------------

def test_env_reaches_job(daemon):
    """-e and --env K=V are set in the job's environment."""
    p = daemon.rnx("job", "run", "-f", "-e", "ALPHA=one", "--env", "BETA=two words", "--env=GAMMA=x=y",
                   "sh", "-c", 'printf "%s|%s|%s\\n" "$ALPHA" "$BETA" "$GAMMA"')
    assert p.returncode == 0, p.stderr
    assert p.stdout == "one|two words|x=y\n"


def test_secret_env_reaches_job_but_is_never_shown(daemon):
    """-s/--secret-env reaches the job, but its value appears in no output, API answer or daemon log."""
    d = daemon
    secret = "S3cr3t-" + uuid.uuid4().hex
    secret2 = "Hush-" + uuid.uuid4().hex
    p = d.rnx("job", "run", "-f", "-s", f"TOKEN={secret}", "--secret-env", f"OTHER={secret2}",
              "sh", "-c", 'printf "%s" "$TOKEN" | md5sum; printf "%s" "$OTHER" | wc -c')
    assert p.returncode == 0, p.stderr
    md5, length = p.stdout.split("\n")[:2]
    assert md5.split()[0] == hashlib.md5(secret.encode()).hexdigest()
    assert int(length) == len(secret2)
    assert secret not in p.stdout and secret not in p.stderr

    jid = [j for j in json.loads(d.rnx("job", "list", "--json", check=True).stdout)
           if "TOKEN" in j["secret_env"]][-1]["id"]
    seen = {
        "status": d.rnx("job", "status", jid, check=True).stdout,
        "status --json": d.rnx("job", "status", "--json", jid, check=True).stdout,
        "list --json": d.rnx("job", "list", "--json", check=True).stdout,
        "list": d.rnx("job", "list", check=True).stdout,
        "GET /v1/jobs": json.dumps(d.api("GET", "/v1/jobs")[1]),
        f"GET /v1/jobs/{jid}": json.dumps(d.api("GET", f"/v1/jobs/{jid}")[1]),
        "daemon log": d.log(),
    }
    for where, text in seen.items():
        assert secret not in text, f"secret value leaked in {where}"
        assert secret2 not in text, f"secret value leaked in {where}"
    assert set(d.job(jid)["secret_env"]) == {"TOKEN", "OTHER"}
    assert "TOKEN=***" in seen["status"]


# ---- uploads ---------------------------------------------------------------------------------

INSPECT = r"""
import json, os
out = {}
for root, dirs, files in os.walk("/work"):
    for n in dirs + files:
        p = os.path.join(root, n)
        st = os.lstat(p)
        e = {"mode": oct(st.st_mode & 0o7777)}
        if os.path.islink(p):
            e["type"] = "symlink"; e["target"] = os.readlink(p)
        elif os.path.isdir(p):
            e["type"] = "dir"
        else:
            e["type"] = "file"; e["content"] = open(p, "rb").read().hex()
        out[os.path.relpath(p, "/work")] = e
print(json.dumps(out, sort_keys=True))
"""


def test_upload_file_and_tree_keep_contents_and_modes(daemon, tmp_path):
    """--upload sends a file and a directory tree that arrive in /work with the same contents and modes."""
    script = tmp_path / "run.sh"
    script.write_bytes(b"#!/bin/sh\necho hi\n")
    os.chmod(script, 0o750)
    tree = tmp_path / "tree"
    (tree / "sub" / "deeper").mkdir(parents=True)
    (tree / "empty").mkdir()
    (tree / "a.txt").write_bytes(b"alpha\n")
    (tree / "sub" / "secret.key").write_bytes(bytes(range(256)))
    (tree / "sub" / "deeper" / "z").write_bytes(b"")
    os.chmod(tree / "sub" / "secret.key", 0o600)
    os.chmod(tree / "a.txt", 0o644)
    os.chmod(tree / "sub" / "deeper" / "z", 0o640)
    os.chmod(tree / "sub", 0o750)
    os.chmod(tree / "empty", 0o700)
    os.chmod(tree / "sub" / "deeper", 0o755)
    os.chmod(tree, 0o755)

    expected = {}
    for path in [script, tree, *sorted(tree.rglob("*"))]:
        rel = os.path.relpath(path, tmp_path)
        st = os.lstat(path)
        e = {"mode": oct(st.st_mode & 0o7777)}
        if stat.S_ISDIR(st.st_mode):
            e["type"] = "dir"
        else:
            e["type"] = "file"
            e["content"] = path.read_bytes().hex()
        expected[rel] = e

    p = daemon.rnx("job", "run", "-f", "--upload", str(script), "--upload", str(tree), "python3", "-c", INSPECT)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == expected


def test_upload_symlink_in_directory_stays_symlink(daemon, tmp_path):
    """A symlink inside an uploaded directory arrives as a symlink with the same target."""
    tree = tmp_path / "linked"
    tree.mkdir()
    (tree / "real.txt").write_text("real\n")
    os.symlink("real.txt", tree / "link.txt")
    os.symlink("../elsewhere/none", tree / "dangling")
    p = daemon.rnx("job", "run", "-f", "--upload", str(tree), "python3", "-c", INSPECT)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["linked/link.txt"]["type"] == "symlink"
    assert got["linked/link.txt"]["target"] == "real.txt"
    assert got["linked/dangling"]["type"] == "symlink"
    assert got["linked/dangling"]["target"] == "../elsewhere/none"
    assert got["linked/real.txt"]["content"] == b"real\n".hex()
    p = daemon.rnx("job", "run", "-f", "--upload", str(tree), "cat", "linked/link.txt")
    assert p.returncode == 0 and p.stdout == "real\n", p


# ---- other run flags -------------------------------------------------------------------------

def test_workdir_sets_starting_directory(daemon, tmp_path):
    """--workdir makes the command start in that directory."""
    (tmp_path / "proj" / "src").mkdir(parents=True)
    (tmp_path / "proj" / "src" / "f").write_text("x")
    p = daemon.rnx("job", "run", "-f", "--upload", str(tmp_path / "proj"), "--workdir", "/work/proj/src",
                   "sh", "-c", "pwd; ls")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "/work/proj/src\nf\n"
    p = daemon.rnx("job", "run", "-f", "--workdir=/tmp", "pwd")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "/tmp\n"


def test_name_is_recorded(daemon):
    """--name names the job in status and list."""
    jid = run_id(daemon, "--name", "my-named-job", "true")
    assert status_json(daemon, jid)["name"] == "my-named-job"
    daemon.wait(jid)


def test_network_host_sees_host_interfaces(daemon):
    """--network host shows the job the host's interfaces; the default shows loopback only."""
    prog = "import socket, json; print(json.dumps(sorted(n for _, n in socket.if_nameindex())))"
    host_ifs = sorted(n for _, n in socket.if_nameindex())
    p = daemon.rnx("job", "run", "-f", "--network", "host", "python3", "-c", prog)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == host_ifs
    p = daemon.rnx("job", "run", "-f", "python3", "-c", prog)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == ["lo"]


def test_schedule_delays_start(daemon):
    """--schedule 10s leaves the job SCHEDULED with scheduled_at set, then it runs about 10 s later
    (10 s: two rnx starts fit in it under a whole sanitizer run's load)."""
    jid = run_id(daemon, "--schedule", "10s", "echo", "ran")
    job = status_json(daemon, jid)
    assert job["status"] == "SCHEDULED"
    assert job["scheduled_at"] is not None
    assert job["started_at"] is None
    # scheduled_at is whole seconds, counted from rnx's clock: "10s" lands 9-10 s after created_at
    delay = parse_ts(job["scheduled_at"]) - parse_ts(job["created_at"])
    assert 8.0 <= delay <= 11.0, job
    job = daemon.wait(jid, timeout=60)
    assert job["status"] == "COMPLETED"
    assert parse_ts(job["started_at"]) >= parse_ts(job["scheduled_at"]) - 0.001
    assert parse_ts(job["started_at"]) - parse_ts(job["created_at"]) >= 0.9
    assert daemon.output(jid) == "ran\n"


def test_max_runtime_stops_job(daemon):
    """--max-runtime stops a job that runs too long, ending it as time_limit."""
    p = daemon.rnx("job", "run", "-f", "--max-runtime", "1s", "sh", "-c", "echo started; sleep 30")
    assert p.returncode != 0
    assert p.stdout == "started\n"
    assert "time limit" in p.stderr
    jobs = json.loads(daemon.rnx("job", "list", "--json", check=True).stdout)
    job = [j for j in jobs if j["args"] == ["-c", "echo started; sleep 30"]][-1]
    assert job["status"] == "FAILED"
    assert job["end_reason"] == "time_limit"
    assert job["limits"]["max_runtime_s"] == 1
    text = daemon.rnx("job", "status", job["id"], check=True).stdout
    assert "time limit 1s reached" in text


# ---- stop / cancel / delete ------------------------------------------------------------------

def test_cancel_scheduled_job(daemon):
    """`rnx job cancel` turns a scheduled job into CANCELED; it never runs."""
    jid = run_id(daemon, "--schedule", "1h", "echo", "never")
    p = daemon.rnx("job", "cancel", jid)
    assert p.returncode == 0, p.stderr
    assert jid in p.stdout
    job = daemon.job(jid)
    assert job["status"] == "CANCELED"
    assert job["end_reason"] == "canceled"
    assert job["started_at"] is None


def test_stop_running_job(daemon):
    """`rnx job stop` turns a running job into STOPPED."""
    jid = run_id(daemon, "sleep", "60")
    daemon.wait_status(jid, "RUNNING")
    p = daemon.rnx("job", "stop", jid[:8])
    assert p.returncode == 0, p.stderr
    assert jid in p.stdout
    job = daemon.wait(jid, timeout=30)
    assert job["status"] == "STOPPED"
    assert job["end_reason"] == "stopped"
    assert job["stopped_by"] == 0


def test_delete_removes_job_and_directory(daemon):
    """`rnx job delete` removes the job from the list and its directory from the state dir."""
    jid = run_id(daemon, "echo", "bye")
    daemon.wait(jid)
    jobdir = os.path.join(daemon.state, "jobs", jid)
    assert os.path.isdir(jobdir)
    p = daemon.rnx("job", "delete", jid)
    assert p.returncode == 0, p.stderr
    assert jid in p.stdout
    ids = [j["id"] for j in json.loads(daemon.rnx("job", "list", "--json", check=True).stdout)]
    assert jid not in ids
    assert not os.path.exists(jobdir)
    assert jid not in daemon.job_dirs()
    p = daemon.rnx("job", "status", jid)
    assert p.returncode == 1 and jid in p.stderr


def test_delete_running_job_is_refused(daemon):
    """`rnx job delete` of a running job fails with exit 1 and a message; the job is untouched."""
    jid = run_id(daemon, "sleep", "60")
    daemon.wait_status(jid, "RUNNING")
    p = daemon.rnx("job", "delete", jid)
    assert p.returncode == 1
    assert p.stderr.startswith("rnx: ") and len(p.stderr.strip()) > len("rnx: ")
    assert "RUNNING" in p.stderr or "running" in p.stderr or "stop" in p.stderr, p.stderr
    assert daemon.job(jid)["status"] == "RUNNING"
    assert jid in daemon.job_dirs()
    daemon.rnx("job", "stop", jid, check=True)
    daemon.wait(jid)


def test_delete_all_removes_only_finished_jobs(fresh_daemon):
    """`rnx job delete-all` removes every finished job and leaves running and scheduled ones."""
    d = fresh_daemon()
    done = [run_id(d, "true"), run_id(d, "sh", "-c", "exit 1")]
    for jid in done:
        d.wait(jid)
    running = run_id(d, "sleep", "60")
    scheduled = run_id(d, "--schedule", "1h", "true")
    d.wait_status(running, "RUNNING")
    p = d.rnx("job", "delete-all")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "deleted 2 jobs\n"
    left = {j["id"]: j["status"] for j in json.loads(d.rnx("job", "list", "--json", check=True).stdout)}
    assert left == {running: "RUNNING", scheduled: "SCHEDULED"}
    assert d.job_dirs() == sorted([running, scheduled])


# ---- no daemon -------------------------------------------------------------------------------

def test_unreachable_daemon_is_explained():
    """With no daemon at the socket, rnx exits 1 and says it cannot reach joblet there."""
    p = subprocess.run([os.path.join(BUILD, "rnx"), "--socket", "/nonexistent/sock", "job", "list"],
                       capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 1
    assert "cannot reach joblet at /nonexistent/sock" in p.stderr
    assert "is it running?" in p.stderr
    assert p.stdout == ""


def test_queue_positions_follow_the_queue(fresh_daemon):
    """With jobs.max_running 1, waiting jobs are QUEUED with positions 1, 2 that move up on cancel."""
    d = fresh_daemon("  max_running: 1\n")
    first = d.submit("sleep", "30")
    d.wait_status(first, "RUNNING")
    second, third = d.submit("true"), d.submit("true")
    assert (d.job(second)["status"], d.job(second)["queue_position"]) == ("QUEUED", 1)
    assert (d.job(third)["status"], d.job(third)["queue_position"]) == ("QUEUED", 2)
    assert d.rnx("job", "cancel", second).returncode == 0
    assert d.job(third)["queue_position"] == 1
    d.api("POST", f"/v1/jobs/{first}/stop")
    assert d.wait(third)["status"] == "COMPLETED"
    assert d.job(third)["queue_position"] is None
