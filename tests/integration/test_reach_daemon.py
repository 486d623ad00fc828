"""The daemon's edges that a coverage run of the whole suite found no test reaching (gcov, every
module): untested behaviour is where bugs hide. Here: the refusals of the API's routes
(src/api/routes.c, routes_slurm.c, body.c: the status, the field named and what would be accepted,
and that nothing changed), the GPU admin's and the audit trail's queries on simulated GPUs, an idle
event stream's ping, the daemon's command line (src/daemon/main.c), its configuration file's
values and an empty file (src/core/config.c: the key named, what it must be, exit 2 before
anything is touched) and a metrics port taken at start.

One daemon for the module (its tests leave it as they found it: every job they start is ended, a
GPU taken offline is brought back); the command-line and configuration checks start no daemon, the
metrics one a daemon of its own.
"""
import json
import os
import subprocess
import time

import pytest

from conftest import BUILD, ROOT, Daemon, UnixHTTPConnection, need_root, submit_array, tasks_of, wait_array, wait_for

JOBLET = os.path.join(BUILD, "joblet")
FIX = os.path.join(ROOT, "tests", "fixtures")


@pytest.fixture(scope="module")
def d():
    need_root()
    dm = Daemon("server:\n  max_body_bytes: 4096\n"
                f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n").start()
    yield dm
    dm.cleanup()


def refused(answer, status, field, *says):
    """answer (status, body) is an error of that status naming field (None: none), whose message
    holds each of says."""
    st, body = answer
    assert st == status, answer
    err = body["error"]
    assert err.get("field") == field, answer
    for s in says:
        assert s in err["message"], answer


def sleeper(d, **fields):
    jid = d.submit("sleep", "300", **fields)
    d.wait_status(jid, "RUNNING")
    return jid


def end(d, jid):
    d.api("POST", f"/v1/jobs/{jid}/kill")
    d.wait(jid)


# -- bodies (src/api/body.c) ------------------------------------------------------------------

def raw(d, method, path, body, chunked=False):
    """One request with body (bytes) as it is: with no Content-Length but chunks where chunked
    (its size unknown until it has all come). (status, JSON answer)."""
    c = UnixHTTPConnection(d.sock)
    try:
        if chunked:
            c.request(method, path, body=iter([body[i:i + 1000] for i in range(0, len(body), 1000)]),
                      headers={"Content-Type": "application/json"}, encode_chunked=True)
        else:
            c.request(method, path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, json.loads(r.read())
    finally:
        c.close()


def test_chunked_body_larger_than_max_body_bytes_is_413(d):
    """A body of no announced length is read until it passes server.max_body_bytes, then refused
    whole: 413 naming the setting and the way files go (a Content-Length over it is refused
    before its body, elsewhere); nothing is made of it."""
    n = d.job_count()
    big = json.dumps({"command": "true", "env": {"PAD": "x" * 6000}}).encode()
    refused(raw(d, "POST", "/v1/jobs", big, chunked=True), 413, None,
            "larger than 4096 bytes (server.max_body_bytes)", "streamed upload")
    assert d.job_count() == n


def test_empty_body_where_one_is_read_is_400(d):
    n = d.job_count()
    refused(raw(d, "POST", "/v1/jobs", b""), 400, None, "not valid JSON: empty body")
    assert d.job_count() == n


# -- stop, cancel, kill with ?name, ?user, ?status (scancel -n, -u; src/api/routes.c) ----------

def test_stop_with_a_name_an_owner_or_a_status_that_do_not_match_leaves_the_job(d):
    named = sleeper(d, name="reach-named")
    plain = sleeper(d)
    try:
        refused(d.api("POST", f"/v1/jobs/{named}/stop?user=bob"), 400, "user",
                "user: 'bob' is not a uid; give a number, e.g. 1000")
        st, body = d.api("POST", f"/v1/jobs/{named}/cancel?name=other")
        assert st == 409 and body["error"]["message"] == \
            f"job {named} is named 'reach-named', not 'other': left as it is", body
        st, body = d.api("POST", f"/v1/jobs/{plain}/kill?name=other")
        assert st == 409 and body["error"]["message"] == \
            f"job {plain} has no name, and 'other' was asked for: left as it is", body
        st, body = d.api("POST", f"/v1/jobs/{named}/stop?user=4242")
        assert st == 409 and body["error"]["message"] == f"job {named} is uid 0's, not uid 4242's: left as it is", body
        st, body = d.api("POST", f"/v1/jobs/{plain}/stop?status=QUEUED")
        assert st == 409 and body["error"]["message"] == f"job {plain} is RUNNING now, not QUEUED: left as it is", body
        for j in (named, plain):
            assert d.job(j)["status"] == "RUNNING"
        # and when they match, it acts
        st, body = d.api("POST", f"/v1/jobs/{named}/kill?name=reach-named&user=0&status=RUNNING")
        assert st == 200, body
        assert d.wait(named)["status"] in ("STOPPED", "CANCELED")
    finally:
        end(d, named)
        end(d, plain)


def test_unknown_job_action_is_404(d):
    jid = d.submit("true")
    d.wait(jid)
    st, body = d.api("POST", f"/v1/jobs/{jid}/explode")
    assert st == 404 and body["error"]["message"] == f"no route POST /v1/jobs/{jid}/explode", body


def test_action_without_options_refuses_a_body(d):
    """An action that takes no options (a hold) refuses a body that is not empty, naming its
    first key; one that takes query options (a stop) refuses a body that is not an object, saying
    where the options go."""
    jid = d.submit("sleep", "300", schedule_at="2034-01-01T00:00:00Z")
    try:
        refused(d.api("POST", f"/v1/jobs/{jid}/release", {"colour": "red"}), 400, "colour",
                "colour: POST /v1/jobs/ID/release takes no options (no query, no body: send none, or {})")
        refused(d.api("POST", f"/v1/jobs/{jid}/release", []), 400, None,
                "POST /v1/jobs/ID/release takes no options (no query, no body: send none, or {})")
        refused(d.api("POST", f"/v1/jobs/{jid}/stop", [1]), 400, None,
                "POST /v1/jobs/ID/stop reads no request body (send none, or {}); its options go in the query: ")
        assert d.job(jid)["status"] not in ("STOPPED", "CANCELED", "COMPLETED", "FAILED")
    finally:
        d.api("POST", f"/v1/jobs/{jid}/cancel")
        d.wait(jid)


# -- listing and logs ---------------------------------------------------------------------------

def test_list_fields_refused_names_the_bad_one_and_the_keys(d):
    refused(d.api("GET", "/v1/jobs?fields=id,,status"), 400, "fields",
            "fields: an empty name in 'id,,status'; give keys of a job, comma-separated: ", "status")
    refused(d.api("GET", "/v1/jobs?fields=id,colour"), 400, "fields",
            "fields: 'colour' is not a key of a job; use some of: ", "status")
    st, body = d.api("GET", "/v1/jobs?fields=id,status")
    assert st == 200 and all(set(j) <= {"id", "status", "kind"} for j in body["jobs"]), body


def test_log_options_refused(d):
    jid = d.submit("true")
    d.wait(jid)
    refused(d.api("GET", f"/v1/jobs/{jid}/logs?stream=stdin"), 400, "stream",
            "stream: 'stdin' is not accepted; use stdout, stderr or all")
    refused(d.api("GET", f"/v1/jobs/{jid}/logs?since=yesterday"), 400, "since",
            "since: 'yesterday' is not a time; give RFC 3339, e.g. 2026-11-22T15:00:00.5Z")


# -- workflows -----------------------------------------------------------------------------------

def test_workflow_routes_refused(d):
    st, body = d.api("PUT", "/v1/workflows")
    assert st == 404 and body["error"]["message"] == "no route PUT /v1/workflows; see docs/api.md", body
    long = "w" * 200
    st, body = d.api("GET", f"/v1/workflows/{long}")
    assert st == 404 and body["error"]["message"] == \
        f"no workflow '{'w' * 40}…': an id, a prefix or a name is shorter", body


# -- arrays ----------------------------------------------------------------------------------------

def test_array_refusals_and_a_signal_to_its_tasks(d):
    a = submit_array(d, "0-1", "sh", "-c", "trap 'echo got-usr1; exit 0' USR1; echo ready; sleep 300 & wait")
    aid = a["id"]
    try:
        wait_for(lambda: [d.output(t["id"]) for t in tasks_of(d, aid)] == ["ready\n"] * 2,
                 "both tasks to run, their trap set")
        for key, says in (("after", "dependencies"), ("after_any", "dependencies"), ("schedule_at", "start time")):
            refused(d.api("POST", f"/v1/jobs/{aid}/update", {key: "2034-01-01T00:00:00Z"}), 400, key,
                    f"{key}: array {aid}: an array's {says} cannot change once it is submitted",
                    "cancel the array and submit it again")
        refused(d.api("POST", f"/v1/jobs/{aid}/update"), 400, None, "not valid JSON: empty body")
        st, body = d.api("DELETE", f"/v1/jobs/{aid}_[0-1]")
        assert st == 400 and body["error"]["message"] == \
            f"an array is deleted whole (rnx job delete {aid[:8]}), once every task ended", body
        refused(d.api("POST", f"/v1/jobs/{aid}/kill?signal=NOPE"), 400, "signal")
        assert d.job(aid)["status"] == "RUNNING"
        # a signal (not a kill): the running tasks hear it, and end as they choose
        st, body = d.api("POST", f"/v1/jobs/{aid}/kill?signal=USR1")
        assert st == 200 and body["acted"] == 2, body
        for t in tasks_of(d, aid):
            assert d.wait(t["id"])["status"] == "COMPLETED"
            assert d.output(t["id"]) == "ready\ngot-usr1\n"
    finally:
        d.api("POST", f"/v1/jobs/{aid}/kill")
        wait_array(d, aid)


# -- GPU admin and the audit trail (simulated GPUs: the dgx-h100 fixture) ----------------------------

def gpu_state(d, i):
    st, body = d.api("GET", "/v1/gpus")
    assert st == 200, body
    return [g for g in body["gpus"] if g["index"] == i][0]["state"]


def test_gpu_admin_refusals(d):
    refused(d.api("POST", "/v1/gpus/0/reboot"), 404, None, "no GPU action 'reboot': use drain, offline or online")
    refused(d.api("POST", "/v1/gpus/0/drain", {"force": "yes"}), 400, "force", "force: must be true or false")
    refused(d.api("POST", "/v1/gpus/0/drain", ["force"]), 400, "force", "force: must be true or false")
    assert gpu_state(d, 0) == "available"
    st, body = d.api("POST", "/v1/gpus/0/offline", {"force": False})
    assert st == 200 and body["state"] == "offline", body
    try:
        # a drain of a GPU out of service would put it back in part: refused, it stays offline
        st, body = d.api("POST", "/v1/gpus/0/drain")
        assert st == 409 and body["error"]["message"] == \
            "GPU 0 is offline (taken offline by uid 0); bring it online first", body
        assert gpu_state(d, 0) == "offline"
    finally:
        st, body = d.api("POST", "/v1/gpus/0/online")
        assert st == 200 and body["state"] == "available", body


def test_audit_queries_by_uid_name_and_rfc3339_times(d):
    for action in ("drain", "online"):   # records of root's, whatever ran before
        st, body = d.api("POST", f"/v1/gpus/1/{action}")
        assert st == 200, body
    refused(d.api("GET", "/v1/audit?user=no-such-user-zq"), 400, "user",
            "user: 'no-such-user-zq' is neither a user name nor a uid")
    # a uid with no account is still a uid (records of a user since deleted)
    st, body = d.api("GET", "/v1/audit?user=3999999")
    assert st == 200 and body["records"] == [], body
    st, body = d.api("GET", "/v1/audit?user=root&since=2000-01-01T00:00:00Z&until=2099-01-01T00:00:00Z")
    assert st == 200, body
    mine = body["records"]
    assert mine and all(r["uid"] == 0 for r in mine), body
    st, body = d.api("GET", "/v1/audit?user=root&since=2099-01-01T00:00:00Z")
    assert st == 200 and body["records"] == [], body
    refused(d.api("GET", "/v1/audit?since=monday"), 400, "since", "since: 'monday' is not a time; give RFC 3339")


# -- Slurm tasks' bodies (src/api/routes_slurm.c) ------------------------------------------------------

@pytest.mark.parametrize("field,value,says", [
    ("argv", [], "argv: must be the task's command line, a non-empty list of strings"),
    ("env", "A=1", "env: must be a list of \"NAME=value\" strings"),
    ("gpus", "/dev/nvidia0", "gpus: must be a list of device nodes (\"/dev/nvidia0\")"),
    ("task_gpus", {"a": 1}, "task_gpus: must be a list of device nodes (\"/dev/nvidia0\")"),
    ("tty", "yes", "tty: must be true or false"),
    ("slurm", {"job": "x"}, "slurm: must be {\"job\": J, \"step\": \"S\", \"task\": T, \"uid\": U}"),
])
def test_slurm_task_body_refused_names_its_field(d, field, value, says):
    """Checked before anything else of the task (its caller's cgroup, 403 for this test's):
    400 naming the field and what it must be; no job made."""
    n = d.job_count()
    body = {"argv": ["true"], "env": []}
    body[field] = value
    refused(d.api("POST", "/v1/slurm/tasks", body), 400, field, says)
    assert d.job_count() == n


# -- the daemon's command line (src/daemon/main.c) and its configuration's values (src/core/config.c) --

def joblet(*args, user=None, timeout=60):
    pre = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if user == "nobody" else []
    return subprocess.run([*pre, JOBLET, *args], capture_output=True, text=True, timeout=timeout,
                          env={"PATH": "/usr/bin:/bin"})


def conf(tmp_path, text):
    p = tmp_path / "c.yml"
    p.write_text(text)
    os.chmod(tmp_path, 0o755)
    os.chmod(p, 0o644)
    return str(p)


def test_command_line_refusals(tmp_path):
    empty = conf(tmp_path, "")
    p = joblet("--version")
    assert p.returncode == 0 and p.stdout.startswith("joblet ") and p.stderr == "", p
    for args, says in ((["--frobnicate"], "joblet: unknown or incomplete option '--frobnicate'; see 'joblet --help'"),
                       (["--config"], "joblet: unknown or incomplete option '--config'; see 'joblet --help'"),
                       (["--config", empty, "serve"], "joblet: unexpected argument 'serve'"),
                       (["--config", empty, "--output", "x.json"], "joblet: --output is for 'joblet cdi generate'"),
                       (["--config", empty, "--log-level", "loud"],
                        "joblet: --log-level: 'loud' must be one of error, warn, info, debug"),
                       (["--config", empty, "--probe-gpus=fixture"],
                        "joblet: --probe-gpus=fixture needs gpu.fixture in the configuration")):
        p = joblet(*args)
        assert p.returncode == 2 and p.stderr == says + "\n" and p.stdout == "", (args, p)
    assert not os.path.exists(os.path.join(tmp_path, "x.json"))


def test_not_root_is_refused_before_anything(tmp_path):
    need_root()
    state = tmp_path / "state"
    p = joblet("--config", "/dev/null", "--state-dir", str(state), "--socket", str(tmp_path / "s.sock"), user="nobody")
    assert p.returncode == 1, p
    assert p.stderr == "joblet: must run as root: it creates namespaces, cgroups and mounts for jobs\n", p
    assert not state.exists() and not (tmp_path / "s.sock").exists()


def test_a_second_joblet_on_the_socket_is_refused_and_the_first_answers_on(d, tmp_path):
    """Before the state is touched: the second one's state directory is never made, and the
    first one's socket still answers."""
    state = tmp_path / "state"
    c = conf(tmp_path, f"cgroup:\n  root: joblet-it-second-{os.getpid()}\n")
    p = joblet("--config", c, "--state-dir", str(state), "--socket", d.sock)
    assert p.returncode == 1, p
    assert f"another joblet is already listening on {d.sock}" in p.stderr, p
    assert not state.exists()
    assert d.api("GET", "/v1/version")[0] == 200


@pytest.mark.parametrize("text,says", [
    ("server:\n  socket_mode: \"0999\"\n", "server.socket_mode: '0999' must be an octal mode such as \"0660\""),
    ("log_level: loud\n", "log_level: 'loud' must be one of error, warn, info, debug"),
    ("gpu:\n  strategy: random\n", "gpu.strategy: 'random' must be topology, pack or spread"),
    ("gpu:\n  cuda_paths: [relative/lib]\n",
     "gpu.cuda_paths: 'relative/lib' must be an absolute path shorter than 256 characters"),
    ("gpu:\n  cuda_paths: [" + ",".join(f"/p{i}" for i in range(9)) + "]\n", "gpu.cuda_paths: at most 8 paths"),
    ("remote:\n  listen: [" + ",".join(f"\"127.0.0.1:{7000 + i}\"" for i in range(5)) + "]\n",
     "remote.listen: at most 4 addresses"),
    ("remote:\n  users:\n" + "".join(f"    p{i}: a{i}\n" for i in range(257)), "remote.users: at most 256 people"),
    ("server:\n  max_body_bytes: 100\n", "server.max_body_bytes: '100' must be at least 4096 bytes"),
    ("cgroup:\n  root: \"\"\n", "cgroup.root: must be a non-empty string shorter than 64 characters"),
    ("cgroup:\n  root: " + "r" * 64 + "\n", "cgroup.root: must be a non-empty string shorter than 64 characters"),
])
def test_configuration_values_refused(tmp_path, text, says):
    """A wrong value stops joblet at once, exit 2, naming the file, the key and what it must be;
    the state directory is not made."""
    c = conf(tmp_path, text)
    state = tmp_path / "state"
    p = joblet("--config", c, "--state-dir", str(state), "--socket", str(tmp_path / "s.sock"))
    assert p.returncode == 2 and p.stderr == f"joblet: {c}: {says}\n", p
    assert not state.exists()


@pytest.mark.parametrize("value", ["yes", "true", "no", "false", "auto"])
def test_configuration_tristate_spellings_accepted(tmp_path, value):
    """gpu.enabled takes yes/true, no/false and auto: the configuration is read whole (the next
    check, of --log-level, is the one that refuses)."""
    c = conf(tmp_path, f"gpu:\n  enabled: {value}\n")
    p = joblet("--config", c, "--log-level", "loud")
    assert p.returncode == 2 and p.stderr == "joblet: --log-level: 'loud' must be one of error, warn, info, debug\n", p


@pytest.mark.parametrize("text", ["", "\n\n", "# every setting commented out\n#log_level: debug\n  # server:\n", "---\n"])
def test_configuration_file_of_no_settings_is_all_defaults(tmp_path, text):
    """An emptied joblet.yml, or one with every setting commented out, holds no YAML document:
    it is no settings, the defaults (was: "cannot read or parse this YAML file", exit 2, and
    libfyaml's own "[ERR]" line: joblet did not start)."""
    c = conf(tmp_path, text)
    p = joblet("--config", c, "--log-level", "loud")
    assert p.returncode == 2 and p.stderr == "joblet: --log-level: 'loud' must be one of error, warn, info, debug\n", p


def test_configuration_file_unreadable_or_not_yaml(tmp_path):
    p = joblet("--config", str(tmp_path / "none.yml"), "--log-level", "loud")
    assert p.returncode == 2 and p.stderr == \
        f"joblet: {tmp_path}/none.yml: cannot read this file: No such file or directory\n", p
    p = joblet("--config", str(tmp_path), "--log-level", "loud")
    assert p.returncode == 2 and p.stderr == f"joblet: {tmp_path}: cannot read this file: Is a directory\n", p
    c = conf(tmp_path, "log_level: [debug\n")
    p = joblet("--config", c, "--log-level", "loud")
    assert p.returncode == 2 and p.stderr.endswith(f"joblet: {c}: cannot parse this YAML file\n"), p
    for text in ("log_level\n", "[1, 2]\n"):
        c = conf(tmp_path, text)
        p = joblet("--config", c, "--log-level", "loud")
        assert p.returncode == 2 and p.stderr == f"joblet: {c}: the top level must be a mapping of settings\n", p


def test_metrics_port_taken_stops_the_start_naming_it_and_a_later_start_works(fresh_daemon):
    """metrics.listen on a port another process holds: joblet does not start (exit 1), the log
    names the setting, the address and why; once the port is free the same state starts."""
    import socket
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen(1)
    port = held.getsockname()[1]
    dm = fresh_daemon(f"metrics:\n  listen: 127.0.0.1:{port}\n", start=False)
    try:
        with pytest.raises(RuntimeError):
            dm.start()
        assert dm.proc.wait(timeout=30) == 1
        assert f"metrics.listen: cannot listen on 127.0.0.1:{port}: Address already in use" in dm.log(), dm.log()
    finally:
        held.close()
    dm.start()
    wait_for(lambda: "# TYPE" in metrics_over_tcp(port), "the metrics listener to answer")


def metrics_over_tcp(port):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", "/metrics")
        return c.getresponse().read().decode()
    except OSError:
        return ""
    finally:
        c.close()


def test_an_idle_event_stream_is_pinged_and_stays_live(d):
    """Nothing happens for EVENTS_PING_S (15 s): the stream gets a comment line (": ping", which
    keeps proxies from closing it; SSE clients skip it), and events still come on it after."""
    from sse import Stream
    ev = Stream(d.sock)
    try:
        assert ev.status == 200 and ev.next()[0] == "hello"
        deadline = time.time() + 60
        while b": ping\n\n" not in ev.body:
            assert time.time() < deadline, ev.body
            ev.s.settimeout(max(0.1, deadline - time.time()))
            got = ev.s.recv(65536)
            assert got, "the stream closed"
            ev.buf += got
            ev._dechunk()
        jid = d.submit("true")
        kinds = [k for k, data, _ in ev.until(lambda k, data: (data or {}).get("id") == jid, timeout=60)]
        assert kinds, kinds
        d.wait(jid)
    finally:
        ev.close()
