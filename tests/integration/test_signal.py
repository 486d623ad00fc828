"""Signals for a running job, as Slurm's scancel --signal and docker kill --signal send them, and
Slurm's sbatch --signal=SIG@SECONDS before the run-time limit (docs/batch.md, docs/api.md):
`rnx job kill --signal=SIG [--all] ID`, `POST /v1/jobs/{id}/kill?signal=SIG[&all=1]`,
`rnx job run --max-runtime=D --signal=SIG[@SECONDS]`.

Each probe is a bash script whose traps append a line to a file in the job's /work: what a
signal reached is read from the host, and a probe that escaped would only write its own /work.
One daemon for the module; the test that kills it has its own."""
import os
import shutil
import time

import pytest

from conftest import TERMINAL, UnixHTTPConnection, api_as, rnx_as, wait_for
from test_job_control import ms

OTHER = 4323  # a user who is not root (no account needed: joblet reads the peer's uid)

# The command traps USR1 and HUP into /work/cmd; a child of it (not the command) traps USR1 into
# /work/child; both then go on until stopped. /work/up says both traps are set.
PROBE = ("trap 'echo USR1 >> /work/cmd' USR1; trap 'echo HUP >> /work/cmd' HUP; "
         "(trap 'echo USR1 >> /work/child' USR1; touch /work/child.up; while :; do sleep 0.05; done) & "
         "while [ ! -e /work/child.up ]; do sleep 0.02; done; touch /work/up; "
         "while :; do sleep 0.05; done")


@pytest.fixture(scope="module")
def d():
    from conftest import Daemon, need_root
    need_root()
    dm = Daemon().start()
    yield dm
    dm.cleanup()


def lines(d, jid, name):
    try:
        with open(os.path.join(d.work(jid), name)) as f:
            return f.read().split()
    except FileNotFoundError:
        return []


def start_probe(d, **fields):
    jid = d.submit("bash", "-c", PROBE, **fields)
    wait_for(lambda: os.path.exists(os.path.join(d.work(jid), "up")), f"job {jid}'s traps are set")
    return jid


def events(d, jid, kind=None):
    """The job's history (GET ?detail=1), only the events of that kind when kind is given."""
    code, j = d.api("GET", f"/v1/jobs/{jid}?detail=1")
    assert code == 200, j
    return [e for e in j["detail"]["events"] if kind is None or e["event"] == kind]


def end(d, *ids):
    for i in ids:
        d.api("POST", f"/v1/jobs/{i}/kill")
    for i in ids:
        wait_for(lambda: d.job(i)["status"] in TERMINAL, f"job {i} ends")


def test_a_signal_reaches_the_command_and_with_all_every_process(d):
    jid = start_probe(d)
    p = d.rnx("job", "kill", "--signal=usr1", jid)
    assert p.returncode == 0, p.stderr
    assert "sent SIGUSR1 to the command of" in p.stdout
    wait_for(lambda: lines(d, jid, "cmd") == ["USR1"], "the command's trap")
    # the command alone (docker kill --signal): its child is not sent it, and the job goes on
    p = d.rnx("job", "kill", "-s", "HUP", jid)
    assert p.returncode == 0, p.stderr
    wait_for(lambda: lines(d, jid, "cmd") == ["USR1", "HUP"], "the second signal")
    assert lines(d, jid, "child") == []
    assert d.job(jid)["status"] == "RUNNING"
    # --all: every process (Slurm's scancel --full), through the API's all=1 as rnx sends it
    p = d.rnx("job", "kill", "--signal=SIGUSR1", "--all", jid)
    assert p.returncode == 0, p.stderr
    assert "sent SIGUSR1 to every process of" in p.stdout
    wait_for(lambda: lines(d, jid, "child") == ["USR1"], "the child's trap")
    wait_for(lambda: lines(d, jid, "cmd") == ["USR1", "HUP", "USR1"], "the command's trap, again")
    assert d.job(jid)["status"] == "RUNNING"
    sent = [e["detail"] for e in events(d, jid, "signaled")]
    assert sent == ["SIGUSR1 to its command by uid 0", "SIGHUP to its command by uid 0",
                    "SIGUSR1 to every process by uid 0"], sent
    detail = d.rnx("job", "status", "--detail", jid).stdout
    assert "signaled" in detail and "SIGHUP to its command" in detail
    end(d, jid)


def test_a_signal_that_ends_the_command_ends_the_job_as_that_signal(d):
    jid = d.submit("bash", "-c", "touch /work/up; while :; do sleep 0.05; done")
    wait_for(lambda: os.path.exists(os.path.join(d.work(jid), "up")), "the job runs")
    code, j = d.api("POST", f"/v1/jobs/{jid}/kill?signal=TERM")
    assert code == 200, j
    j = d.wait(jid)
    assert j["status"] == "FAILED" and j["exit_code"] == 143, j
    assert j.get("end_reason") == "signal", j


