"""A job's secret environment (docs/api.md: "Secret values are never returned by any endpoint,
nor written to the daemon's log") against a hostile look: what a refusal says, what a job that
fails at its start records, and what another local user learns of it."""
import json
import os

import pytest

import busybox_runtime
from conftest import api_as

OTHER = 4322
OWNER = 4321


def _leaks(text, secret):
    return secret in text


def test_a_secret_path_is_not_echoed_when_the_command_is_not_found(fresh_daemon):
    """The command is resolved along the job's PATH, its secret_env's first (docs/api.md,
    "The command is resolved at submission"). A refusal used to name that PATH in full:
    "'x' is not found ... along PATH=<the secret value>", so the secret went back in the 400 (and,
    for a workflow, in the refusal of the whole file). Nor does a program found without execute
    permission name the secret PATH's directory it was found in."""
    d = fresh_daemon()
    secret = "/usr/bin/s3cr3t-path-" + os.urandom(6).hex()
    code, err = api_as(d, OWNER, "POST", "/v1/jobs", {"command": "no-such-program-x", "secret_env": {"PATH": secret}})
    assert code == 400 and err["error"]["field"] == "command", err
    assert not _leaks(json.dumps(err), secret), err
    assert "secret" in err["error"]["message"], err  # it still says along which PATH, by name
    # a plain PATH is still named, as before
    code, err = api_as(d, OWNER, "POST", "/v1/jobs", {"command": "no-such-program-x", "env": {"PATH": "/plain-dir"}})
    assert code == 400 and "PATH=/plain-dir" in err["error"]["message"], err
    # found, not executable: /etc/passwd along the secret PATH /etc
    code, err = api_as(d, OWNER, "POST", "/v1/jobs", {"command": "passwd", "secret_env": {"PATH": "/etc"}})
    assert code == 400 and err["error"]["field"] == "command", err
    assert "/etc" not in err["error"]["message"], err
    # a workflow's job: the same words, in the refusal of the whole
    code, err = api_as(d, OWNER, "POST", "/v1/workflows",
                       {"name": "wf", "yaml": "jobs:\n  a:\n    command: x\n",
                        "jobs": [{"name": "a", "request": {"command": "no-such-program-x",
                                                           "secret_env": {"PATH": secret}}}]})
    assert code == 400, err
    assert not _leaks(json.dumps(err), secret), err
    assert secret not in d.log()


def test_a_job_whose_command_went_away_keeps_its_secret_path_out_of_its_error_and_the_log(fresh_daemon):
    """A waiting job's command is looked up again when its turn comes (core/queue.c); one gone
    since fails start_failed with the refusal's words as its `error`, which is stored in the
    database, returned by GET /v1/jobs/{id}, published, and logged with log_err. That error named
    the job's secret PATH in full: the secret in clear in the daemon's log and in the database."""
    need = busybox_runtime.BUSYBOX
    if not os.path.exists(need):
        pytest.skip("busybox-static is not installed (scripts/install-deps.sh installs it)")
    d = fresh_daemon(start=False)
    root = busybox_runtime.make(os.path.join(d.state, "runtimes"), name="pybox")
    prog = os.path.join(root, "usr/bin/python")
    with open(prog, "w") as f:
        f.write("#!/bin/sh\necho ran\n")
    os.chmod(prog, 0o755)
    d.start()
    secret = "/usr/bin:/s3cr3t-dir-" + os.urandom(6).hex()
    code, j = api_as(d, OWNER, "POST", "/v1/jobs", {"command": "python", "runtime": "pybox", "hold": True,
                                                     "secret_env": {"PATH": secret}})
    assert code == 201, j
    os.unlink(prog)
    code, r = api_as(d, OWNER, "POST", f"/v1/jobs/{j['id']}/release")
    assert code == 200, r
    job = d.wait(j["id"])
    assert job["status"] == "FAILED" and job["end_reason"] == "start_failed", job
    assert "'python'" in (job.get("error") or ""), job
    assert secret not in json.dumps(job), job
    code, det = api_as(d, OWNER, "GET", f"/v1/jobs/{j['id']}?detail=1")
    assert code == 200 and secret not in json.dumps(det), det
    assert secret not in d.log(), [l for l in d.log().splitlines() if secret in l]
    tail = secret.split(":")[1]
    for f in ("joblet.db", "joblet.db-wal"):
        p = os.path.join(d.state, f)
        if os.path.exists(p):
            with open(p, "rb") as fh:
                assert tail.encode() not in fh.read(), f"{f} holds the secret PATH in clear"


