"""Jobs that wait for other jobs (`rnx job run --after=ID[:STATE]`, Slurm's --dependency) and
`rnx job wait`, against the real daemon: a dependent stays PENDING while its dependency runs and
starts after it ended as needed, or is CANCELED (end reason dependency) when it cannot any more,
in cascade; references by name and prefix resolved at submission, another user's job refused
exactly as a missing one; dependencies outlive kill -9 of joblet; rnx job wait's exit status.
(The rule itself: tests/unit/test_depend_rule.c; the flag's text: tests/unit/test_jobreq.c.)"""
import http.server
import json
import os
import re
import socket
import socketserver
import subprocess
import threading
import time
import uuid

import pytest

from conftest import BUILD, api_seconds as ms, rnx_as, wait_for

# A job that runs until the test drops a file in its /work: the test decides when it ends, and
# how (/work/fail first: it exits 1).
GATE = "while [ ! -e /work/go ]; do sleep 0.02; done; test ! -e /work/fail"
UID = 4321


def run(d, *args):
    """rnx job run ...: the new job's id."""
    p = d.rnx("job", "run", *args, check=True)
    return p.stdout.strip()


def gated(d, name=None):
    return run(d, *([f"--name={name}"] if name else []), "sh", "-c", GATE)


def release(d, jid, fail=False):
    work = d.work(jid)
    if fail:
        open(os.path.join(work, "fail"), "w").close()
    open(os.path.join(work, "go"), "w").close()


def wait_running(d, jid):
    return d.wait_status(jid, "RUNNING")


def test_after_ok_waits_pending_then_starts_after_the_end(daemon):
    """--after=ID:ok: PENDING while ID runs (status says on what), started only after ID ended
    COMPLETED; its history says what it waited for and when it was released."""
    a = gated(daemon)
    wait_running(daemon, a)
    b = run(daemon, f"--after={a}:ok", "sh", "-c", "echo after")
    time.sleep(0.3)
    job = daemon.job(b)
    assert job["status"] == "PENDING", job
    assert job["after"] == [{"job": a, "state": "ok", "job_state": "RUNNING"}], job["after"]
    assert job["wait_reason"] == f"waiting for job {a[:8]} to end COMPLETED (it is RUNNING)"
    text = daemon.rnx("job", "status", b, check=True).stdout
    assert "After:" in text and f"{a[:8]} ok (RUNNING)" in text, text
    release(daemon, a)
    done_a = daemon.wait(a)
    done_b = daemon.wait(b)
    assert done_a["status"] == "COMPLETED" and done_b["status"] == "COMPLETED", (done_a, done_b)
    assert ms(done_b["started_at"]) >= ms(done_a["ended_at"]), (done_a["ended_at"], done_b["started_at"])
    assert daemon.output(b) == "after\n"
    ev = daemon.events(b)
    assert ("pending", f"waiting for job {a[:8]} to end COMPLETED") in ev, ev
    assert [x for x in ev if x[0] == "released" and f"{a[:8]} COMPLETED" in x[1]], ev
    # the stored request keeps the full id: the flags it is shown as say so
    assert f"--after={a}:ok" in daemon.rnx("job", "status", "--detail", b, check=True).stdout


def test_after_ok_of_a_failed_job_is_canceled_with_the_reason(daemon):
    a = gated(daemon)
    b = run(daemon, f"--after={a}:ok", "true")
    release(daemon, a, fail=True)
    assert daemon.wait(a)["status"] == "FAILED"
    job = daemon.wait(b)
    assert job["status"] == "CANCELED" and job["end_reason"] == "dependency", job
    assert job["error"] == f"needed job {a[:8]} to end COMPLETED; it ended FAILED", job
    assert job["started_at"] is None
    # rnx job status says why, not the bare reason (docs/batch.md: its error names which and how)
    text = daemon.rnx("job", "status", b, check=True).stdout
    assert re.search(rf"^End reason: dependency: needed job {a[:8]} to end COMPLETED; it ended FAILED$", text,
                     re.M), text


