"""Job output: replay and live follow, stream separation, timestamps, partial lines, bytes that
are not UTF-8, and large outputs."""
import base64
import hashlib
import json
import os
import re
import subprocess
import threading
import time

from conftest import BUILD, TERMINAL

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def rnx_bytes(d, *args, timeout=120):
    """rnx with stdout and stderr captured as bytes."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    return subprocess.run([os.path.join(BUILD, "rnx"), *args], capture_output=True, timeout=timeout, env=env)


def rnx_popen(d, *args):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    return subprocess.Popen([os.path.join(BUILD, "rnx"), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def test_log_replays_history_then_follows_live(daemon):
    """`rnx job log` prints the lines already written, then follows new ones and exits when the job ends."""
    d = daemon
    jid = d.submit("sh", "-c", "for i in $(seq 1 10); do echo line $i; sleep 0.2; done")
    # let some history accumulate before following
    deadline = time.time() + 30
    while d.output(jid).count("\n") < 3:
        assert time.time() < deadline, "the job wrote nothing"
        time.sleep(0.05)
    p = rnx_popen(d, "job", "log", jid)
    guard = threading.Timer(60, p.kill)   # a follower that never returns fails instead of hanging
    guard.start()
    try:
        first = p.stdout.readline()
        assert first == "line 1\n"
        # history came first, and the job is still going: what follows is live
        assert d.job(jid)["status"] == "RUNNING"
        # read through the same buffered file: communicate() would skip what readline() buffered
        rest = p.stdout.read()
        err = p.stderr.read()
        p.wait(timeout=60)
    finally:
        guard.cancel()
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert first + rest == "".join(f"line {i}\n" for i in range(1, 11))
    assert err == ""
    assert d.job(jid)["status"] in TERMINAL


def test_log_follow_exits_with_job_end_not_before(daemon):
    """A follower started right after submission gets every line and returns only once the job has ended."""
    d = daemon
    jid = d.submit("sh", "-c", "for i in $(seq 1 10); do echo tick $i; sleep 0.2; done; echo bye >&2")
    p = rnx_popen(d, "job", "log", jid)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert out == "".join(f"tick {i}\n" for i in range(1, 11))
    assert err == "bye\n"
    job = d.job(jid)
    assert job["status"] == "COMPLETED"


def test_log_keeps_stdout_and_stderr_apart(daemon):
    """`rnx job log` sends the job's stdout to stdout and stderr to stderr; --stream picks one."""
    d = daemon
    jid = d.submit("sh", "-c", "echo o1; echo e1 >&2; echo o2; echo e2 >&2")
    d.wait(jid)
    p = d.rnx("job", "log", jid)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "o1\no2\n"
    assert p.stderr == "e1\ne2\n"
    p = d.rnx("job", "log", "--stream", "stderr", jid)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    assert p.stderr == "e1\ne2\n"
    p = d.rnx("job", "log", "--stream=stdout", jid)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "o1\no2\n"
    assert p.stderr == ""
    assert [r["stream"] for r in d.logs(jid, "stderr") if not r.get("end")] == ["stderr", "stderr"]


def test_log_json_records_are_timestamped(daemon):
    """Each --json log record has an RFC 3339 ts, in order, within the job's run."""
    d = daemon
    jid = d.submit("sh", "-c", "echo a; sleep 0.1; echo b >&2; sleep 0.1; echo c")
    job = d.wait(jid)
    p = d.rnx("job", "log", "--json", jid)
    assert p.returncode == 0, p.stderr
    recs = [json.loads(l) for l in p.stdout.splitlines()]
    out = [r for r in recs if not r.get("end")]
    assert [(r["stream"], r["data"]) for r in out] == [("stdout", "a\n"), ("stderr", "b\n"), ("stdout", "c\n")]
    for r in out:
        assert RFC3339.match(r["ts"]), r
    stamps = [r["ts"] for r in out]
    assert stamps == sorted(stamps) and len(set(stamps)) == 3
    # the same UTC format as the job's times, so they compare as text
    assert job["started_at"][:19] <= stamps[0][:19] and stamps[-1][:19] <= job["ended_at"][:19]
    assert recs[-1] == {"end": True, "status": "COMPLETED", "exit_code": 0, "signal": None, "end_reason": "exit"}


def test_partial_last_line_is_preserved(daemon):
    """A last line without a newline comes back exactly, without one added."""
    d = daemon
    jid = d.submit("sh", "-c", "printf 'full\\nno newline at end'; printf 'err tail' >&2")
    d.wait(jid)
    recs = [r for r in d.logs(jid, "stdout") if not r.get("end")]
    assert [r["data"] for r in recs] == ["full\n", "no newline at end"]
    assert d.output(jid, "stderr") == "err tail"
    p = rnx_bytes(d, "job", "log", jid)
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"full\nno newline at end"
    assert p.stderr == b"err tail"