def test_kill_with_signal_kill_is_a_kill(d):
    jid = start_probe(d)
    code, j = d.api("POST", f"/v1/jobs/{jid}/kill?signal=KILL")
    assert code == 200, j
    j = d.wait(jid)
    assert j["status"] == "STOPPED" and j["end_reason"] == "killed", j


def test_refusals_name_the_field_and_leave_the_job_as_it_was(d):
    jid = start_probe(d)
    for bad, word in (("STOP", "rnx job suspend"), ("tstp", "rnx job suspend"), ("CHLD", "SIGCHLD"),
                      ("bogus", "not a signal"), ("0", "not a signal"), ("33", "not a signal"), ("", "not a signal")):
        code, e = d.api("POST", f"/v1/jobs/{jid}/kill?signal={bad}")
        assert code == 400, (bad, e)
        assert e["error"]["field"] == "signal" and word in e["error"]["message"], (bad, e)
    p = d.rnx("job", "kill", "--signal=STOP", jid)
    assert p.returncode == 2 and "rnx job suspend" in p.stderr, (p.returncode, p.stderr)
    p = d.rnx("job", "kill", "--all", jid)
    assert p.returncode == 2 and "--all goes with --signal" in p.stderr, p.stderr
    # another user's job: not theirs to see, let alone signal
    code, e = api_as(d, OTHER, "POST", f"/v1/jobs/{jid}/kill?signal=USR1")
    assert code in (403, 404), e
    p = rnx_as(d, OTHER, "job", "kill", "--signal=USR1", jid)
    assert p.returncode != 0
    assert lines(d, jid, "cmd") == [] and events(d, jid, "signaled") == []
    assert d.job(jid)["status"] == "RUNNING"
    end(d, jid)
    # an ended job
    code, e = d.api("POST", f"/v1/jobs/{jid}/kill?signal=USR1")
    assert code == 409 and "only a running job can be sent a signal" in e["error"]["message"], e
    # a job that has not started: refused, never canceled (a signal is not a cancel)
    held = d.submit("true", schedule_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600)))
    code, e = d.api("POST", f"/v1/jobs/{held}/kill?signal=USR1")
    assert code == 409 and "has not started" in e["error"]["message"], e
    assert d.job(held)["status"] == "SCHEDULED"
    d.api("POST", f"/v1/jobs/{held}/cancel")


def test_a_suspended_job_gets_the_signal_when_it_is_resumed(d):
    jid = start_probe(d)
    p = d.rnx("job", "suspend", jid)
    if p.returncode != 0 and "501" in p.stderr + p.stdout:
        end(d, jid)
        pytest.skip("this host's cgroups cannot freeze a job: " + p.stderr.strip())
    assert p.returncode == 0, p.stderr
    d.wait_status(jid, "SUSPENDED")
    assert d.rnx("job", "kill", "--signal=USR1", jid).returncode == 0
    (e,) = events(d, jid, "signaled")
    assert "delivered when it is resumed" in e["detail"], e
    time.sleep(1)  # (a frozen job writes nothing: this only gives a wrong delivery the time to show)
    assert lines(d, jid, "cmd") == []
    assert d.rnx("job", "resume", jid).returncode == 0
    wait_for(lambda: lines(d, jid, "cmd") == ["USR1"], "the signal, once thawed")
    end(d, jid)


def array_tasks(d, aid):
    """The made tasks of array aid: {task id: job id}."""
    code, lst = d.api("GET", "/v1/jobs?expand=1")
    return {j["array"]["task"]: j["id"] for j in lst["jobs"]
            if j.get("kind") != "array" and (j.get("array") or {}).get("id") == aid}


def test_an_array_signals_its_running_tasks(d):
    code, a = d.api("POST", "/v1/jobs", {"command": "bash", "args": ["-c", PROBE], "array": "0-2"})
    assert code == 201, a
    aid = a["id"]

    def tasks():
        return array_tasks(d, aid)

    wait_for(lambda: len(tasks()) == 3 and all(os.path.exists(os.path.join(d.work(t), "up"))
                                               for t in tasks().values()), "every task's traps")
    ids = tasks()
    p = d.rnx("job", "kill", "--signal=USR1", f"{aid}_[0-1]")
    assert p.returncode == 0, p.stderr
    assert "sent SIGUSR1 to 2 running tasks of array" in p.stdout, p.stdout
    assert "_[0-1]: RUNNING, sent SIGUSR1" in p.stdout, p.stdout  # which were sent it
    wait_for(lambda: lines(d, ids[0], "cmd") == ["USR1"] and lines(d, ids[1], "cmd") == ["USR1"], "tasks 0 and 1")
    assert lines(d, ids[2], "cmd") == []
    code, r = d.api("POST", f"/v1/jobs/{aid}/kill?signal=HUP&all=1")
    assert code == 200 and r["acted"] == 3, r
    wait_for(lambda: all(lines(d, t, "cmd")[-1:] == ["HUP"] for t in ids.values()), "HUP in every task")
    assert all(d.job(t)["status"] == "RUNNING" for t in ids.values())
    d.api("POST", f"/v1/jobs/{aid}/kill")
    wait_for(lambda: all(d.job(t)["status"] in TERMINAL for t in ids.values()), "the tasks end")
    code, e = d.api("POST", f"/v1/jobs/{aid}/kill?signal=USR1")
    assert code == 409 and "no task runs" in e["error"]["message"], e


