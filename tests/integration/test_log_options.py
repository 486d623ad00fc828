"""`rnx job log`'s options and the three forms of GET /v1/jobs/{id}/logs (issue 16): --tail,
--since, --timestamps, --stdout/--stderr, --no-follow; frames, raw and NDJSON; the order of
interleaved lines as the shim recorded them; the files of jobs from before the indexed format.
Real daemon, real rnx."""
import json
import os
import re
import struct
import time

from conftest import UnixHTTPConnection, wait_for

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TS_RE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z) (.*)$")


def run_done(d, *args):
    p = d.rnx("job", "run", *args, check=True)
    jid = p.stdout.strip()
    assert UUID_RE.match(jid), p.stdout
    d.wait(jid)
    return jid


def get(d, path, accept=None):
    """The raw answer: (status, headers, body bytes)."""
    c = UnixHTTPConnection(d.sock, timeout=60)
    c.request("GET", path, headers={"Accept": accept} if accept else {})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, dict(r.getheaders()), body


def frames(body):
    """[(stream, ts_ns, payload)] of a framed answer (common/logframe.h)."""
    out, at = [], 0
    while at < len(body):
        stream, length, ts = body[at], struct.unpack(">I", body[at + 4:at + 8])[0], struct.unpack(">q", body[at + 8:at + 16])[0]
        assert body[at + 1:at + 4] == b"\0\0\0"
        out.append((stream, ts, body[at + 16:at + 16 + length]))
        at += 16 + length
    assert at == len(body)
    return out


NUMBERED = "i=1; while [ $i -le 10 ]; do echo out$i; echo err$i >&2; i=$((i+1)); sleep 0.02; done"


def test_tail_gives_the_last_lines_of_both_streams_in_order(daemon):
    d = daemon
    jid = run_done(d, "sh", "-c", NUMBERED)
    p = d.rnx("job", "log", "--tail", "3", jid, check=True)
    assert p.stdout == "out10\n" and p.stderr == "err9\nerr10\n"
    recs = [json.loads(l) for l in d.rnx("job", "log", "--json", "--tail=3", jid, check=True).stdout.splitlines()]
    assert [(r["stream"], r["data"]) for r in recs[:-1]] == [("stderr", "err9\n"), ("stdout", "out10\n"),
                                                           ("stderr", "err10\n")]
    assert recs[-1]["end"] is True
    assert d.rnx("job", "log", "--tail", "2", "--stdout", jid, check=True).stdout == "out9\nout10\n"
    p = d.rnx("job", "log", "--tail", "0", jid, check=True)
    assert p.stdout == "" and p.stderr == ""
    p = d.rnx("job", "log", "--tail", "1000", jid, check=True)
    assert p.stdout == "".join(f"out{i}\n" for i in range(1, 11))
    assert d.rnx("job", "log", "--tail", "all", "--stderr", jid, check=True).stdout == ""
    p = d.rnx("job", "log", "--tail", "-1", jid)
    assert p.returncode == 2 and p.stderr == "rnx: --tail: '-1' is not a number of lines; give 0 or more, or all\n"


def test_tail_counts_a_last_line_without_newline_and_long_pieces(daemon):
    d = daemon
    jid = run_done(d, "sh", "-c", "printf 'a\\nb\\nc'")
    assert d.rnx("job", "log", "--tail", "2", jid, check=True).stdout == "b\nc"
    # 50000 lines in a few large pieces: the last ones, exactly
    jid = run_done(d, "sh", "-c", "seq 1 50000")
    assert d.rnx("job", "log", "--tail", "3", jid, check=True).stdout == "49998\n49999\n50000\n"


def test_tail_then_follow(daemon):
    d = daemon
    p = d.rnx("job", "run", "sh", "-c", "echo one; echo two; sleep 3; echo three", check=True)
    jid = p.stdout.strip()
    wait_for(lambda: d.output(jid) == "one\ntwo\n", "the job's first two lines")
    assert d.rnx("job", "log", "--tail", "1", "-f", jid, check=True).stdout == "two\nthree\n"


