"""What a user controls is printed with control characters escaped, in rnx's output and in the
daemon's log (issue 14: terminal injection, log forging): one log record per line, always."""
import hashlib
import json
import os
import time


def test_daemon_log_keeps_one_record_per_line(daemon):
    forged = "2026-01-01T00:00:00.000Z info  job 0 submitted by uid 0: FORGED"
    # under /volumes: a command there is not looked for at submission (issue 26), so this one is
    # taken (and fails to exec), and its submission is logged
    code, job = daemon.api("POST", "/v1/jobs", {"command": "/volumes/true\n" + forged + "\x1b[2J"})
    assert code == 201, job
    daemon.wait(job["id"])
    log = daemon.log()
    assert not any(line.startswith(forged) for line in log.splitlines()), log[-2000:]
    assert "\x1b" not in log
    assert f"/volumes/true\\n{forged}\\x1b[2J" in log


def test_job_status_escapes_what_the_user_controls(daemon):
    esc = "\x1b]0;owned\x07\x1b[2J"
    code, job = daemon.api("POST", "/v1/jobs", {"command": "true", "args": ["a\nStatus:         COMPLETED", esc],
                                                "env": {"NOTE": "x\x1b[31mred\r\n", "OK": "caf\u00e9"},
                                                "workdir": "/work"})
    assert code == 201, job
    daemon.wait(job["id"])
    out = daemon.rnx("job", "status", job["id"], check=True).stdout
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out, repr(out)
    assert [l for l in out.splitlines() if l.startswith("Status:")] == ["Status: COMPLETED"], out
    assert "a\\nStatus:         COMPLETED" in out  # the forged line stays inside its field
    assert "NOTE=x\\x1b[31mred\\x0d\\n" in out
    assert "OK=café" in out                        # UTF-8 stays as it is
    # --json is data, not terminal text: exact
    j = json.loads(daemon.rnx("job", "status", "--json", job["id"], check=True).stdout)
    assert j["env"]["NOTE"] == "x\x1b[31mred\r\n"


# Unicode's controls, as UTF-8: U+009B (CSI in xterm: "\u009b2J" clears the screen), U+0085
# (NEL), U+2028/2029 (line and paragraph separators), a bidi override and an isolate (U+202E,
# U+2066: "Trojan Source" reordering) and a mark (U+200F).
UNICODE_CONTROLS = {"\u009b": "\\u009b", "\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029",
                    "\u202e": "\\u202e", "\u2066": "\\u2066", "\u200f": "\\u200f"}


def test_unicode_controls_are_escaped_like_ascii_ones(daemon):
    """Issue 25: what reached terminals and the daemon's log raw is escaped wherever \\x1b is."""
    hostile = "".join(f"{c}x" for c in UNICODE_CONTROLS)
    code, job = daemon.api("POST", "/v1/jobs", {"command": "/volumes/true" + hostile, "name": "n" + hostile,
                                                "args": ["a" + hostile], "env": {"NOTE": hostile}})
    assert code == 201, job
    daemon.wait(job["id"])
    out = daemon.rnx("job", "status", job["id"], check=True).stdout
    out += daemon.rnx("job", "list", check=True).stdout
    log = daemon.log()
    for raw, shown in UNICODE_CONTROLS.items():
        assert raw not in out, (raw, out)
        assert raw not in log, (raw, log[-2000:])
        assert shown + "x" in out, (shown, out)
    assert "/volumes/true" + "".join(f"{v}x" for v in UNICODE_CONTROLS.values()) in log
    # --json is data: exact
    j = json.loads(daemon.rnx("job", "status", "--json", job["id"], check=True).stdout)
    assert j["env"]["NOTE"] == hostile and j["name"] == "n" + hostile