def test_notok_any_and_started(daemon):
    """notok runs after a failure and is canceled after a success; any runs after either;
    started runs while the job it follows still runs."""
    bad, good = gated(daemon), gated(daemon)
    wait_running(daemon, good)
    started = run(daemon, f"--after={good}:started", "true")
    assert daemon.wait(started)["status"] == "COMPLETED"
    assert daemon.job(good)["status"] == "RUNNING"
    notok_bad = run(daemon, f"--after={bad}:notok", "true")
    notok_good = run(daemon, f"--after={good}:notok", "true")
    any_bad = run(daemon, f"--after={bad}", "true")   # the default: any
    assert daemon.job(any_bad)["after"][0]["state"] == "any"
    release(daemon, bad, fail=True)
    release(daemon, good)
    assert daemon.wait(notok_bad)["status"] == "COMPLETED"
    assert daemon.wait(any_bad)["status"] == "COMPLETED"
    job = daemon.wait(notok_good)
    assert job["status"] == "CANCELED", job
    assert job["error"] == f"needed job {good[:8]} to end FAILED, STOPPED or CANCELED; it ended COMPLETED"


def test_several_dependencies_by_name_and_prefix_and_slurm_spelling(daemon):
    """A comma list, a repeated flag and Slurm's --dependency=afterok:A:B all add up; a name and
    an id prefix are resolved at submission to the full ids."""
    name = "dep-" + uuid.uuid4().hex[:6]
    a = gated(daemon, name)
    b = gated(daemon)
    c = gated(daemon)
    w1 = run(daemon, f"--after={name}:ok,{b[:10]}", f"--after={c}:any", "true")
    w2 = run(daemon, f"--dependency=afterok:{a}:{b[:12]}", "true")
    assert [(x["job"], x["state"]) for x in daemon.job(w1)["after"]] == [(a, "ok"), (b, "any"), (c, "any")]
    assert [x["job"] for x in daemon.job(w2)["after"]] == [a, b]
    release(daemon, a)
    release(daemon, b)
    daemon.wait(a), daemon.wait(b)
    time.sleep(0.2)
    assert daemon.job(w1)["status"] == "PENDING"      # c still runs
    assert daemon.wait(w2)["status"] == "COMPLETED"
    release(daemon, c, fail=True)
    assert daemon.wait(w1)["status"] == "COMPLETED"   # any: c's failure is an end


def test_already_ended_dependencies_are_decided_at_submission(daemon):
    a = run(daemon, "true")
    daemon.wait(a)
    ok = run(daemon, f"--after={a}:ok", "true")
    assert daemon.wait(ok)["status"] == "COMPLETED"
    code, job = daemon.api("POST", "/v1/jobs", {"command": "true", "after": [{"job": a, "state": "notok"}]})
    assert code == 201, job
    assert job["status"] == "CANCELED" and job["end_reason"] == "dependency", job


def test_chain_is_canceled_in_cascade(daemon):
    a = gated(daemon)
    b = run(daemon, f"--after={a}:ok", "true")
    c = run(daemon, f"--after={b}:ok", "true")
    d2 = run(daemon, f"--after={c}:notok", "echo", "cleanup")
    release(daemon, a, fail=True)
    assert daemon.wait(b)["status"] == "CANCELED"
    job = daemon.wait(c)
    assert job["status"] == "CANCELED" and job["error"] == f"needed job {b[:8]} to end COMPLETED; it ended CANCELED"
    assert daemon.wait(d2)["status"] == "COMPLETED"   # afternotok: the cleanup of a failed chain


