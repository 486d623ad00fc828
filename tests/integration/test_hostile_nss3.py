"""Account look-ups off the loop (core/nsscache.h) when a request needs several keys, each slow:
the caller's account and isolation.require_gvisor's groups, every request of every user.

Uses test_hostile_nss's LD_PRELOAD object (slow_nss): the look-ups of one uid take
SLOW_NSS_UID_SECONDS, those of one name (here the require_gvisor group) SLOW_NSS_NAME_SECONDS.
Before: the keys were asked one after the other, and with server.account_cache_s shorter than
an answer, the first had expired by the time the second came: the request parked again and again,
never answered (and a job waited QUEUED for ever)."""
import subprocess
import threading
import time
from collections import Counter

import pytest

from conftest import api_as, rnx_as, setpriv, wait_for
from test_hostile_nss import SLOW_UID, slow_nss  # noqa: F401 (the fixture)

GROUP = "slow-nss-group"  # no such group: its answer (none) is as slow as any


def _lookups(log):
    """The look-ups the object slowed so far, as (function, entered at)."""
    try:
        words = log.read_text().split()
    except FileNotFoundError:
        return []
    return [(words[i + 1], float(words[i + 2])) for i in range(0, len(words) - 2, 3) if words[i] == "enter"]


def _quiet(log, kept_s):
    """Waits until every look-up slowed so far (the daemon's own at its start, root's) is answered
    and its answer expired: the next request finds no key kept."""
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            words = log.read_text().split()
        except FileNotFoundError:
            words = []
        enters, leaves = words[0::3].count("enter"), words[0::3].count("leave")
        last = max([float(words[i + 2]) for i in range(0, len(words) - 2, 3)] or [0])
        if enters == leaves and time.time() - last > kept_s + 0.5:
            return
        time.sleep(0.1)


def _timed(d, method, path, body=None, timeout=30):
    """api_as by SLOW_UID, in a thread: (status, answer, seconds), or None when no answer came in
    timeout seconds (the request still parked)."""
    out = {}

    def go():
        t = time.time()
        try:
            out["r"] = api_as(d, SLOW_UID, method, path, body, timeout=timeout + 5)
        except subprocess.TimeoutExpired:
            return
        out["s"] = time.time() - t

    th = threading.Thread(target=go)
    th.start()
    th.join(timeout)
    if "r" not in out:
        return None
    return (*out["r"], out["s"])