def test_since_skips_what_came_before(daemon):
    d = daemon
    p = d.rnx("job", "run", "sh", "-c", "echo early; echo early-err >&2; sleep 3; echo late", check=True)
    jid = p.stdout.strip()
    wait_for(lambda: d.output(jid) == "early\n" and d.output(jid, "stderr") == "early-err\n", "the early lines")
    mid = time.time()   # after the early lines were stamped, before the late one
    d.wait(jid)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(mid)) + f".{int(mid % 1 * 1e6):06d}Z"
    out = d.rnx("job", "log", "--since", stamp, jid, check=True)
    assert out.stdout == "late\n" and out.stderr == ""
    assert d.rnx("job", "log", "--since", "1h", jid, check=True).stdout == "early\nlate\n"
    p = d.rnx("job", "log", "--since", "later", jid)
    assert p.returncode == 2 and "--since: 'later' is neither a duration" in p.stderr


def test_timestamps_prefix_every_line_of_each_stream(daemon):
    d = daemon
    jid = run_done(d, "sh", "-c", "echo a; echo b >&2; printf 'c\\nd'")
    p = d.rnx("job", "log", "--timestamps", jid, check=True)
    outs = p.stdout.split("\n")
    assert [TS_RE.match(l).group(2) for l in outs] == ["a", "c", "d"], p.stdout
    assert TS_RE.match(p.stderr.rstrip("\n")).group(2) == "b"
    stamps = [TS_RE.match(l).group(1) for l in outs]
    assert stamps == sorted(stamps)
    assert d.rnx("job", "log", "-t", "--stdout", jid, check=True).stdout.count("Z ") == 3
    p = d.rnx("job", "log", "-t", "--json", jid)
    assert p.returncode == 2 and p.stderr == ("rnx: job log: --timestamps is for the text output; --json records "
                                              "have their time ('ts')\n")


def test_stdout_and_stderr_flags_choose_streams(daemon):
    d = daemon
    jid = run_done(d, "sh", "-c", "echo o; echo e >&2")
    p = d.rnx("job", "log", "--stdout", jid, check=True)
    assert (p.stdout, p.stderr) == ("o\n", "")
    p = d.rnx("job", "log", "--stderr", jid, check=True)
    assert (p.stdout, p.stderr) == ("", "e\n")
    p = d.rnx("job", "log", "--stdout", "--stderr", jid, check=True)
    assert (p.stdout, p.stderr) == ("o\n", "e\n")
    p = d.rnx("job", "log", "--stream", "stderr", jid, check=True)
    assert (p.stdout, p.stderr) == ("", "e\n")
    # --stream given for each (as --stdout --stderr): both, not refused as a flag given twice
    p = d.rnx("job", "log", "--stream=stdout", "--stream=stderr", jid, check=True)
    assert (p.stdout, p.stderr) == ("o\n", "e\n")


def test_no_follow_returns_what_there_is(daemon):
    d = daemon
    p = d.rnx("job", "run", "sh", "-c", "echo now; sleep 30", check=True)
    jid = p.stdout.strip()
    deadline = time.time() + 20
    while "now" not in d.output(jid) and time.time() < deadline:
        time.sleep(0.05)
    t0 = time.time()
    assert d.rnx("job", "log", "--no-follow", jid, check=True).stdout == "now\n"
    assert time.time() - t0 < 25   # (it returns, not follows the job's 30 s)
    d.rnx("job", "kill", jid, check=True)


