"""Hostile probes of rnx job kill --signal and --signal=SIG@SECONDS (docs/batch.md "Signals",
docs/api.md POST /v1/jobs/{id}/kill), and of --after=ARRAY:corr tasks made out of the list's
order (docs/batch.md, corr): what another user, a query string, a flood of requests or a process
inside the job can do, and what must hold whatever they do.

Each probe writes only into its job's /work; every job, array and stopped process is ended by the
test that made it."""
import os
import re
import signal
import subprocess
import threading

import pytest

from conftest import TERMINAL, api_as, rnx_as, wait_for
from test_arrays import LIMITS
from test_signal import PROBE, events, lines, start_probe

OTHER = 4324  # a user who is not root (joblet reads the peer's uid; no account needed)


@pytest.fixture(scope="module")
def d():
    from conftest import Daemon, need_root
    need_root()
    dm = Daemon(LIMITS).start()
    yield dm
    dm.cleanup()


def end(d, *ids):
    for i in ids:
        d.api("POST", f"/v1/jobs/{i}/kill")
    for i in ids:
        wait_for(lambda: d.job(i)["status"] in TERMINAL, f"job {i} ends")


def shim_of(d, jid):
    pid = d.job(jid).get("shim_pid")
    assert pid, d.job(jid)
    return pid


def test_a_signal_key_without_a_value_is_refused_never_a_kill(d):
    """?signal without "=": libmicrohttpd gives it no value, as if the key were absent; the
    route took the request for a plain kill and SIGKILLed the job."""
    jid = start_probe(d)
    code, e = d.api("POST", f"/v1/jobs/{jid}/kill?signal")
    assert code == 400 and e["error"]["field"] == "signal", e
    code, a = d.api("POST", "/v1/jobs", {"command": "bash", "args": ["-c", PROBE], "array": "0-1"})
    assert code == 201, a
    wait_for(lambda: d.api("GET", f"/v1/jobs/{a['id']}")[1]["array"]["counts"].get("RUNNING") == 2, "both tasks run")
    code, e = d.api("POST", f"/v1/jobs/{a['id']}/kill?signal&all")
    assert code == 400 and e["error"]["field"] == "signal", e
    assert d.api("GET", f"/v1/jobs/{a['id']}")[1]["array"]["counts"] == {"RUNNING": 2}
    assert d.job(jid)["status"] == "RUNNING"
    # a switch without a value is on, as query.h says: all, not the command alone
    code, j = d.api("POST", f"/v1/jobs/{jid}/kill?signal=USR1&all")
    assert code == 200, j
    assert events(d, jid, "signaled")[-1]["detail"] == "SIGUSR1 to every process by uid 0"
    d.api("POST", f"/v1/jobs/{a['id']}/kill")
    end(d, jid)


def test_query_string_tricks_are_refused_and_leave_the_job_alone(d):
    jid = start_probe(d)
    for bad in ("1e1", "%2010", "%2B10", "10%20", "99999999999999999999999", "18446744073709551626", "SIGRTMIN",
                "RTMIN%2B1", "34", "64", "65", "-1", "SIGSIGUSR1", "0x0a", "10.0", "%EF%BC%B5SR1", "STOP%26signal%3DUSR1"):
        code, e = d.api("POST", f"/v1/jobs/{jid}/kill?signal={bad}")
        assert code == 400 and e["error"]["field"] == "signal", (bad, e)
    # a percent-encoded name is the name; "9" is SIGKILL's number, as KILL is its name: a kill
    code, j = d.api("POST", f"/v1/jobs/{jid}/kill?signal=%55%53%52%31")
    assert code == 200, j
    wait_for(lambda: lines(d, jid, "cmd") == ["USR1"], "USR1, percent-encoded")
    assert d.job(jid)["status"] == "RUNNING"
    assert len(events(d, jid, "signaled")) == 1
    code, j = d.api("POST", f"/v1/jobs/{jid}/kill?signal=9")
    assert code == 200, j
    j = d.wait(jid)
    assert j["status"] == "STOPPED" and j["end_reason"] == "killed", j