def test_small_request_defects(daemon):
    """Duplicate JSON keys are refused by /v1/jobs as by /v1/workflows (the second value would
    silently win); a start time more than ten years away is refused by the API as by rnx."""
    import http.client, socket as so
    before = daemon.job_count()
    c = http.client.HTTPConnection("localhost")
    c.sock = so.socket(so.AF_UNIX)
    c.sock.connect(daemon.sock)
    c.request("POST", "/v1/jobs", body='{"command": "true", "command": "false"}',
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    body = json.loads(r.read())
    assert r.status == 400 and "duplicate object key" in body["error"]["message"], body
    code, err = daemon.api("POST", "/v1/jobs", {"command": "true", "schedule_at": "9999-01-01T00:00:00Z"})
    assert code == 400 and err["error"]["message"] == \
        "schedule_at: '9999-01-01T00:00:00Z' is more than ten years away", err
    p = daemon.rnx("job", "run", "--schedule=9999-01-01T00:00:00Z", "true")
    assert p.returncode != 0 and "--schedule: '9999-01-01T00:00:00Z' is more than ten years away" in p.stderr
    assert daemon.job_count() == before


def test_workflow_yaml_never_returns_a_secret(fresh_daemon, tmp_path):
    d = fresh_daemon()
    wf = tmp_path / "s.yaml"
    wf.write_text("jobs:\n  a:\n    command: 'true'\n    secret_environment:\n      TOKEN: plain-token-1\n"
                  "      Q: \"quoted token 2\"\n      B: |\n        block token 3\n    environment:\n"
                  "      SHOWN: visible-value\n")
    p = d.rnx("workflow", "run", "--follow", str(wf))
    assert p.returncode == 0, p.stderr
    wid = d.api("GET", "/v1/workflows")[1]["workflows"][0]["id"]
    code, w = d.api("GET", f"/v1/workflows/{wid}")
    assert code == 200
    for secret in ("plain-token-1", "quoted token 2", "block token 3"):
        assert secret not in w["yaml"], w["yaml"]
    assert "TOKEN: \"***\"" in w["yaml"] and "SHOWN: visible-value" in w["yaml"]
    detail = d.rnx("workflow", "status", "--detail", wid, check=True).stdout
    assert "plain-token" not in detail and "block token" not in detail
    # a client that sends the file as it is: joblet keeps it without the values all the same
    body = {"name": "raw", "yaml": "jobs:\n  a:\n    secret_environment: {K: raw-secret-4}\n",
            "jobs": [{"name": "a", "request": {"command": "true", "secret_env": {"K": "raw-secret-4"}}}]}
    code, w = d.api("POST", "/v1/workflows", body)
    assert code == 201, w
    code, w = d.api("GET", f"/v1/workflows/{w['id']}")
    assert "raw-secret-4" not in w["yaml"] and "K: ***" in w["yaml"], w["yaml"]


def _grep_state(d, secret):
    hits = []
    for root, dirs, files in os.walk(d.state):
        for f in files:
            p = os.path.join(root, f)
            try:
                if os.path.isfile(p) and not os.path.islink(p) and file_holds(p, secret.encode()):
                    hits.append(p)
            except OSError:
                pass
    return hits


def test_no_secret_at_rest_in_the_state_directory(fresh_daemon):
    """secret_env is sealed in the database (a root-only key file of the state directory); a job
    that starts after a kill -9 and a restart still gets it; no byte of the state directory holds
    it while the jobs live, after they end, or after they are deleted."""
    d = fresh_daemon()
    secret = "s3cr3t-" + os.urandom(8).hex()
    # the job proves it has the value without the value in its command (which is not secret)
    check = 'printf %s "$TOKEN" | sha256sum | cut -c1-64'
    digest = hashlib.sha256(secret.encode()).hexdigest() + "\n"
    a = d.submit("sh", "-c", check, secret_env={"TOKEN": secret})
    later = d.api("POST", "/v1/jobs", {"command": "sh", "args": ["-c", check], "secret_env": {"TOKEN": secret},
                                       "schedule_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                    time.gmtime(time.time() + 4))})[1]["id"]
    assert d.wait(a)["status"] == "COMPLETED" and d.output(a) == digest
    assert _grep_state(d, secret) == []
    d.kill9()
    d.start()
    job = d.wait(later, timeout=30)
    assert job["status"] == "COMPLETED" and d.output(later) == digest, job
    assert _grep_state(d, secret) == []
    key = os.path.join(d.state, "joblet.db.key")
    st = os.stat(key)
    assert st.st_mode & 0o777 == 0o600 and st.st_uid == 0 and st.st_size == 32
    # nothing returned by the API or rnx either
    assert secret not in json.dumps(d.api("GET", "/v1/jobs")[1])
    assert secret not in d.rnx("job", "status", a, check=True).stdout
    for j in (a, later):
        assert d.api("DELETE", f"/v1/jobs/{j}")[0] == 200
    assert _grep_state(d, secret) == []


# ---- every rnx command: what a user or joblet controls never reaches the terminal raw ----------

import re

import busybox_runtime
from conftest import ROOT, file_holds

# ESC (a title and a screen clear), BEL, CR and a newline that would start a forged line
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\rFORGED\nline"
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\x0dFORGED\\nline"   # as rnx prints it
RAW = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")          # every control byte but the newline


def rnx(d, *args):
    """d.rnx, with stdout and stderr as they came: no newline translation, which would turn a
    raw CR into a line end."""
    import subprocess
    from conftest import BUILD
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JOBLET_SOCKET": d.sock,
           **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}}
    p = subprocess.run([os.path.join(BUILD, "rnx"), *args], capture_output=True, timeout=120, env=env)
    p.stdout = p.stdout.decode(errors="surrogateescape")
    p.stderr = p.stderr.decode(errors="surrogateescape")
    return p


def clean(p, *, stdout=True, stderr=True, what=""):
    """Asserts no control byte but line ends in p's output, and no line forged by a newline in a
    field; returns stdout + stderr."""
    for name, text, check in (("stdout", p.stdout, stdout), ("stderr", p.stderr, stderr)):
        if check:
            m = RAW.search(text)
            assert not m, f"{what}: raw control byte {m.group()!r} in {name}: {text!r}"
            assert not any(l.startswith("line") for l in text.splitlines()), f"{what}: forged line: {text!r}"
    return p.stdout + p.stderr


def test_job_commands_escape_names_commands_and_messages(daemon):
    code, job = daemon.api("POST", "/v1/jobs", {"command": "sh", "args": ["-c", 'printf "%s" "$1"; exit 3', "sh",
                                                                          HOSTILE],
                                                "name": HOSTILE, "env": {"NOTE": HOSTILE}})
    assert code == 201, job
    jid = job["id"]
    daemon.wait(jid)
    out = clean(rnx(daemon, "job", "list"), what="job list")
    assert "\\x1b]0;pwned" in out                                  # the name, escaped (cut to its column)
    out = clean(rnx(daemon, "job", "status", jid), what="job status")
    assert f"Name: {SHOWN}" in out and f"NOTE={SHOWN}" in out
    clean(rnx(daemon, "job", "metrics", "--count=1", jid), what="job metrics")
    # the job's own bytes are its output: rnx job log passes them as they are (documented)
    p = rnx(daemon, "job", "log", jid)
    assert p.returncode == 0 and p.stdout == HOSTILE, repr(p.stdout)
    # --json is data: exact
    assert json.loads(daemon.rnx("--json", "job", "status", jid, check=True).stdout)["name"] == HOSTILE
    # joblet's refusals quote what was sent: escaped on stderr (a name no job has: the job's
    # own name would find it)
    missing = HOSTILE + "-none"
    for args in (["job", "status", missing], ["job", "stop", missing], ["job", "log", missing],
                 ["job", "delete", missing], ["job", "metrics", "--count=1", missing],
                 ["job", "list", "--status=" + HOSTILE]):
        p = rnx(daemon, *args)
        assert p.returncode != 0, args
        assert SHOWN[:20] in clean(p, what=" ".join(args[:2])), (args, p.stderr)
    p = rnx(daemon, "job", "run", "--network=\x1b[2J\x07\r", "true")
    assert p.returncode == 2 and "--network: '" in clean(p, what="job run"), p.stderr
    # a job that cannot start: the note rnx run --follow ends with quotes the command
    p = rnx(daemon, "job", "run", "--follow", "/no/such/" + HOSTILE)
    assert p.returncode != 0
    assert "/no/such/\\x1b" in clean(p, what="job run --follow"), p.stderr
    p = clean(rnx(daemon, "job", "delete", jid), what="job delete")
    assert p.startswith("deleted ")


def test_workflow_commands_escape_names_descriptions_and_the_file(daemon, tmp_path):
    body = {"name": HOSTILE, "description": HOSTILE, "source": HOSTILE,
            "yaml": "jobs:\n  a:\n    command: 'true'   # " + HOSTILE + "\n",
            "jobs": [{"name": "a", "request": {"command": "true"}},
                     {"name": "b", "requires": [{"job": "a", "status": "FAILED"}], "request": {"command": "true"}}]}
    code, wf = daemon.api("POST", "/v1/workflows", body)
    assert code == 201, wf
    wid = wf["id"]
    deadline = time.time() + 30
    while daemon.api("GET", f"/v1/workflows/{wid}")[1]["state"] not in ("COMPLETED", "FAILED", "CANCELED"):
        assert time.time() < deadline
        time.sleep(0.1)
    assert "\\x1b]0;pwned" in clean(rnx(daemon, "workflow", "list"), what="workflow list")
    p = rnx(daemon, "workflow", "status", wid)
    out = clean(p, what="workflow status")
    assert f"Name:         {SHOWN}" in out and f"Description:  {SHOWN}" in out and f"Source:       {SHOWN}" in out
    # --detail shows the stored file line by line, each line escaped
    p = rnx(daemon, "workflow", "status", "--detail", wid)
    assert p.returncode == 0
    assert not RAW.search(p.stdout), repr(p.stdout)
    assert "# \\x1b]0;pwned\\x07\\x1b[2J\\x0dFORGED\nline\n" in p.stdout
    clean(rnx(daemon, "workflow", "cancel", wid), what="workflow cancel")
    # rnx's own reading of a file quotes it: escaped too
    f = tmp_path / "bad.yaml"
    f.write_text('jobs:\n  "a\\e[2Jb":\n    command: "true"\n')
    for args in (["workflow", "run", str(f)], ["workflow", "validate", str(f)], ["workflow", "status", HOSTILE + "-none"]):
        p = rnx(daemon, *args)
        assert p.returncode != 0
        clean(p, what=" ".join(args[:2]))
    f.write_text("jobs:\n  a:\n    command: \"true\"\n    resources:\n      max_memory: \"\\e[2J\\a\\r\"\n")
    p = rnx(daemon, "workflow", "validate", str(f))
    assert p.returncode != 0 and "max_memory: '" in clean(p, what="workflow validate"), p.stderr


def test_volume_commands_escape(daemon):
    for args in (["volume", "create", HOSTILE, "--size=16MB", "--type=memory"], ["volume", "remove", HOSTILE],
                 ["volume", "create", "v", "--size=" + HOSTILE]):
        p = rnx(daemon, *args)
        assert p.returncode != 0, args
        assert "\\x1b" in clean(p, what=" ".join(args[:2])), p.stderr
    p = rnx(daemon, "volume", "create", "hygiene", "--size=16MB", "--type=memory")
    assert p.returncode == 0, p.stderr
    try:
        clean(p, what="volume create")
        clean(rnx(daemon, "volume", "list"), what="volume list")
    finally:
        clean(rnx(daemon, "volume", "remove", "hygiene"), what="volume remove")


def test_upload_messages_escape_local_names(daemon, tmp_path):
    d = tmp_path / "up"
    d.mkdir()
    odd = d / ("f" + HOSTILE.replace("/", "_"))
    odd.write_text("x")
    os.chmod(odd, 0o4755)                          # a setuid bit: rnx notes it is not sent, naming the file
    p = rnx(daemon, "job", "run", "--upload=" + str(d), "true")
    assert p.returncode == 0, p.stderr
    assert "setuid" in clean(p, what="upload note")
    fifo = tmp_path / ("p" + HOSTILE.replace("/", "_"))
    os.mkfifo(fifo)
    p = rnx(daemon, "job", "run", "--upload=" + str(fifo), "true")
    assert p.returncode != 0 and "\\x1b]0;pwned" in clean(p, what="upload refusal"), p.stderr


def test_runtime_commands_escape(fresh_daemon, tmp_path):
    d = fresh_daemon(start=False)
    rdir = os.path.join(d.state, "runtimes")
    busybox_runtime.make(rdir, name="hostile", env={"NOTE": "\\e[2J\\a\\r\\n"})
    with open(os.path.join(rdir, "hostile", "manifest.yml")) as f:
        manifest = f.read()
    with open(os.path.join(rdir, "hostile", "manifest.yml"), "w") as f:
        f.write(manifest.replace("description: busybox for tests", 'description: "a\\e]0;pwned\\a\\e[2J\\rFORGED\\nline"'))
    d.start()
    for args in (["runtime", "list"], ["runtime", "info", "hostile"]):
        p = rnx(d, *args)
        assert p.returncode == 0, (args, p.stderr)
        clean(p, what=" ".join(args))
    out = rnx(d, "runtime", "info", "hostile").stdout
    assert "a\\x1b]0;pwned\\x07\\x1b[2J\\x0dFORGED\\nline" in out and "NOTE=\\x1b[2J\\x07\\x0d\\n" in out
    recipe = tmp_path / "r.yml"
    recipe.write_text('name: "x\\e[2J"\nversion: "1"\nsuite: bookworm\npackages: [busybox]\n')
    for args in (["runtime", "info", HOSTILE], ["runtime", "remove", HOSTILE], ["runtime", "build", str(recipe)],
                 ["runtime", "log", HOSTILE]):
        p = rnx(d, *args)
        assert p.returncode != 0, args
        clean(p, what=" ".join(args[:2]))


def test_gpu_monitor_and_audit_commands_escape(fresh_daemon, tmp_path):
    with open(os.path.join(ROOT, "tests", "fixtures", "a100-pcie-4", "machine.json")) as f:
        machine = json.load(f)
    for g in machine["gpus"]:
        g["name"] = "A100" + HOSTILE
        g["vbios"] = HOSTILE
    fixture = tmp_path / "machine.json"
    fixture.write_text(json.dumps(machine))
    d = fresh_daemon(f"gpu:\n  fixture: {fixture}\n")
    jid = d.submit("true", gpu_count=1, name=HOSTILE)
    d.wait(jid)
    for args in (["gpu", "list"], ["gpu", "show", "0"], ["gpu", "topo"], ["monitor", "status"],
                 ["gpu", "drain", "1"], ["gpu", "online", "1"], ["audit"], ["job", "status", jid]):
        p = rnx(d, *args)
        assert p.returncode == 0, (args, p.stderr)
        clean(p, what=" ".join(args))
    assert "A100\\x1b]0;pwned" in rnx(d, "gpu", "show", "0").stdout
    for args in (["gpu", "show", HOSTILE], ["gpu", "drain", "99" + HOSTILE], ["audit", "--user=" + HOSTILE]):
        p = rnx(d, *args)
        assert p.returncode != 0, args
        clean(p, what=" ".join(args[:2]))
    p = rnx(d, "monitor", "watch", "--count=1")
    assert p.returncode == 0, p.stderr
    clean(p, what="monitor watch")