def test_interleaved_lines_keep_the_order_the_shim_recorded(daemon):
    """stdout and stderr alternate; every reader gives them in that order: frames, NDJSON and
    rnx --json."""
    d = daemon
    jid = run_done(d, "sh", "-c", "i=0; while [ $i -lt 40 ]; do echo o$i; sleep 0.01; echo e$i >&2; sleep 0.01; "
                                  "i=$((i+1)); done")
    want = [(s, f"{c}{i}\n") for i in range(40) for s, c in (("stdout", "o"), ("stderr", "e"))]
    recs = [json.loads(l) for l in d.rnx("job", "log", "--json", jid, check=True).stdout.splitlines()]
    assert [(r["stream"], r["data"]) for r in recs if not r.get("end")] == want
    status, headers, body = get(d, f"/v1/jobs/{jid}/logs", "application/vnd.joblet.log-frames")
    assert status == 200 and headers["Content-Type"] == "application/vnd.joblet.log-frames"
    fr = frames(body)
    assert [({1: "stdout", 2: "stderr"}[s], p.decode()) for s, _, p in fr[:-1]] == want
    times = [t for _, t, _ in fr[:-1]]
    assert times == sorted(times)
    assert fr[-1][0] == 3 and json.loads(fr[-1][2]) == {"end": True, "status": "COMPLETED", "exit_code": 0,
                                                         "signal": None, "end_reason": "exit"}


def test_raw_form_is_the_streams_bytes(daemon):
    d = daemon
    jid = run_done(d, "sh", "-c", "printf 'x\\000y\\377\\n'; echo err >&2")
    status, headers, body = get(d, f"/v1/jobs/{jid}/logs?format=raw&stream=stdout")
    assert status == 200 and headers["Content-Type"] == "application/octet-stream"
    assert body == b"x\0y\xff\n"
    status, _, body = get(d, f"/v1/jobs/{jid}/logs?stream=stderr", "application/octet-stream")
    assert status == 200 and body == b"err\n"
    status, _, body = get(d, f"/v1/jobs/{jid}/logs?format=raw")
    assert status == 400
    assert json.loads(body)["error"]["message"] == ("stream: raw output is one stream's bytes; add stream=stdout or "
                                                    "stream=stderr")
    status, _, body = get(d, f"/v1/jobs/{jid}/logs?format=xml")
    assert status == 400 and json.loads(body)["error"]["message"] == ("format: 'xml' is not accepted; use ndjson, "
                                                                      "frames or raw")
    status, _, body = get(d, f"/v1/jobs/{jid}/logs?tail=many")
    assert status == 400 and json.loads(body)["error"]["field"] == "tail"


def test_binary_output_comes_back_exactly_through_rnx(daemon, tmp_path):
    import subprocess
    from conftest import BUILD
    d = daemon
    jid = run_done(d, "sh", "-c", "i=0; while [ $i -lt 256 ]; do printf \"\\\\$(printf %o $i)\"; i=$((i+1)); done")
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "log", jid], capture_output=True, env=env, timeout=60)
    assert p.returncode == 0 and p.stdout == bytes(range(256))


def test_ndjson_strings_are_exact(daemon):
    """The hand-made NDJSON records parse to the line exactly: quotes, backslashes, control
    characters, DEL, UTF-8."""
    d = daemon
    jid = run_done(d, "sh", "-c", "printf 'q\"b\\\\\\\\t\\tc\\001\\037\\177 \\303\\251\\342\\202\\254/\\n'")
    recs = [json.loads(l) for l in d.rnx("job", "log", "--json", jid, check=True).stdout.splitlines()]
    assert recs[0]["data"] == 'q"b\\\\t\tc\x01\x1f\x7f é€/\n', recs[0]


def test_jobs_of_the_old_format_are_still_read(fresh_daemon):
    """A job whose output is in <stream>.log (an older joblet's shim) replays as before, in all
    forms; --tail on it says why it cannot."""
    d = fresh_daemon()
    jid = run_done(d, "sh", "-c", "echo first; echo warn >&2; echo second")
    d.stop()
    jobdir = os.path.join(d.state, "jobs", jid)
    ts = 1767225600123456789
    with open(os.path.join(jobdir, "stdout.log"), "w") as f:
        f.write(f"{ts} F first\n{ts + 2000} F second\n")
    with open(os.path.join(jobdir, "stderr.log"), "w") as f:
        f.write(f"{ts + 1000} F warn\n")
    for name in ("stdout.data", "stdout.idx", "stderr.data", "stderr.idx"):
        os.unlink(os.path.join(jobdir, name))
    d.start()
    p = d.rnx("job", "log", jid, check=True)
    assert (p.stdout, p.stderr) == ("first\nsecond\n", "warn\n")
    recs = [json.loads(l) for l in d.rnx("job", "log", "--json", jid, check=True).stdout.splitlines()]
    assert [(r["stream"], r["data"], r["ts"]) for r in recs[:-1]] == [
        ("stdout", "first\n", "2026-01-01T00:00:00.123456Z"), ("stderr", "warn\n", "2026-01-01T00:00:00.123457Z"),
        ("stdout", "second\n", "2026-01-01T00:00:00.123458Z")]
    p = d.rnx("job", "log", "-t", jid, check=True)
    assert p.stdout == "2026-01-01T00:00:00.123456Z first\n2026-01-01T00:00:00.123458Z second\n"
    p = d.rnx("job", "log", "--tail", "1", jid)
    assert p.returncode == 1
    assert p.stderr == (f"rnx: tail: job {jid}'s output is in the format of an older joblet, which cannot be read "
                        "from its end; leave out tail (rnx job log --tail)\n")