@pytest.mark.parametrize("uid_s,group_s", [("1.5", "1.5"), ("1.5", "3")])
def test_a_request_needing_several_slow_keys_is_answered_after_one_look_up_of_each(fresh_daemon, slow_nss, uid_s,
                                                                                   group_s):
    """account_cache_s: 1; the caller's account takes uid_s to look up, require_gvisor's group
    group_s: the request is answered once both are (both asked at once, each counted for it however
    long it took), after one look-up of each; its job starts after a bounded number too."""
    env, log = slow_nss
    env = {**env, "SLOW_NSS_NAME": GROUP, "SLOW_NSS_UID_SECONDS": uid_s, "SLOW_NSS_NAME_SECONDS": group_s}
    d = fresh_daemon(f"server:\n  account_cache_s: 1\nisolation:\n  require_gvisor: \"@{GROUP}\"\n", env=env)
    _quiet(log, 1)
    before = len(_lookups(log))
    r = _timed(d, "GET", "/v1/whoami")
    seen = _lookups(log)[before:]
    print(f"look-ups of {uid_s} s (uid) and {group_s} s (group), kept 1 s: whoami "
          f"{'never answered' if r is None else f'answered in {r[2]:.2f} s'}, after {len(seen)} look-ups: {seen}")
    assert r is not None, f"the request was not answered in 30 s: {len(seen)} look-ups\n{d.log()[-3000:]}"
    code, who, _ = r
    assert code == 200 and who["uid"] == SLOW_UID and who.get("user") is None, who
    calls = sorted(f for f, _ in seen[:2])
    assert calls == ["getgrnam_r", "getpwuid_r"], f"one look-up of each key, asked at once: {seen}"
    # an answer taken past its time (the uid's, when the group's is slower) is asked again in the
    # background, not waited for: at most one more of each
    assert len(seen) <= 4 and all(n <= 2 for n in Counter(f for f, _ in seen).values()), seen
    # (one after the other would be 1.5 s apart: the uid's look-up's time)
    assert abs(seen[0][1] - seen[1][1]) < 1.2, f"the two keys were asked one after the other: {seen}"
    # (no bound on `took`: the two look-ups asked at once, and not asked again, are what says the
    # request waited for one look-up of each; a time limit failed under a whole run's load, local
    # run 168: 3.3 s against 3.0, with both asked at the same instant)
    # a submission (its account pinned, require_gvisor decided) and the job's start (checked again
    # by the scheduler, which waits for the same two keys)
    r = _timed(d, "POST", "/v1/jobs", {"command": "true"})
    assert r is not None, f"the submission was not answered in 30 s\n{d.log()[-3000:]}"
    code, job, _ = r
    assert code == 201, job
    deadline = time.time() + 40
    state = None
    while time.time() < deadline:
        code, j = d.api("GET", f"/v1/jobs/{job['id']}")
        state = j.get("status") if code == 200 else None
        if state in ("COMPLETED", "FAILED", "CANCELED", "STOPPED"):
            break
        time.sleep(0.3)
    n = len(_lookups(log)) - before
    print(f"the job {state} after {n} look-ups in all")
    assert state == "COMPLETED", (state, j, d.log()[-3000:])
    assert n <= 12, f"{n} look-ups for one whoami, one submission and one job"


# GET /v1/version every 50 ms over one connection for argv[2] seconds; prints how many.
_STEADY = r"""
import http.client, socket, sys, time
class C(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(sys.argv[1])
c = C("localhost", timeout=60)
n, end = 0, time.time() + float(sys.argv[2])
while time.time() < end:
    c.request("GET", "/v1/version")
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
    n += 1
    time.sleep(0.05)
print(n)
"""