def test_a_signal_to_tasks_named_says_which_were_sent_it(d):
    """rnx job kill --signal=USR1 ID_[0-2] of a %2 array: the two running were sent it, the one
    not started was not, and the answer says so task by task (scancel -s says nothing)."""
    code, a = d.api("POST", "/v1/jobs", {"command": "bash", "args": ["-c", PROBE], "array": "0-2%2"})
    assert code == 201, a
    aid = a["id"]

    def tasks():
        return array_tasks(d, aid)

    wait_for(lambda: len(tasks()) == 2 and all(os.path.exists(os.path.join(d.work(t), "up"))
                                               for t in tasks().values()), "the two tasks' traps")
    p = d.rnx("job", "kill", "--signal=USR1", f"{aid}_[0-2]")
    assert p.returncode == 0, p.stderr
    assert "sent SIGUSR1 to 2 running tasks of array" in p.stdout, p.stdout
    assert "_[0-1]: RUNNING, sent SIGUSR1" in p.stdout and "_2: QUEUED, not started, not sent" in p.stdout, p.stdout
    code, r = d.api("POST", f"/v1/jobs/{aid}_[0-2]/kill?signal=USR1")
    assert code == 200 and r["named"] == "0-2" and {g["now"] for g in r["went"]} == {"RUNNING", "QUEUED"}, r
    d.api("POST", f"/v1/jobs/{aid}/cancel")
    d.api("POST", f"/v1/jobs/{aid}/kill")
    wait_for(lambda: all(d.job(t)["status"] in TERMINAL for t in tasks().values()), "the tasks end")