def test_log_capped_stream_is_said_in_raw_headers(fresh_daemon):
    d = fresh_daemon("jobs:\n  max_log_bytes: 64KB\n")
    jid = run_done(d, "sh", "-c", "seq 1 100000")
    status, headers, body = get(d, f"/v1/jobs/{jid}/logs?format=raw&stream=stdout")
    assert status == 200 and headers.get("X-Joblet-Log-Capped") == "stdout"
    assert body.endswith(b"\n") and len(body) < 64 * 1024
    p = d.rnx("job", "log", jid, check=True)
    assert p.stdout.endswith("joblet: stdout reached its cap of 65536 bytes (jobs.max_log_bytes); the rest of the "
                             "stream was discarded\n")
    assert p.stdout.startswith("1\n2\n3\n")


def test_tail_is_the_last_records_of_the_full_log(daemon, tmp_path):
    """Property: for any N, --tail N gives the last N line records of the whole log (a line is
    placed where it ends), on output of random lines, long and short, on both streams."""
    import random
    d = daemon
    rng = random.Random(16)
    script = tmp_path / "gen.py"
    lines = []
    for i in range(400):
        stream = rng.choice(("out", "err"))
        lines.append((stream, f"{stream}{i}:" + "y" * rng.choice((0, 5, 80, 3000, 70000))))
    script.write_text("import os, sys, time\n" + "".join(
        f"os.write({1 if s == 'out' else 2}, b'{l}\\n'){'; time.sleep(0.002)' if i % 40 == 0 else ''}\n"
        for i, (s, l) in enumerate(lines)))
    jid = run_done(d, "--upload", str(script), "python3", "gen.py")
    full = [json.loads(l) for l in d.rnx("job", "log", "--json", jid, check=True).stdout.splitlines()][:-1]
    assert "".join(r["data"] for r in full if r["stream"] == "stdout") == "".join(
        l + "\n" for s, l in lines if s == "out")
    # whole lines, each placed at the record that ends it (a long line comes in records of at
    # most 16 KiB; the part before its end may lie before other lines' ends)
    done, part = [], {"stdout": "", "stderr": ""}
    for i, r in enumerate(full):
        part[r["stream"]] += r["data"]
        if r["data"].endswith("\n"):
            done.append((i, r["stream"], part[r["stream"]]))
            part[r["stream"]] = ""
    assert len(done) == 400
    for n in (1, 2, 7, 50, 133, 399, 400, 1000):
        p = d.rnx("job", "log", "--tail", str(n), jid, check=True)
        want = done[-n:]
        assert p.stdout == "".join(l for _, s, l in want if s == "stdout"), n
        assert p.stderr == "".join(l for _, s, l in want if s == "stderr"), n


def test_follow_of_a_job_that_starts_later(daemon):
    """`rnx job run --follow` of a job that waits (here --schedule) streams it once it runs."""
    p = daemon.rnx("job", "run", "--schedule", "2s", "--follow", "sh", "-c", "echo hi; echo err >&2", timeout=60)
    assert p.returncode == 0, p.stderr
    assert (p.stdout, p.stderr) == ("hi\n", "err\n")