def _cmdline_seen_by_another_user(d, argv, secrets, shown):
    """rnx run as OWNER with argv (it follows a job that prints its secrets A.B... and sleeps):
    what OTHER reads of rnx's command line while the job runs; the job's first line of output."""
    import subprocess
    import time
    from conftest import BUILD, setpriv, wait_for
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    p = subprocess.Popen([*setpriv(OWNER), os.path.join(BUILD, "rnx"), *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, text=True)
    try:
        # the job runs (rnx is past its flags): what another user reads of rnx's command line now
        wait_for(lambda: [j for j in d.api("GET", "/v1/jobs")[1]["jobs"] if j["status"] == "RUNNING"],
                 "the job running", timeout=60)
        time.sleep(0.3)
        seen = subprocess.run([*setpriv(OTHER), "cat", f"/proc/{p.pid}/cmdline"], capture_output=True)
        assert seen.returncode == 0, seen.stderr
        cmdline = seen.stdout.replace(b"\0", b" ").decode(errors="replace")
        assert shown in cmdline, cmdline   # the same process, read
        leaked = [s for s in secrets if s in cmdline]
    finally:
        for j in d.api("GET", "/v1/jobs")[1]["jobs"]:
            d.api("POST", f"/v1/jobs/{j['id']}/kill")
        out, err = p.communicate(timeout=60)
    for j in d.api("GET", "/v1/jobs")[1]["jobs"]:
        d.api("DELETE", f"/v1/jobs/{j['id']}")
    return cmdline, leaked, (out.splitlines() or [""])[0]


def test_a_secret_given_to_rnx_is_not_on_its_command_line_for_others_to_read(fresh_daemon):
    """`rnx job run -s TOKEN=value` (also --secret-env=TOKEN=value, -sTOKEN=value), and `rnx job
    batch --secret-env`: rnx's own command line is readable by every local user
    (/proc/PID/cmdline, ps) for as long as rnx runs, with --follow the job's whole life. The value
    stayed there; now rnx overwrites it in place once the request holds its copy, and the job
    still gets it."""
    d = fresh_daemon()
    secrets = ["argv-s3cr3t-" + os.urandom(6).hex() for _ in range(3)]
    cmdline, leaked, first = _cmdline_seen_by_another_user(
        d, ["job", "run", "--follow", "-s", f"A={secrets[0]}", f"--secret-env=B={secrets[1]}", f"-sC={secrets[2]}",
            "sh", "-c", 'echo "$A.$B.$C"; sleep 30'], secrets, "A=")
    assert not leaked, cmdline
    assert first == ".".join(secrets)
    secrets = ["batch-s3cr3t-" + os.urandom(6).hex() for _ in range(2)]
    cmdline, leaked, first = _cmdline_seen_by_another_user(
        d, ["job", "batch", "--follow", "--secret-env", f"A={secrets[0]}", f"--secret-env=B={secrets[1]}",
            "--wrap", 'echo "$A.$B"; sleep 30'], secrets, "A=")
    assert not leaked, cmdline
    assert first == ".".join(secrets)


def test_the_database_files_are_roots_alone(fresh_daemon):
    """joblet.db and its -wal and -shm hold every job's row: 0600, not 0644 (SQLite makes the
    -wal and -shm with the database's mode), whatever the state directory's mode; an older
    joblet's 0644 files are made 0600 at the start."""
    import stat
    d = fresh_daemon()
    d.submit("true")
    db = os.path.join(d.state, "joblet.db")
    d.stop()
    for f in (db, db + "-wal", db + "-shm"):
        if os.path.exists(f):
            os.chmod(f, 0o644)
    d.start()
    d.submit("true")
    modes = {f: oct(stat.S_IMODE(os.stat(f).st_mode)) for f in (db, db + "-wal", db + "-shm") if os.path.exists(f)}
    assert modes and all(m == "0o600" for m in modes.values()), modes
