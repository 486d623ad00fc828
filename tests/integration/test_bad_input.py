"""Every bad input is refused with a message that names the input and what is accepted, and
leaves no job and no file behind."""
import json
import os
import subprocess
import uuid

import pytest

from conftest import BUILD, UnixHTTPConnection, need_root, remove_cgroup_root


def online_cpus():
    with open("/sys/devices/system/cpu/online") as f:
        text = f.read().strip()
    n = 0
    for part in text.split(","):
        a, _, b = part.partition("-")
        n += int(b or a) - int(a) + 1
    return text, n


def snapshot(d):
    return d.job_count(), d.job_dirs()


def assert_refused(d, args, words, rc=None):
    """Runs `rnx ARGS`; it must fail, say every one of words on stderr, and create nothing."""
    before = snapshot(d)
    p = d.rnx(*args)
    assert p.returncode != 0, f"rnx {args} succeeded:\n{p.stdout}"
    if rc is not None:
        assert p.returncode == rc, (p.returncode, p.stderr)
    assert p.stdout == "", p.stdout
    assert p.stderr.startswith("rnx: "), p.stderr
    for w in words:
        assert w in p.stderr, f"{w!r} not in {p.stderr!r}"
    assert snapshot(d) == before, "a refused command created a job or a job directory"
    return p


# ---- rnx job run: flag values ------------------------------------------------------------------

RUN_CASES = {
    # case id: (flags, words the message must contain, exit code)
    "memory-bad-unit": (["--max-memory=12XB"], ["--max-memory", "'12XB'", "not a size", "megabytes", "GB"], 2),
    "memory-zero": (["--max-memory=0"], ["--max-memory", "at least 4 MB", "'0'"], 2),
    "memory-negative": (["--max-memory=-5"], ["--max-memory", "'-5'", "not a size", "megabytes"], 2),
    "cpu-not-number": (["--max-cpu=abc"], ["--max-cpu", "'abc'", "CPU percentage", "whole number", "100 = one core"], 2),
    "cpu-zero": (["--max-cpu=0"], ["--max-cpu", "'0'", "CPU percentage", "from 1"], 2),
    "cores-reversed": (["--cpu-cores=3-1"], ["--cpu-cores", "'3-1'", "not a CPU list", "0-3", "1,3,5"], 2),
    "cores-letters": (["--cpu-cores=a"], ["--cpu-cores", "'a'", "not a CPU list", "0-3"], 2),
    "schedule-word": (["--schedule=yesterday"], ["--schedule", "'yesterday'", "delay", "RFC 3339"], 2),
    "schedule-past": (["--schedule=2020-01-01T00:00:00Z"], ["--schedule", "2020-01-01T00:00:00Z", "in the past"], 2),
    "runtime-bad-unit": (["--max-runtime=5x"], ["--max-runtime", "'5x'", "must be a duration", "seconds", "min"], 2),
    # -e NAME alone passes rnx's own $NAME (docker run's habit): refused when rnx has none
    "env-no-equals": (["-e", "NOEQUALS"], ["--env", "'NOEQUALS'", "not set in your environment", "NOEQUALS=VALUE"], 2),
    "env-bad-name": (["-e", "1BAD=x"], ["--env", "'1BAD'", "not a valid variable name", "letters, digits"], 2),
    "secret-env-no-equals": (["-s", "NOPE"], ["--secret-env", "'NOPE'", "not set in your environment", "NOPE=VALUE"], 2),
    "network-bad-name": (["--network=no/such"], ["--network", "'no/such'", "none", "host", "bridge"], 2),
    "unknown-flag": (["--frobnicate"], ["--frobnicate", "unknown flag", "rnx job run --help"], 2),
    "flag-missing-value": (["--name"], ["--name"], 2),
}