def test_another_user_cannot_signal_a_job_or_an_array_task_by_any_name(d):
    jid = start_probe(d, name="hostile-victim")
    code, a = d.api("POST", "/v1/jobs", {"command": "bash", "args": ["-c", PROBE], "array": "0-2",
                                         "name": "hostile-victims"})
    assert code == 201, a
    aid = a["id"]
    wait_for(lambda: d.api("GET", f"/v1/jobs/{aid}")[1]["array"]["counts"].get("RUNNING") == 3, "the tasks run")
    for ref in (jid, jid[:8], "hostile-victim", aid, aid[:8], "hostile-victims", f"{aid}_1", f"{aid[:8]}_1",
                f"{aid}_[0-2]", "hostile-victims_1"):
        code, e = api_as(d, OTHER, "POST", f"/v1/jobs/{ref}/kill?signal=USR1&all=1")
        assert code in (403, 404), (ref, e)
        p = rnx_as(d, OTHER, "job", "kill", "--signal=HUP", ref)
        assert p.returncode != 0, (ref, p.stdout)
    assert events(d, jid, "signaled") == [] and lines(d, jid, "cmd") == []
    code, lst = d.api("GET", "/v1/jobs?expand=1")
    tasks = [j["id"] for j in lst["jobs"] if (j.get("array") or {}).get("id") == aid and j.get("kind") != "array"]
    assert len(tasks) == 3
    for t in tasks:
        assert events(d, t, "signaled") == [] and lines(d, t, "cmd") == []
    d.api("POST", f"/v1/jobs/{aid}/kill")
    end(d, jid, *tasks)


def test_signals_a_shim_has_not_taken_are_bounded(d):
    """Each signal waits in its shim's queue, charged to root (RLIMIT_SIGPENDING is one budget
    for every root process). A shim that does not take them yet (here: stopped, as one still
    busy starting its job) let one user queue as many as they sent; at most
    JOB_LAUNCH_SIGNALS_QUEUED_MAX (32) may wait now, and once the shim took them more go."""
    jid = start_probe(d)
    shim = shim_of(d, jid)
    codes = []
    os.kill(shim, signal.SIGSTOP)
    try:
        wait_for(lambda: "T (stopped)" in open(f"/proc/{shim}/status").read(), "the shim stopped")
        for _ in range(60):
            code, r = d.api("POST", f"/v1/jobs/{jid}/kill?signal=HUP")
            codes.append(code)
            if code != 200:
                assert code == 503 and "still wait for it to take them" in r["error"]["message"], r
    finally:
        os.kill(shim, signal.SIGCONT)
    assert codes.count(200) == 32 and codes.count(503) == 28, codes
    # (the command's trap may merge HUPs that come while it runs one: at least one is seen)
    wait_for(lambda: "HUP" in lines(d, jid, "cmd"), "the signals, once the shim runs")
    wait_for(lambda: d.api("POST", f"/v1/jobs/{jid}/kill?signal=USR1")[0] == 200, "a signal accepted again")
    wait_for(lambda: "USR1" in lines(d, jid, "cmd"), "the later signal")
    assert d.job(jid)["status"] == "RUNNING"
    end(d, jid)