@pytest.mark.skipif(shutil.which("runsc") is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")
def test_a_gvisor_job_gets_the_signal_through_runsc(d):
    """Under gVisor the shim has runsc send it: to the sandbox's command, or with --all to every
    process of the sandbox."""
    jid = start_probe(d, isolation="gvisor")
    assert d.rnx("job", "kill", "--signal=USR1", jid).returncode == 0
    wait_for(lambda: lines(d, jid, "cmd") == ["USR1"], "the command's trap, in the sandbox")
    assert lines(d, jid, "child") == []
    assert d.rnx("job", "kill", "--signal=USR1", "--all", jid).returncode == 0
    wait_for(lambda: lines(d, jid, "child") == ["USR1"], "the child's trap, in the sandbox")
    assert d.job(jid)["status"] == "RUNNING"
    end(d, jid)


def sigq(pid):
    """Signals queued to a process's user, as /proc says (SigQ: queued/limit)."""
    with open(f"/proc/{pid}/status") as f:
        return int(next(ln for ln in f if ln.startswith("SigQ:")).split()[1].split("/")[0])


@pytest.mark.skipif(shutil.which("runsc") is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")
def test_a_flood_of_signals_piles_nothing_up(d):
    """runsc takes a while to send each signal: a thousand requests at once must not leave a
    thousand signals queued to root (RLIMIT_SIGPENDING is root's, shared by every shim). 989 of
    1,000 were before the shim drained its queue whole (each signal sent once) and joblet let at
    most 32 wait for a shim."""
    jid = start_probe(d, isolation="gvisor")
    shim = d.job(jid)["shim_pid"]
    before = sigq(shim)  # (root's: every root process's queued signals count)
    c = UnixHTTPConnection(d.sock)
    codes = {}
    for _ in range(1000):
        c.request("POST", f"/v1/jobs/{jid}/kill?signal=USR1")
        r = c.getresponse()
        r.read()
        codes[r.status] = codes.get(r.status, 0) + 1
    c.close()
    # sent, or 503 while 32 wait for the shim (job_launch_signal): never anything else
    assert set(codes) <= {200, 503} and codes.get(200, 0) >= 32, codes
    # what came in while runsc sent the last ones may wait (a few dozen); without the shim's
    # drain nearly all of them do
    assert sigq(shim) - before < 500
    wait_for(lambda: lines(d, jid, "cmd")[:1] == ["USR1"], "the signal")
    assert d.job(jid)["status"] == "RUNNING"
    code, j = d.api("GET", f"/v1/jobs/{jid}?detail=1")
    assert len(j["detail"]["events"]) <= 64 and j["detail"]["events_dropped"] >= codes[200] - 64, j["detail"]
    end(d, jid)


def test_signal_before_the_run_time_limit(d):
    """sbatch --signal=B:USR1@SECONDS: the command is sent USR1 that long before the limit, and
    again when the limit moves further than the warning it was sent (rnx job update)."""
    script = ("trap 'echo $SECONDS >> /work/warned' USR1; touch /work/up; "
              "while :; do sleep 0.05; done")
    p = d.rnx("job", "run", "--max-runtime=8", "--signal=B:USR1@6", "bash", "-c", script)
    assert p.returncode == 0, p.stderr
    jid = p.stdout.strip()
    assert d.job(jid)["limits"]["signal"] == "SIGUSR1@6"
    assert "signal SIGUSR1@6" in d.rnx("job", "status", jid).stdout
    wait_for(lambda: len(lines(d, jid, "warned")) == 1, "the warning 6 s before the limit")
    assert d.job(jid)["status"] == "RUNNING"
    # a later limit (before the first one ends it, 6 s after the warning): a warning of its own
    p = d.rnx("job", "update", jid, "--max-runtime=14")
    assert p.returncode == 0, p.stderr
    wait_for(lambda: len(lines(d, jid, "warned")) == 2, "the warning before the new limit", timeout=90)
    first, second = (int(x) for x in lines(d, jid, "warned"))
    assert second > first
    sent = [e["detail"] for e in events(d, jid, "signaled")]
    assert len(sent) == 2 and all("due 6 s before its run-time limit" in s for s in sent), sent
    assert "of 8 s" in sent[0] and "of 14 s" in sent[1], sent
    end(d, jid)


def test_signal_at_submission_refusals(d):
    cases = [
        ({"signal": "USR1@30"}, "the job has none"),
        ({"signal": "USR1@30", "max_runtime_s": 30}, "would come as the job starts"),
        ({"signal": "KILL@5", "max_runtime_s": 60}, "a shorter limit"),
        ({"signal": "USR1@0", "max_runtime_s": 60}, "0 seconds is out of range"),
        ({"signal": "USR1@65536", "max_runtime_s": 600000}, "65536 seconds is out of range"),
        ({"signal": "STOP@5", "max_runtime_s": 60}, "rnx job suspend"),
        ({"signal": 10, "max_runtime_s": 60}, 'a number (10), not a string; give it as a string: "10"'),
    ]
    for fields, word in cases:
        code, e = d.api("POST", "/v1/jobs", {"command": "true", **fields})
        assert code == 400, (fields, e)
        assert e["error"]["field"] == "signal" and word in e["error"]["message"], (fields, e)
    p = d.rnx("job", "run", "--signal=USR1", "true")
    assert p.returncode == 2 and "--signal" in p.stderr and "max_runtime" in p.stderr, p.stderr


def test_the_warning_comes_though_joblet_was_killed(fresh_daemon):
    """The shim sends it: a kill -9 of joblet between the start and the warning loses nothing.
    Nor does the job's history: a warning sent while joblet was down is recorded, at the time it
    was sent, when the next joblet adopts the job; one sent after that (that joblet has no pipe
    to the shim) when the job ends."""
    d = fresh_daemon()
    script = "trap 'echo USR1 >> /work/warned' USR1; touch /work/up; while :; do sleep 0.05; done"
    jid = d.submit("bash", "-c", script, max_runtime_s=60, signal="USR1@57")
    wait_for(lambda: os.path.exists(os.path.join(d.work(jid), "up")), "the job runs")
    d.kill9()
    down = time.time()
    wait_for(lambda: lines(d, jid, "warned") == ["USR1"], "the warning, from the shim, while joblet is down")
    sent = time.time()
    d.start()
    assert d.job(jid)["status"] == "RUNNING"
    (e,) = events(d, jid, "signaled")
    assert e["detail"] == "SIGUSR1 to its command by joblet, due 57 s before its run-time limit of 60 s (--signal)", e
    assert down * 1000 - 1000 <= ms(e["time"]) <= sent * 1000 + 1000, (e, down, sent)   # when it was sent
    # a later limit, 57 s past a run time the job reaches soon: a second warning, to this joblet
    ran = (time.time() - ms(d.job(jid)["started_at"]) / 1000)
    p = d.rnx("job", "update", jid, f"--max-runtime={int(ran) + 3 + 57}")
    assert p.returncode == 0, p.stderr
    wait_for(lambda: lines(d, jid, "warned") == ["USR1", "USR1"], "the second warning")
    end(d, jid)
    sent = [x["detail"] for x in events(d, jid, "signaled")]
    assert len(sent) == 2 and sent[1].endswith(f"of {int(ran) + 60} s (--signal)"), sent