NOT_UTF8 = b"ok\n\xff\xfe\x80 bin\n\xc3(\n" + b"end\x00zero\n" + b"tail\xe2\x82"


def test_non_utf8_bytes_come_back_exactly(daemon, tmp_path):
    """Bytes that are not UTF-8 come back exactly: data_b64 in the API, raw through rnx."""
    d = daemon
    src = tmp_path / "emit.bin"
    src.write_bytes(NOT_UTF8)
    p = rnx_bytes(d, "job", "run", "--follow", "--upload", str(src), "cat", "emit.bin")
    assert p.returncode == 0, p.stderr
    assert p.stdout == NOT_UTF8
    jid = [j for j in d.api("GET", "/v1/jobs")[1]["jobs"] if j["args"] == ["emit.bin"]][-1]["id"]
    recs = [r for r in d.logs(jid, "stdout") if not r.get("end")]
    got = b"".join(base64.b64decode(r["data_b64"]) if "data_b64" in r else r["data"].encode() for r in recs)
    assert got == NOT_UTF8
    assert recs[0] == {"ts": recs[0]["ts"], "stream": "stdout", "data": "ok\n"}
    assert "data_b64" in recs[1] and "data" not in recs[1]
    assert base64.b64decode(recs[1]["data_b64"]) == b"\xff\xfe\x80 bin\n"
    p = rnx_bytes(d, "job", "log", jid)
    assert p.returncode == 0, p.stderr
    assert p.stdout == NOT_UTF8


LARGE_PROG = r"""
import sys
w = sys.stdout.buffer
for i in range(%d):
    w.write(b"%%08d %%s\n" %% (i, b"x" * (i %% 200)))
"""


def test_large_output_arrives_complete_and_in_order(daemon):
    """About 5 MB of output arrives complete and in order through run --follow and job log."""
    d = daemon
    n = 50000
    expected = b"".join(b"%08d %s\n" % (i, b"x" * (i % 200)) for i in range(n))
    assert len(expected) > 5_000_000
    p = rnx_bytes(d, "job", "run", "--follow", "python3", "-c", LARGE_PROG % n)
    assert p.returncode == 0, p.stderr
    assert len(p.stdout) == len(expected)
    assert hashlib.sha256(p.stdout).hexdigest() == hashlib.sha256(expected).hexdigest()
    jid = [j for j in d.api("GET", "/v1/jobs")[1]["jobs"] if j["command"] == "python3"
           and j["args"][1] == LARGE_PROG % n][-1]["id"]
    p = rnx_bytes(d, "job", "log", "--no-follow", jid)
    assert p.returncode == 0, p.stderr
    assert p.stdout == expected


def test_a_follower_that_goes_away_leaves_no_bare_line_in_joblets_log(daemon):
    """A client that leaves a stream (rnx job log ended by its user) cuts it: libmicrohttpd's
    message for that ("Closing connection (application error generating response).") is joblet's
    log line at debug, with its time, not a bare line on joblet's stderr; joblet goes on. Every
    message of libmicrohttpd's goes there from its start: its logger is the first option given
    (given later, libmicrohttpd says so, and may use its own logger before it)."""
    d = daemon
    assert "is not the first option" not in d.log(), d.log()[-2000:]
    jid = d.submit("sh", "-c", "echo first; sleep 60")
    p = rnx_popen(d, "job", "log", jid)
    try:
        assert p.stdout.readline() == "first\n"
    finally:
        p.kill()
        p.wait()
    # the hang-up is seen, the stream cut: the next answer on the socket comes after it
    deadline = time.time() + 30
    while "http: Closing connection" not in d.log():
        assert time.time() < deadline, d.log()[-2000:]
        time.sleep(0.05)
    lines = [l for l in d.log().splitlines() if "Closing connection" in l]
    assert all(re.match(r"^\d{4}-\d\d-\d\dT\S+ debug +http: Closing connection", l) for l in lines), lines
    d.rnx("job", "stop", jid, check=True)
    assert d.wait(jid)["status"] in TERMINAL


def test_a_new_database_says_its_schema_once(daemon):
    """A fresh state directory's database is made at the schema joblet knows: one line saying so,
    not a line per migration step (those are for a database an older joblet wrote)."""
    log = daemon.log()
    assert len(re.findall(r"info +database made at schema version \d+\n", log)) == 1, log[:3000]
    assert "database migrated" not in log, log[:3000]