def test_bad_references_are_refused_naming_after(daemon):
    p = daemon.rnx("job", "run", "--after=no-such-job:ok", "true")
    assert p.returncode == 1
    assert "--after: no job 'no-such-job' (by id, number, unique id prefix or name) among the jobs you may see" in p.stderr
    code, err = daemon.api("POST", "/v1/jobs", {"command": "true", "after": [{"job": "no-such-job"}]})
    assert code == 400 and err["error"]["field"] == "after", err
    p = daemon.rnx("job", "run", "--after=x:done", "true")
    assert p.returncode == 2 and "--after: 'x:done' is not ID[:STATE]" in p.stderr, p.stderr
    code, err = daemon.api("POST", "/v1/jobs", {"command": "true", "after": [{"job": "a"}] * 65})
    assert code == 400 and "at most 64" in err["error"]["message"], err
    p = daemon.rnx("job", "run", "--after=a?b,c", "true")   # (a '?' list alone: test_after_any.py)
    assert p.returncode == 2 and "'?' (any one of them) cannot be mixed" in p.stderr, p.stderr
    # an array may wait (test_arrays.py); its bad references are refused alike
    code, err = daemon.api("POST", "/v1/jobs", {"command": "true", "array": "0-3", "after": [{"job": "no-such-job"}]})
    assert code == 400 and err["error"]["field"] == "after", err
    # --dependency's refusals name --dependency, the flag typed (they named --after)
    p = daemon.rnx("job", "run", "--dependency=", "true")
    assert p.returncode == 2 and p.stderr.startswith("rnx: --dependency: '' is not ID[:STATE]"), p.stderr
    # Slurm's afterburstbuffer is refused as not supported, not as text that is not Slurm's
    p = daemon.rnx("job", "run", "--dependency=afterburstbuffer:12", "true")
    assert p.returncode == 2 and "Slurm's afterburstbuffer is not supported" in p.stderr, p.stderr
    assert "afterany:ID waits for the job to end" in p.stderr, p.stderr
    p = daemon.rnx("job", "run", "--after=afterburstbuffer:ok", "true")   # NAME:STATE: the job named so
    assert p.returncode == 1 and "no job 'afterburstbuffer'" in p.stderr, p.stderr
    # Slurm's type with its ids left out is a job's name (a job may be named afterok), said so
    p = daemon.rnx("job", "run", "--dependency=afterok", "true")
    assert p.returncode == 1 and "no job 'afterok'" in p.stderr, p.stderr
    assert "Slurm's afterok needs the jobs' ids: afterok:ID[:ID...]" in p.stderr, p.stderr


def as_user(d, *args):
    return rnx_as(d, UID, *args)


def test_another_users_job_is_refused_exactly_as_a_missing_one(daemon):
    mine = run(daemon, "--name=root-secret-dep", "true")
    missing = str(uuid.uuid4())
    for ref in (mine, mine[:8], "root-secret-dep"):
        p = as_user(daemon, "job", "run", f"--after={ref}:ok", "true")
        q = as_user(daemon, "job", "run", f"--after={missing}:ok", "true")
        assert p.returncode == q.returncode == 1, (p.stderr, q.stderr)
        assert p.stderr.replace(ref, "REF") == q.stderr.replace(missing, "REF"), (p.stderr, q.stderr)
        assert "another user" not in p.stderr


def test_a_workflows_job_may_not_carry_after(daemon):
    code, err = daemon.api("POST", "/v1/workflows", {"name": "w", "jobs": [
        {"name": "a", "request": {"command": "true", "after": [{"job": "x"}]}}]})
    assert code == 400 and err["error"]["field"] == "jobs[0].request.after", err


def test_wait_exit_status(daemon):
    """rnx job wait: one job's exit code; the highest of several; 1 for a canceled job; an
    ended job at once; each end printed; -q prints nothing; --timeout exits 124."""
    ok = run(daemon, "true")
    seven = run(daemon, "sh", "-c", "exit 7")
    three = run(daemon, "sh", "-c", "sleep 0.5; exit 3")
    p = daemon.rnx("job", "wait", ok)
    assert p.returncode == 0 and re.fullmatch(rf"{ok[:8]} COMPLETED exit 0\n", p.stdout), p.stdout
    p = daemon.rnx("job", "wait", seven)
    assert p.returncode == 7 and f"{seven[:8]} FAILED exit 7" in p.stdout, (p.returncode, p.stdout)
    p = daemon.rnx("job", "wait", "-q", ok, three, seven)
    assert p.returncode == 7 and p.stdout == "", (p.returncode, p.stdout)
    # a canceled job (its dependency failed) has no exit code: 1
    gate = gated(daemon)
    dep = run(daemon, f"--after={gate}:ok", "true")
    p = daemon.rnx("job", "wait", "--timeout=1", dep)
    assert p.returncode == 124 and "--timeout" in p.stderr, (p.returncode, p.stderr)
    # Slurm's MIN:SEC as --max-runtime takes it (one parser for both), and its malformed one named
    p = daemon.rnx("job", "wait", "--timeout=0:01", dep)
    assert p.returncode == 124 and "--timeout passed" in p.stderr, (p.returncode, p.stderr)
    p = daemon.rnx("job", "wait", "--timeout=1:xx", dep)
    assert p.returncode == 2 and "--timeout: '1:xx' is not a duration" in p.stderr, (p.returncode, p.stderr)
    assert daemon.job(dep)["status"] == "PENDING"
    w = subprocess.Popen([os.path.join(BUILD, "rnx"), "job", "wait", dep, gate], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": daemon.sock,
                              **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}})
    time.sleep(0.5)
    assert w.poll() is None   # still waiting
    release(daemon, gate, fail=True)
    out, err = w.communicate(timeout=60)
    assert w.returncode == 1, (w.returncode, out, err)
    lines = out.splitlines()
    assert sorted(lines) == sorted([f"{gate[:8]} FAILED exit 1", f"{dep[:8]} CANCELED (dependency)"]), out
    p = daemon.rnx("job", "wait", "no-such-job")
    assert p.returncode == 125 and "no-such-job" in p.stderr