@pytest.mark.parametrize("case", list(RUN_CASES))
def test_run_refuses_bad_flag(daemon, case):
    """A malformed `rnx job run` flag is refused, naming the flag and what it accepts; nothing is created."""
    flags, words, rc = RUN_CASES[case]
    cmd = [] if case == "flag-missing-value" else ["echo", "never"]
    assert_refused(daemon, ["job", "run", *flags, *cmd], words, rc)


def test_run_refuses_cpu_above_machine(daemon):
    """--max-cpu above what the machine has is refused by the daemon, naming its CPU count."""
    _, n = online_cpus()
    assert_refused(daemon, ["job", "run", "--max-cpu=100000", "true"],
                   ["--max-cpu", f"from 1 to {n * 100}", f"{n} CPUs", "100 = one core"], 1)


def test_run_refuses_offline_cpu(daemon):
    """--cpu-cores naming a CPU that is not online is refused with the online CPUs."""
    text, _ = online_cpus()
    assert_refused(daemon, ["job", "run", "--cpu-cores=999", "true"],
                   ["--cpu-cores", "999", "not online", text], 1)


def test_run_refuses_missing_command(daemon):
    """`rnx job run` with flags but no COMMAND is refused with the usage."""
    assert_refused(daemon, ["job", "run", "--name", "x"], ["missing COMMAND", "rnx job run [flags] COMMAND"], 2)


def test_run_refuses_missing_upload(daemon, tmp_path):
    """--upload of a path that does not exist is refused naming the path."""
    missing = str(tmp_path / "no-such-file.py")
    assert_refused(daemon, ["job", "run", "--upload", missing, "true"],
                   ["--upload", missing, "No such file or directory"], 2)


def test_run_refuses_missing_upload_inside_flags(daemon, tmp_path):
    """A good --upload followed by a missing one sends nothing at all."""
    good = tmp_path / "good.txt"
    good.write_text("ok\n")
    missing = str(tmp_path / "gone")
    assert_refused(daemon, ["job", "run", "--upload", str(good), "--upload", missing, "true"],
                   ["--upload", missing], 2)


@pytest.fixture
def small_upload_daemon(fresh_daemon):
    # conftest's config ends inside its "jobs:" section, so an indented key joins it
    d = fresh_daemon("  max_upload_bytes: 1MB\n")
    return d


def test_run_refuses_upload_over_limit_request_size(small_upload_daemon, tmp_path):
    """An upload far above jobs.max_upload_bytes is refused with the limit; nothing is created."""
    d = small_upload_daemon
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(3 << 20))
    assert_refused(d, ["job", "run", "--upload", str(big), "true"],
                   ["upload", "limit", "1048576", "jobs.max_upload_bytes"], 1)


def test_run_refuses_upload_over_limit_content_size(small_upload_daemon, tmp_path):
    """Uploads whose decoded size exceeds jobs.max_upload_bytes are refused with the limit."""
    d = small_upload_daemon
    tree = tmp_path / "data"
    tree.mkdir()
    (tree / "a.bin").write_bytes(os.urandom(700 << 10))
    (tree / "b.bin").write_bytes(os.urandom(700 << 10))
    assert_refused(d, ["job", "run", "--upload", str(tree), "true"],
                   ["upload", "1048576", "jobs.max_upload_bytes"], 1)
    # just under the limit is still accepted: the limit, not uploads as such, was refused
    (tree / "b.bin").unlink()
    p = d.rnx("job", "run", "-f", "--upload", str(tree), "true")
    assert p.returncode == 0, p.stderr


# ---- ids ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["status", "log", "stop", "cancel", "delete"])
def test_unknown_job_id_is_refused(daemon, command):
    """Every job command refuses an id that matches no job, naming the id."""
    missing = str(uuid.uuid4())
    assert_refused(daemon, ["job", command, missing], [missing, "no job"], 1)


