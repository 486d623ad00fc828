"""What a user controls is printed with control characters escaped, in rnx's output and in the
daemon's log (issue 14: terminal injection, log forging): one log record per line, always."""
import hashlib
import json
import os
import time


def test_daemon_log_keeps_one_record_per_line(daemon):
    forged = "2026-01-01T00:00:00.000Z info  job 0 submitted by uid 0: FORGED"
    code, job = daemon.api("POST", "/v1/jobs", {"command": "/bin/true\n" + forged + "\x1b[2J"})
    assert code == 201, job
    daemon.wait(job["id"])
    log = daemon.log()
    assert not any(line.startswith(forged) for line in log.splitlines()), log[-2000:]
    assert "\x1b" not in log
    assert f"/bin/true\\n{forged}\\x1b[2J" in log


def test_job_status_escapes_what_the_user_controls(daemon):
    esc = "\x1b]0;owned\x07\x1b[2J"
    code, job = daemon.api("POST", "/v1/jobs", {"command": "true", "args": ["a\nStatus:         COMPLETED", esc],
                                                "env": {"NOTE": "x\x1b[31mred\r\n", "OK": "caf\u00e9"},
                                                "workdir": "/work"})
    assert code == 201, job
    daemon.wait(job["id"])
    out = daemon.rnx("job", "status", job["id"], check=True).stdout
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out, repr(out)
    assert [l for l in out.splitlines() if l.startswith("Status:")] == ["Status:         COMPLETED"], out
    assert "a\\nStatus:         COMPLETED" in out  # the forged line stays inside its field
    assert "NOTE=x\\x1b[31mred\\x0d\\n" in out
    assert "OK=café" in out                        # UTF-8 stays as it is
    # --json is data, not terminal text: exact
    j = json.loads(daemon.rnx("job", "status", "--json", job["id"], check=True).stdout)
    assert j["env"]["NOTE"] == "x\x1b[31mred\r\n"


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
                with open(p, "rb") as fh:
                    if secret.encode() in fh.read():
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