def test_steady_traffic_never_waits_for_require_gvisor_groups_to_be_asked_again(fresh_daemon, slow_nss):
    """Every request needs require_gvisor's groups: when their kept answer expired, every user's next
    request waited one look-up. A kept answer used in its last quarter is asked again in the
    background: steady traffic finds the new answer in time, and waits for none after the first.
    Checked in the look-ups' own log, not by how long requests took (under CI's load a request's
    time says little: 0.56 s seen where 0.5 s meant a wait for a look-up of 0.6 s):
    each key is asked again only in the last quarter of its answer's time and answered before
    that time ends. Both keys are answered "none" (no such uid, no such group), kept
    NSSCACHE_NEGATIVE_MS (5 s) at most: asked again from 3.75 s on, answered by 5 s."""
    env, log = slow_nss
    lookup_s, kept_s, traffic_s = 0.3, 5, 16
    env = {**env, "SLOW_NSS_NAME": GROUP, "SLOW_NSS_UID_SECONDS": str(lookup_s),
           "SLOW_NSS_NAME_SECONDS": str(lookup_s)}
    d = fresh_daemon(f"server:\n  account_cache_s: {kept_s}\nisolation:\n  require_gvisor: \"@{GROUP}\"\n", env=env)
    r = _timed(d, "GET", "/v1/version")
    assert r is not None and r[0] == 200, r
    assert r[2] >= lookup_s, f"the first request did not wait for the look-ups ({r[2]:.2f} s)"
    # the traffic from one process of SLOW_UID over one connection, a request every 50 ms: a
    # new process per request (api_as) took up to a second and more under CI's load, and a
    # quarter of the answer's time could pass with no request to ask again
    p = subprocess.run([*setpriv(SLOW_UID), "/usr/bin/python3", "-c", _STEADY, d.sock, str(traffic_s)],
                       capture_output=True, text=True, timeout=traffic_s + 60, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    n = int(p.stdout)
    words = log.read_text().split()
    calls = {}
    for i in range(0, len(words) - 2, 3):
        calls.setdefault(words[i + 1], []).append((words[i], float(words[i + 2])))
    print(f"{n} requests over {traffic_s} s (look-ups of {lookup_s} s, kept {kept_s} s): {calls}")
    assert set(calls) == {"getgrnam_r", "getpwuid_r"}, calls
    for f, seq in calls.items():
        seq = [t for w, t in seq if w == "enter"], [t for w, t in seq if w == "leave"]
        enters, leaves = seq
        assert len(enters) >= 1 + traffic_s // kept_s, f"{f}: asked again too seldom: {calls}"
        for k in range(1, min(len(enters), len(leaves))):
            since = enters[k] - leaves[k - 1]
            assert since >= kept_s * 3 / 4 - 0.1, f"{f} asked again {since:.2f} s after its answer, before the last quarter"
            assert leaves[k] - leaves[k - 1] < kept_s, (
                f"{f}: the new answer came {leaves[k] - leaves[k - 1]:.2f} s after the last, past its {kept_s} s: "
                f"a request waited for it")


@pytest.mark.parametrize("code,state", [(0, "COMPLETED"), (1, "CANCELED")])
def test_a_task_made_ahead_while_its_owners_account_is_looked_up_is_made_once_it_is_answered(fresh_daemon, slow_nss,
                                                                                             code, state):
    """B waits task by task on A (--after=A:corr): A's odd tasks end, its even ones run on, so
    B's odd tasks are made ahead of B's cursor (task 0, which waits), to run (A's task COMPLETED)
    or to be canceled (FAILED: made and canceled, as its own task ran). Each is made as its
    owner's account is known: with that account's kept answer expired, the making waits for the
    look-up. A task taken out of the tasks that may go (arrays_go_take), or out of those to look
    at (arrays_ready_pop), and not made then was lost from them: it waited for the cursor, that
    is for A's task 0, which never ends (local CI's sanitizer pass saw B's tasks made ahead stop
    short of 256 for 300 s). It is made once the account is answered; no task is made twice."""
    env, log = slow_nss
    env = {**env, "SLOW_NSS_SECONDS": "1"}
    d = fresh_daemon("server:\n  account_cache_s: 1\n", env=env)

    def run(*args):
        p = rnx_as(d, SLOW_UID, "job", "run", *args)
        assert p.returncode == 0, p.stderr
        return p.stdout.strip()

    a = run("--array=0-3", "sh", "-c",
            f'if [ $((SLURM_ARRAY_TASK_ID % 2)) = 0 ]; then exec sleep 1000; fi; sleep 4; exit {code}')
    b = run("--array=0-3", f"--after={a}:corr", "true")
    last = {}

    def counts(ref):
        last[ref] = d.api("GET", f"/v1/jobs/{ref}")[1]["array"]["counts"]
        return last[ref]

    try:
        wait_for(lambda: counts(a) == {"RUNNING": 2, "COMPLETED" if code == 0 else "FAILED": 2}, "A's odd tasks end",
                 timeout=120)
        wait_for(lambda: counts(b) == {state: 2, "PENDING": 2}, "B's odd tasks made ahead", timeout=60)
    finally:
        print(f"counts: {last}; look-ups: {_lookups(log)}")
    assert rnx_as(d, SLOW_UID, "job", "stop", a).returncode == 0
    wait_for(lambda: counts(b) == ({"COMPLETED": 2, "CANCELED": 2} if code == 0 else {"CANCELED": 4}), "B decided",
             timeout=120)
    code, lst = d.api("GET", "/v1/jobs?expand=1")
    made = sorted(j["array"]["task"] for j in lst["jobs"]
                  if (j.get("array") or {}).get("id") == b and j.get("kind") != "array")
    assert made == [0, 1, 2, 3], made