def test_ambiguous_prefix_is_refused(daemon):
    """A prefix matching several jobs is refused, saying it matches several; nothing changes."""
    d = daemon
    shared = []
    for _ in range(60):
        # a letter: digits alone are a job's number (common/idref.h), never an id's prefix
        firsts = [j["id"][0] for j in d.api("GET", "/v1/jobs")[1]["jobs"] if j["id"][0] in "abcdef"]
        shared = [c for c in sorted(set(firsts)) if firsts.count(c) >= 2]
        if shared:
            break
        d.wait(d.submit("true"))
    assert shared
    for command in ("status", "delete"):
        assert_refused(d, ["job", command, shared[0]], [f"'{shared[0]}'", "matches", "jobs", "type more"], 1)


# ---- raw API -----------------------------------------------------------------------------------

def raw_post(d, body_bytes, path="/v1/jobs"):
    c = UnixHTTPConnection(d.sock)
    c.request("POST", path, body=body_bytes, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, json.loads(data)


@pytest.mark.parametrize("body", [b'{"command": "true",', b"not json at all", b"", b'["true"]'],
                         ids=["truncated", "garbage", "empty", "array"])
def test_api_refuses_malformed_json(daemon, body):
    """POST /v1/jobs with a body that is not a JSON object answers 400 invalid_argument."""
    before = snapshot(daemon)
    status, answer = raw_post(daemon, body)
    assert status == 400, answer
    assert answer["error"]["code"] == "invalid_argument"
    assert answer["error"]["message"]
    assert snapshot(daemon) == before


@pytest.mark.parametrize("body,field", [(b'{"command": "true", "priority": 99999999999999999999}', "priority"),
                                        (b'{"command": "true", "timeout_s": -1e999}', "timeout_s"),
                                        (b'{"command": "true", "args": ["x", 18446744073709551616]}', "args[1]")],
                         ids=["integer", "real", "in-an-array"])
def test_api_names_the_field_of_a_number_too_large(daemon, body, field):
    """A number JSON allows but 64 bits cannot hold is refused naming its field and the range
    taken (jansson's own words named no field); nothing is created."""
    before = snapshot(daemon)
    status, answer = raw_post(daemon, body)
    assert status == 400, answer
    assert answer["error"]["field"] == field, answer
    assert answer["error"]["message"].startswith(f"{field}: the number "), answer
    assert "-9223372036854775808 to 9223372036854775807" in answer["error"]["message"], answer
    assert snapshot(daemon) == before


def test_api_refuses_unknown_field(daemon):
    """An unknown field in a job request answers 400 naming the field; nothing is created."""
    before = snapshot(daemon)
    status, answer = daemon.api("POST", "/v1/jobs", {"command": "true", "bogus": 1})
    assert status == 400, answer
    assert answer["error"]["code"] == "invalid_argument"
    assert answer["error"]["field"] == "bogus"
    assert "bogus" in answer["error"]["message"]
    assert "command" in answer["error"]["message"]   # says what is accepted
    assert snapshot(daemon) == before


@pytest.mark.parametrize("path", ["../escape", "a/../../escape", "/etc/passwd", "ok/./x", ""],
                         ids=["dotdot", "nested-dotdot", "absolute", "dot", "empty"])
def test_api_refuses_upload_path_outside_work(daemon, path):
    """An upload path that is absolute or has '..' answers 400; no job and no file is created."""
    d = daemon
    before = snapshot(d)
    marker = "escape-" + uuid.uuid4().hex
    ups = [{"path": "ok", "type": "dir", "mode": 0o755},
           {"path": path.replace("escape", marker), "type": "file", "content_b64": "aGkK"}]
    status, answer = d.api("POST", "/v1/jobs", {"command": "true", "uploads": ups})
    assert status == 400, answer
    assert answer["error"]["code"] == "invalid_argument"
    assert answer["error"]["field"] == "uploads"
    assert snapshot(d) == before
    found = [os.path.join(r, n) for base in (d.dir,) for r, ds, fs in os.walk(base) for n in ds + fs if marker in n]
    assert found == []


# ---- daemon not running ------------------------------------------------------------------------

def test_run_with_daemon_down_is_explained(fresh_daemon):
    """With the daemon stopped, `rnx job run` exits 1 saying it cannot reach joblet; no job appears later."""
    d = fresh_daemon()
    d.wait(d.submit("true"))
    count, dirs = snapshot(d)
    d.stop()
    p = d.rnx("job", "run", "echo", "never")
    assert p.returncode == 1
    assert p.stdout == ""
    assert f"cannot reach joblet at {d.sock}" in p.stderr
    assert "is it running?" in p.stderr
    assert d.job_dirs() == dirs
    d.start()
    assert snapshot(d) == (count, dirs)


# ---- joblet's own configuration ----------------------------------------------------------------

def run_joblet(tmp_path, config_text):
    cfg = tmp_path / "joblet.yml"
    cfg.write_text(config_text)
    state = tmp_path / "state"
    sock = tmp_path / "joblet.sock"
    p = subprocess.run([os.path.join(BUILD, "joblet"), "--config", str(cfg), "--state-dir", str(state),
                        "--socket", str(sock)], capture_output=True, text=True, timeout=20,
                       env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    assert not state.exists(), "a refused configuration still created the state directory"
    assert not sock.exists(), "a refused configuration still created the socket"
    return p, str(cfg)


def test_joblet_refuses_unknown_config_key(tmp_path):
    """joblet exits 2 on an unknown configuration key, naming it and the known ones."""
    p, cfg = run_joblet(tmp_path, "jobs:\n  stop_grace_s: 2\n  frobble: 3\n")
    assert p.returncode == 2, p
    assert "jobs.frobble" in p.stderr
    assert cfg in p.stderr
    assert "unknown setting" in p.stderr
    assert "jobs.stop_grace_s" in p.stderr   # the known settings are listed


def test_joblet_refuses_bad_config_value(tmp_path):
    """joblet exits 2 on a configuration value out of range, naming the key and the range."""
    p, cfg = run_joblet(tmp_path, "jobs:\n  stop_grace_s: soon\n")
    assert p.returncode == 2, p
    assert "jobs.stop_grace_s" in p.stderr
    assert "'soon'" in p.stderr
    assert "whole number" in p.stderr


@pytest.mark.parametrize("text,said", [
    ("isolation:\n  default: docker\n", "isolation.default: 'docker' must be native or gvisor"),
    ("isolation:\n  platform: banana\n", "isolation.platform: 'banana' must be systrap, ptrace or kvm"),
    ("gpu:\n  xid_policy: \"79=explode\"\n", "gpu.xid_policy: '79=explode' must be XID=ACTION"),
    ("network:\n  bridge_cidr: banana\n", "network.bridge_cidr: 'banana' is not an IPv4 network"),
    ("network:\n  dns: \"10.0.0.2, notanip\"\n", "network.dns: 'notanip' must be a numeric IP address"),
    ("metrics:\n  listen: localhost:9464\n", "metrics.listen: 'localhost' is not a numeric IP address"),
    # a byte count is a size: it was called "a byte rate" in "bytes per second" (--max-iobps's words)
    ("jobs:\n  max_log_bytes: lots\n", "jobs.max_log_bytes: 'lots' is not a size; use bytes (1048576) or a unit: "
     "512K, 10MB, 1G"),
])
def test_joblet_refuses_values_read_after_its_setup_at_once(tmp_path, text, said):
    """docs/config.md: a wrong value stops the daemon naming the key and what is accepted; the
    values read only once joblet is set up (isolation, networks, the XID table, the metrics
    listener) are refused with the others: exit 2 (which the systemd unit does not restart,
    RestartPreventExitStatus=2), nothing made. They were refused with exit 1 after the state
    directory and database were made (a unit restarting every second), and a wrong
    gpu.xid_policy or network.dns was only logged, the daemon running on."""
    root = f"joblet-it-{uuid.uuid4().hex[:8]}"
    try:
        p, cfg = run_joblet(tmp_path, f"cgroup:\n  root: {root}\n" + text)
    finally:
        remove_cgroup_root(root)
    assert p.returncode == 2, p
    assert f"{cfg}: {said}" in p.stderr, p.stderr


def test_joblet_takes_the_documented_forms_of_sizes_and_empty_values(fresh_daemon):
    """docs/config.md: limits.max_request_bytes_per_user takes a size like every other byte
    count ("1KB"; it took only a plain number), and metrics.readers takes its documented
    default "" (it was refused: "must be a non-empty string"), as does a key whose default is
    none (server.admin_group)."""
    d = fresh_daemon("limits:\n  max_request_bytes_per_user: 1KB\nmetrics:\n  readers: \"\"\n"
                     "server:\n  admin_group: \"\"\n")
    st, body = d.api("POST", "/v1/jobs", {"command": "true", "env": {"PAD": "p" * 2048},
                                         "schedule_at": "2036-01-01T00:00:00Z"})
    assert st == 429 and "limits.max_request_bytes_per_user" in json.dumps(body), (st, body)


def test_joblet_reports_a_socket_directory_it_cannot_make(tmp_path):
    """The socket's directory cannot be made (a file is in its way): joblet names the
    directory and the reason, exits 1, and leaves no socket behind."""
    need_root()
    (tmp_path / "file").write_text("")
    sock = tmp_path / "file" / "sub" / "joblet.sock"
    cfg = tmp_path / "joblet.yml"
    root = f"joblet-it-{uuid.uuid4().hex[:8]}"
    cfg.write_text(f"cgroup:\n  root: {root}\n")
    try:
        p = subprocess.run([os.path.join(BUILD, "joblet"), "--config", str(cfg), "--state-dir",
                            str(tmp_path / "state"), "--socket", str(sock)], capture_output=True, text=True,
                           timeout=20, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    finally:
        remove_cgroup_root(root)   # made before the socket's directory was refused
    assert p.returncode == 1, p
    assert f"mkdir {tmp_path / 'file' / 'sub'}: Not a directory" in p.stderr
    assert not os.path.exists(sock)


def test_joblet_refuses_malformed_yaml(tmp_path):
    """joblet exits non-zero on a file that is not YAML, naming the file."""
    p, cfg = run_joblet(tmp_path, "jobs: [\n  stop_grace_s: {\n")
    assert p.returncode != 0, p
    assert cfg in p.stderr
    assert "YAML" in p.stderr


@pytest.mark.parametrize("text, says", [
    ("remote:\n  listen: [\"example.com:7443\"]\n", "remote.listen: 'example.com:7443' must be ADDRESS:PORT with an IP address"),
    ("remote:\n  listen: \"0.0.0.0:0\"\n", "must be ADDRESS:PORT"),
    ("remote:\n  users:\n    alice: ml\n    bob: ml\n", "alice and bob both map to the account ml"),
    ("remote:\n  users:\n    ../x: ml\n", "must map a certificate's name to a local account"),
    ("remote:\n  users: [a, b]\n", "remote.users"),
])
def test_joblet_refuses_bad_remote_settings(tmp_path, text, says):
    """The TLS listener's settings: each mistake named with what would be accepted (exit 2)."""
    p, _ = run_joblet(tmp_path, text)
    assert p.returncode == 2, p
    assert says in p.stderr, p.stderr


def test_joblet_refuses_to_start_without_the_listeners_certificates(tmp_path):
    """remote.listen without the files of remote.pki_dir: joblet does not start, and says which
    file and what makes it."""
    pki = tmp_path / "pki"
    pki.mkdir()
    p, _ = run_joblet(tmp_path, f"remote:\n  listen: [\"127.0.0.1:1\"]\n  pki_dir: {pki}\n")
    assert p.returncode != 0, p
    assert f"{pki}/ca.pem" in p.stderr and "joblet cert init" in p.stderr, p.stderr