class StandIn(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """A stand-in for joblet on a unix socket: GET /v1/jobs/ID answers the job (RUNNING, then
    COMPLETED exit 5 from the third stream on), GET /v1/events says hello and holds the stream;
    one look at the job gets no answer at all (joblet killed right then): the first of all
    (drop "start"), or the first after a hello (drop "hello")."""
    daemon_threads = True

    def __init__(self, path, jid, drop):
        self.jid, self.streams, self.dropped, self.drop = jid, 0, False, drop
        super().__init__(path, Handler)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def address_string(self):
        return "stand-in"

    def log_message(self, *args):
        pass

    def do_GET(self):
        srv = self.server
        if self.path == "/v1/events":
            srv.streams += 1
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b'event: hello\ndata: {"last_id": 0}\n\n')
            self.wfile.flush()
            time.sleep(1.5 if srv.streams < 3 else 30)
            return
        if (srv.drop == "start" or srv.streams >= 1) and not srv.dropped:
            srv.dropped = True
            self.connection.shutdown(socket.SHUT_RDWR)   # the question, and no answer
            return
        done = srv.streams >= 3
        body = json.dumps({"id": srv.jid, "status": "COMPLETED" if done else "RUNNING",
                           "exit_code": 5 if done else None}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_wait_goes_on_while_joblet_is_down_after_it_took_the_question(tmp_path):
    """joblet killed while it resolves rnx job wait's ID, and still down when rnx asks again: its
    socket refuses (ECONNREFUSED) for a while, then a new joblet answers. rnx waits on through it
    (the last full run: 125, "cannot reach joblet ... Connection refused", under ASan)."""
    jid = str(uuid.uuid4())
    sock = str(tmp_path / "joblet.sock")
    srv = StandIn(sock, jid, "start")
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    again = None
    try:
        p = subprocess.Popen([os.path.join(BUILD, "rnx"), "job", "wait", jid], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": sock,
                                  **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}})
        wait_for(lambda: srv.dropped, "the question to go unanswered")
        srv.shutdown()
        srv.server_close()   # down: the socket file stays, and refuses
        time.sleep(2.5)
        assert p.poll() is None, p.communicate()
        os.unlink(sock)      # joblet comes back: its socket made again
        again = StandIn(sock, jid, "start")
        again.dropped = True
        threading.Thread(target=again.serve_forever, daemon=True).start()
        out, err = p.communicate(timeout=60)
    finally:
        if again:
            again.shutdown()
            again.server_close()
    assert (p.returncode, out) == (5, f"{jid[:8]} COMPLETED exit 5\n"), (p.returncode, out, err)


@pytest.mark.parametrize("drop", ["start", "hello"])
def test_wait_goes_on_when_joblet_goes_away_as_it_looks(tmp_path, drop):
    """joblet killed just as rnx job wait looks at a job, at its start or after a stream's hello
    (the GET gets no answer): rnx waits on, and exits with the job's code once it ended; not 125."""
    jid = str(uuid.uuid4())
    sock = str(tmp_path / "joblet.sock")
    srv = StandIn(sock, jid, drop)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "wait", jid], capture_output=True, text=True,
                           timeout=60, env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": sock,
                                            **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}})
    finally:
        srv.shutdown()
        srv.server_close()
    assert srv.dropped
    assert (p.returncode, p.stdout) == (5, f"{jid[:8]} COMPLETED exit 5\n"), (p.returncode, p.stdout, p.stderr)


def event_streams(d):
    """The event streams joblet has open (its /metrics): an rnx job wait holds one."""
    return int(d.metric("joblet_console_streams"))