def test_a_flood_of_signals_keeps_the_history_bounded_and_others_served(d):
    """Thousands of requests at once: every answer is 200 or 503, the job's history keeps at
    most 64 events, the daemon stays up and another job's limit update is still heard (this
    is how the disarmed timer was found: the flood took the other job past its new limit)."""
    jid = start_probe(d)
    other = start_probe(d)
    codes = {}
    lock = threading.Lock()

    def flood():
        for _ in range(250):
            code, _ = d.api("POST", f"/v1/jobs/{jid}/kill?signal=HUP")
            with lock:
                codes[code] = codes.get(code, 0) + 1

    threads = [threading.Thread(target=flood) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(codes) <= {200, 503} and codes.get(200), codes
    assert len(events(d, jid)) <= 64
    assert d.job(jid)["status"] == "RUNNING"
    p = d.rnx("job", "update", other, "--max-runtime=1")
    assert p.returncode == 0, p.stderr
    j = d.wait(other)
    assert j["end_reason"] == "time_limit", j
    end(d, jid)


def test_a_limit_lowered_under_the_time_run_ends_the_job_and_its_warning_comes(d):
    """rnx job update --max-runtime under the run time the job has had already: the shim's timer
    was disarmed (a negative time left), so the job ran on without a limit and its --signal
    warning, past too, never came."""
    script = ("trap 'echo USR1 >> /work/warned' USR1; touch /work/up; sleep 3; touch /work/late; "
              "while :; do sleep 0.05; done")
    plain = d.submit("bash", "-c", script)
    warned = d.submit("bash", "-c", script, max_runtime_s=600, signal="USR1@60")
    for jid in (plain, warned):
        wait_for(lambda: os.path.exists(os.path.join(d.work(jid), "late")), f"job {jid} ran 3 s")
    p = d.rnx("job", "update", plain, "--max-runtime=1")
    assert p.returncode == 0, p.stderr
    j = d.wait(plain)
    assert j["status"] == "FAILED" and j["end_reason"] == "time_limit", j
    # 600 s -> 62 s: its warning (60 s before the limit) is due at 2 s of run time, past already
    p = d.rnx("job", "update", warned, "--max-runtime=62")
    assert p.returncode == 0, p.stderr
    wait_for(lambda: lines(d, warned, "warned") == ["USR1"], "the warning that is past due")
    (e,) = events(d, warned, "signaled")
    assert "of 62 s" in e["detail"], e
    assert d.job(warned)["status"] == "RUNNING"
    end(d, warned)


def test_a_limit_word_that_lost_its_value_is_still_heard(d):
    """When root's pending signals are at their limit, the kernel still delivers the SIGUSR2
    that carries a new run-time limit, but without its value (si_code SI_USER). The shim ignored
    such a SIGUSR2, so rnx job update --max-runtime (and a suspend's pause of the clock) was lost
    without a word; it reads the word from its file now. Here the shim's own limit is set to 0,
    as a host whose root has that many pending would be."""
    if not os.path.exists("/usr/bin/prlimit"):
        pytest.skip("prlimit (util-linux) is not installed")
    jid = start_probe(d)
    shim = shim_of(d, jid)
    subprocess.run(["prlimit", f"--pid={shim}", "--sigpending=0"], check=True)
    # a real-time signal is refused outright at the limit: the daemon says so and moves on
    code, e = d.api("POST", f"/v1/jobs/{jid}/kill?signal=USR1")
    assert code == 503 and "too many signals are waiting" in e["error"]["message"], e
    # (a limit ahead of the time run: the word itself, not a limit already past, is tested)
    p = d.rnx("job", "update", jid, "--max-runtime=8")
    assert p.returncode == 0, p.stderr
    j = d.wait(jid)
    assert j["status"] == "FAILED" and j["end_reason"] == "time_limit", j


def test_a_job_process_cannot_make_its_init_misbehave(d):
    """The job's processes sigqueue its init (PID 1) with the shim's word for "the command
    alone", and kill it plainly: the init is not theirs to signal (EPERM); the job goes on and
    ends as its command does."""
    attack = ("import ctypes, os\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "out = []\n"
              "for s in (1, 10, 15):\n"
              "    r = libc.sigqueue(1, s, ctypes.c_void_p(0x434d44))\n"
              "    out.append('q%d=%d/%d' % (s, r, ctypes.get_errno()))\n"
              "    try:\n"
              "        os.kill(1, s); out.append('k%d=0' % s)\n"
              "    except OSError as e:\n"
              "        out.append('k%d=%d' % (s, e.errno))\n"
              "open('/work/attack', 'w').write(' '.join(out))\n")
    script = ("trap 'echo HUP >> /work/cmd' HUP; trap 'echo USR1 >> /work/cmd' USR1; "
              "trap 'echo TERM >> /work/cmd' TERM; python3 -c \"$0\"; echo done")
    job, out, err = d.run("bash", "-c", script, attack)
    if "python3" in err and "not found" in err:
        pytest.skip("no python3 in the job's root")
    assert job["status"] == "COMPLETED" and out == "done\n", (job, out, err)
    got = lines(d, job["id"], "attack")
    assert all(x.endswith(("=-1/1", "=1")) for x in got), got   # EPERM, each of them
    assert lines(d, job["id"], "cmd") == []


def test_corr_tasks_past_256_ranges_wait_and_survive_kill9(fresh_daemon):
    """Every other task of A waits: B's tasks made ahead are 256 separate ranges, then the
    others go in the list's order; a kill -9 of joblet makes none twice, loses none, and every
    task of B is made exactly once once A ends."""
    d = fresh_daemon(LIMITS)
    cap = re.search(r"at most (\d+) jobs run at once", d.log())   # (daemon/main.c files_budget)
    if cap and int(cap.group(1)) < 400:
        pytest.skip(f"300 of A's tasks run at once, and B's beside them: joblet's open-file limit lets "
                    f"{cap.group(1)} run (raise the hard ulimit -n)")
    a = d.rnx("job", "run", "--array=0-599", "sh", "-c",
              'if [ $((SLURM_ARRAY_TASK_ID % 2)) = 0 ]; then exec sleep 1000; fi', check=True).stdout.strip()
    b = d.rnx("job", "run", "--array=0-599", f"--after={a}:corr", "true", check=True).stdout.strip()

    last = {}

    def counts(ref):
        last[ref] = d.api("GET", f"/v1/jobs/{ref}")[1]["array"]
        return last[ref]["counts"]

    def settle(ref, want, what):
        try:
            wait_for(lambda: counts(ref) == want, what, timeout=300)
        except AssertionError as e:
            odd = [ln for ln in d.log().splitlines()
                   if " info " not in ln or "FAILED" in ln or "CANCELED" in ln]
            bad = [j for j in d.api("GET", "/v1/jobs?expand=1")[1]["jobs"]
                   if j.get("kind") != "array" and j.get("status") not in ("COMPLETED", "RUNNING", "QUEUED", "PENDING")]
            detail = [(d.api("GET", f"/v1/jobs/{j['id']}")[1], d.output(j["id"], "stderr")[-3000:])
                      for j in bad[:3]]
            raise AssertionError(f"{e}: A {last.get(a)}, B {last.get(b)}; tasks not well: {detail}; "
                                 "joblet's log but its info lines about what ended well:\n"
                                 + "\n".join(odd[-80:]))

    settle(a, {"RUNNING": 300, "COMPLETED": 300}, "A's tasks settle")
    settle(b, {"COMPLETED": 256, "QUEUED": 44, "PENDING": 300}, "256 of B's tasks made ahead")
    d.kill9()
    d.start()
    assert counts(b) == {"COMPLETED": 256, "QUEUED": 44, "PENDING": 300}
    assert d.api("GET", f"/v1/jobs/{b}")[1]["array"]["made"] == 256
    d.rnx("job", "stop", a, check=True)
    settle(b, {"COMPLETED": 300, "CANCELED": 300}, "B decided")
    code, lst = d.api("GET", "/v1/jobs?expand=1")
    made = sorted(j["array"]["task"] for j in lst["jobs"]
                  if (j.get("array") or {}).get("id") == b and j.get("kind") != "array")
    assert made == list(range(600))
    assert "arrays: the counts per owner differ" not in d.log()