@pytest.mark.parametrize("when", ["down", "after"])
def test_dependencies_survive_kill9(fresh_daemon, when):
    """joblet killed (-9) while a dependency runs; it ends while joblet is down, or after the
    restart: the dependents are still PENDING in their rows and are decided right."""
    d = fresh_daemon()
    a = gated(d)
    wait_running(d, a)
    ok = run(d, f"--after={a}:ok", "echo", "ran")
    notok = run(d, f"--after={a}:notok", "true")
    chained = run(d, f"--after={ok}:ok", "true")
    # an rnx job wait started before the kill waits through the restart: killed once rnx reached
    # joblet (its events stream open, as joblet counts them), not at a fixed time (under ASan, rnx
    # had not started asking 0.3 s in; a joblet never reached is 125). (Not by joblet's sockets:
    # one of the rnx runs' above, still closing, was counted once and gone the next time.)
    assert event_streams(d) == 0
    waiter = subprocess.Popen([os.path.join(BUILD, "rnx"), "job", "wait", ok, notok], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock,
                                   **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}})
    wait_for(lambda: event_streams(d) > 0 or waiter.poll() is not None, "rnx job wait to reach joblet")
    assert waiter.poll() is None, waiter.communicate()
    time.sleep(0.3)
    d.kill9()
    if when == "down":
        release(d, a)
        time.sleep(0.5)
    d.start()
    if when == "after":
        for jid in (ok, notok, chained):
            assert d.job(jid)["status"] == "PENDING", d.job(jid)
        assert d.job(ok)["wait_reason"] == f"waiting for job {a[:8]} to end COMPLETED (it is RUNNING)"
        release(d, a)
    assert d.wait(a)["status"] == "COMPLETED"
    assert d.wait(ok)["status"] == "COMPLETED" and d.output(ok) == "ran\n"
    job = d.wait(notok)
    assert job["status"] == "CANCELED" and job["end_reason"] == "dependency", job
    assert d.wait(chained)["status"] == "COMPLETED"
    assert ms(d.job(ok)["started_at"]) >= ms(d.job(a)["ended_at"])
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 1, (waiter.returncode, out, err)    # notok was canceled: 1
    assert sorted(out.splitlines()) == sorted([f"{ok[:8]} COMPLETED exit 0", f"{notok[:8]} CANCELED (dependency)"])


def test_cancel_a_waiting_job_and_stop_a_dependency(daemon):
    """A PENDING dependent can be canceled like a queued job (nothing waits on it any more); a
    dependency that is stopped ended STOPPED: notok runs, ok is canceled."""
    a = gated(daemon)
    wait_running(daemon, a)
    waiting = run(daemon, f"--after={a}:ok", "true")
    p = daemon.rnx("job", "cancel", waiting)
    assert p.returncode == 0, p.stderr
    job = daemon.wait(waiting)
    assert job["status"] == "CANCELED" and job["end_reason"] != "dependency", job
    ok = run(daemon, f"--after={a}:ok", "true")
    notok = run(daemon, f"--after={a}:notok", "true")
    daemon.rnx("job", "stop", a, check=True)
    assert daemon.wait(a)["status"] == "STOPPED"
    assert daemon.wait(notok)["status"] == "COMPLETED"
    job = daemon.wait(ok)
    assert job["error"] == f"needed job {a[:8]} to end COMPLETED; it ended STOPPED", job


def test_held_dependent_is_decided_when_released(fresh_daemon):
    """A job with --after held while it waits: its dependency ends meanwhile (one failing, one
    completing, one of them across a kill -9 of joblet); released, each is decided then: CANCELED
    with the reason, or queued and run."""
    d = fresh_daemon()
    a, b = gated(d), gated(d)
    wait_running(d, a)
    wait_running(d, b)
    x = run(d, f"--after={a}:ok", "/bin/true")
    y = run(d, f"--after={b}:ok", "/bin/true")
    for j in (x, y):
        d.rnx("job", "hold", j, check=True)
        assert d.job(j)["status"] == "HELD"
    release(d, a, fail=True)
    assert d.wait(a)["status"] == "FAILED"
    d.kill9()
    d.start()
    release(d, b)
    assert d.wait(b)["status"] == "COMPLETED"
    assert d.job(x)["status"] == "HELD" and d.job(y)["status"] == "HELD"
    d.rnx("job", "release", x, y, check=True)
    jx = d.wait(x)
    assert jx["status"] == "CANCELED" and jx["end_reason"] == "dependency", jx
    assert d.wait(y)["status"] == "COMPLETED"
