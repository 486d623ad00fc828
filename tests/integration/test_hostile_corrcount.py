"""Hostile review of the task-by-task (--after=ARRAY:corr) array's PENDING/QUEUED split
(arrays.c corr_ready, corr_places, arrays_cancel_unmade_in; docs/batch.md 'task by task'),
against the real daemon and rnx."""
import os
import random
import time

import pytest

from conftest import TERMINAL, tasks_of, wait_for
from test_array_corr import counts, d, run  # noqa: F401 (d: the fixture, a daemon with test_arrays' LIMITS)
from test_arrays import LIMITS
from test_dependencies import GATE


def test_cancel_by_status_of_a_few_named_tasks_is_not_refused_for_the_rest_of_the_array(d):
    """B waits on A task by task; A's 260 odd tasks COMPLETED, its even ones have not (8 run,
    gated, the rest wait under A's %8): B's odd tasks not made yet are QUEUED, its even ones
    PENDING, 260 separate ranges of B's list each way. `rnx job cancel --status=PENDING B_[0-3]`
    names four tasks (B_0 and B_2 PENDING) and `--status=QUEUED B_[2-9]` eight: each should
    cancel those of the state asked for among the tasks named. Both were refused (409 'its tasks
    not started yet whose own task completed are more than 256 separate ranges; cancel them by
    name in ranges (rnx job cancel ID_[LIST])') -- what the user did: the ranges of the whole
    array were gathered (corr_places) before the tasks named were looked at: now of those named
    only. (rnx exited 0 on that refusal, nothing canceled: with --status a 409 was said, not an
    error, as scancel -t's of a job gone on; a range limit's refusal now names its field, tasks,
    and is an error: test_review_hold_unmade.)"""
    odd = "1-519:2"
    a = run(d, f"--array={odd},0-518:2%8", "sh", "-c",
            f'[ $((SLURM_ARRAY_TASK_ID % 2)) = 1 ] || {{ {GATE}; }}')
    wait_for(lambda: counts(d, a).get("COMPLETED") == 260 and counts(d, a).get("RUNNING") == 8,
             "A's odd tasks complete, 8 even ones run", timeout=300)
    b = run(d, "--array=0-519%1", f"--after={a}:corr", "sh", "-c", GATE)
    bs = b[:8]
    wait_for(lambda: counts(d, b) == {"RUNNING": 1, "QUEUED": 259, "PENDING": 260}, "B's counts split")
    [first] = tasks_of(d, b)
    ran = first["array"]["task"]
    assert ran % 2 == 1, first
    r = d.rnx("job", "cancel", "--status=PENDING", f"{bs}_[0-3]")
    assert r.returncode == 0, (r.stdout, r.stderr)
    st = {t: d.job(f"{bs}_{t}")["status"] for t in (0, 2)}
    assert st == {0: "CANCELED", 2: "CANCELED"}, (st, r.stdout, r.stderr, counts(d, b))
    named = [t for t in range(2, 10) if t != ran]
    r = d.rnx("job", "cancel", "--status=QUEUED", f"{bs}_[2-9]")
    assert r.returncode == 0, (r.stdout, r.stderr)
    got = {t: d.job(f"{bs}_{t}")["status"] for t in named}
    # (the odd ones QUEUED, canceled; the even ones still PENDING; B_2 canceled before)
    assert got == {t: "CANCELED" if t % 2 or t == 2 else "PENDING" for t in named}, got
    assert d.proc.poll() is None, d.log()[-3000:]


# ---- the explorer ----

G = "while [ ! -e /work/go ]; do sleep 0.1; done; test ! -e /work/fail"
SEEDS = [int(s) for s in os.environ.get("CORR_SEEDS", "1,6,10").split(",")]
STEPS = int(os.environ.get("CORR_STEPS", "25"))


def alive(d, what=""):
    assert d.proc.poll() is None, f"joblet died after {what}:\n" + d.log()[-4000:]


def gate(d, jid, fail=False):
    work = d.work(jid)
    try:
        if fail:
            open(os.path.join(work, "fail"), "w").close()
        open(os.path.join(work, "go"), "w").close()
    except OSError:
        pass


@pytest.mark.parametrize("seed", SEEDS)
def test_corr_counts_explored_at_random(fresh_daemon, seed):
    """A random explorer (seeded, reproducible): one or two arrays named task by task (ranges, steps), a waiter with or without %N, held or not, submitted before or after some named tasks ended, sometimes a chain (C waits on the waiter by corr, %1); random steps: named tasks completing, failing, stopped, canceled before made, their jobs deleted; the waiter held and released whole and by task, tasks canceled by range and by --status=PENDING|QUEUED (a cancel by status takes only tasks that were in that state), its %N updated, tasks requeued, kill -9 and restart of joblet. After each step: joblet alive (at debug a drift of corr_ready aborts it), the counts equal the tally of every task's own status, and each task not made of an array not held is QUEUED exactly when its own task in every array named is kept and COMPLETED, else PENDING. All held in this review (seeds 1, 6, 10; about 35 s)."""
    d = fresh_daemon(LIMITS)
    rng = random.Random(seed)
    log = []

    def rnx(*args):
        p = d.rnx(*args)
        log.append((" ".join(args), p.returncode, (p.stdout.strip() + " | " + p.stderr.strip())[:160]))
        alive(d, args)
        return p

    def job(ref):
        code, j = d.api("GET", f"/v1/jobs/{ref}")
        alive(d, ref)
        return code, j

    # named arrays
    na = rng.choice([1, 1, 2])
    named = []
    for _ in range(na):
        lo = rng.randrange(0, 4)
        step = rng.choice([1, 1, 2])
        ids = list(range(lo, lo + step * rng.randrange(4, 9), step))
        spec = f"{ids[0]}-{ids[-1]}" + (f":{step}" if step > 1 else "")
        aid = rnx("job", "run", f"--array={spec}", "sh", "-c", G).stdout.strip()
        named.append((aid, ids))
    # waiter(s)
    bids = list(range(0, rng.randrange(6, 12)))
    thr = rng.choice(["", "%1", "%2"])
    hold = rng.random() < 0.3
    if rng.random() < 0.3:   # the waiter after some named tasks ended
        for aid, ids in named:
            wait_for(lambda: len(tasks_of(d, aid)) == len(ids), "A made")
            for t in rng.sample(ids, 2):
                gate(d, job(f"{aid[:8]}_{t}")[1]["id"])
        time.sleep(1)
    after = ",".join(f"{a}:corr" for a, _ in named)
    bargs = ["job", "run", f"--array=0-{bids[-1]}{thr}", f"--after={after}"] + (["--hold"] if hold else []) + ["sh", "-c", G]
    bid = rnx(*bargs).stdout.strip()
    waiters = [(bid, bids, [a for a, _ in named])]
    if rng.random() < 0.4:   # a chain: C waits on B task by task
        cid = rnx("job", "run", f"--array=0-{bids[-1]}%1", f"--after={bid}:corr", "sh", "-c", G).stdout.strip()
        waiters.append((cid, bids, [bid]))
    deleted = set()

    def own(aid, t):
        if (aid, t) in deleted:
            return "DELETED"
        code, j = job(f"{aid[:8]}_{t}")
        if code != 200:
            return "NONE"
        return j["status"] if j.get("made", True) else "UNMADE"

    def check_once(wid, wids, corr):
        code, b = job(wid)
        assert code == 200, b
        counts = b["array"]["counts"]
        held = b["array"]["held"]
        per, bad = {}, []
        for t in wids:
            code, j = job(f"{wid[:8]}_{t}")
            assert code == 200, j
            per[j["status"]] = per.get(j["status"], 0) + 1
            if j.get("made") is False and j["status"] in ("PENDING", "QUEUED") and not held:
                o = [own(a, t) for a in corr]
                want = "QUEUED" if all(x == "COMPLETED" for x in o) else "PENDING"
                if j["status"] != want:
                    bad.append((t, j["status"], want, o, j.get("wait_reason")))
        counts2 = job(wid)[1]["array"]["counts"]
        if per != counts:
            bad.append(("counts", per, counts, counts2))
        return bad, counts == counts2

    def check(step):
        for wid, wids, corr in waiters:
            for i in range(6):
                bad, stable = check_once(wid, wids, corr)
                if not bad:
                    break
                time.sleep(0.5)
            assert not bad, (step, wid[:8], bad, "\n".join(map(str, log[-15:])))

    def running_of(aid):
        return [j for j in tasks_of(d, aid) if j["status"] == "RUNNING"]

    allarr = [a for a, _ in named] + [w for w, _, _ in waiters]
    for step in range(STEPS):
        op = rng.choice(["endA", "endA", "endA", "failA", "cancelA", "stopA", "delA", "endB", "holdB", "relB",
                         "holdBt", "relBt", "cancelB", "cancelSt", "cancelSt", "kill9", "thr", "requeue"])
        aid, aids = rng.choice(named)
        wid, wids, _ = rng.choice(waiters)
        if op in ("endA", "failA"):
            r = running_of(aid)
            for j in rng.sample(r, min(len(r), rng.randrange(1, 3))):
                gate(d, j["id"], fail=op == "failA")
                log.append((f"end {j['id'][:8]} {aid[:8]}_{j['array']['task']} fail={op == 'failA'}",))
        elif op == "cancelA":
            t = rng.choice(aids)
            rnx("job", "cancel", f"{aid[:8]}_{t}")
        elif op == "stopA":
            r = running_of(aid)
            if r:
                rnx("job", "stop", r[0]["id"])
        elif op == "delA":
            ended = [j for j in tasks_of(d, aid) if j["status"] in TERMINAL]
            if ended:
                j = rng.choice(ended)
                p = rnx("job", "delete", f"{aid[:8]}_{j['array']['task']}")
                if p.returncode == 0:
                    deleted.add((aid, j["array"]["task"]))
        elif op == "endB":
            r = running_of(wid)
            if r:
                gate(d, rng.choice(r)["id"], fail=rng.random() < 0.3)
        elif op == "holdB":
            rnx("job", "hold", wid[:8])
        elif op == "relB":
            rnx("job", "release", wid[:8])
        elif op == "holdBt":
            lo = rng.choice(wids); hi = min(wids[-1], lo + rng.randrange(0, 3))
            rnx("job", "hold", f"{wid[:8]}_[{lo}-{hi}]")
        elif op == "relBt":
            lo = rng.choice(wids); hi = min(wids[-1], lo + rng.randrange(0, 3))
            rnx("job", "release", f"{wid[:8]}_[{lo}-{hi}]")
        elif op == "cancelB":
            lo = rng.choice(wids); hi = min(wids[-1], lo + rng.randrange(0, 2))
            rnx("job", "cancel", f"{wid[:8]}_[{lo}-{hi}]")
        elif op == "cancelSt":
            # the tasks let go by earlier steps end first: one that ends between the look before
            # and the cancel turns its waiter's task PENDING -> QUEUED, and a cancel of QUEUED then
            # rightly takes it (local run 164, under a whole run's load)
            for a in allarr:
                for j in running_of(a):
                    if os.path.exists(os.path.join(d.work(j["id"]), "go")):
                        wait_for(lambda: job(j["id"])[1].get("status") != "RUNNING", "a task let go ends")
            st = rng.choice(["PENDING", "QUEUED"])
            ref = wid[:8] if rng.random() < 0.5 else f"{wid[:8]}_[{rng.choice(wids)}-{rng.choice(wids) + 3}]"
            before = {t: job(f"{wid[:8]}_{t}")[1]["status"] for t in wids}
            p = rnx("job", "cancel", f"--status={st}", ref)
            after_ = {t: job(f"{wid[:8]}_{t}")[1]["status"] for t in wids}
            for t in wids:
                if before[t] != after_[t] and after_[t] == "CANCELED":
                    assert before[t] == st, ("cancel by status took another", t, before[t], st, ref, p.stdout, p.stderr)
        elif op == "kill9":
            d.kill9(); d.start()
            log.append(("restart",))
        elif op == "thr":
            rnx("job", "update", wid[:8], f"--throttle={rng.randrange(0, 3)}")
        elif op == "requeue":
            r = running_of(rng.choice(allarr))
            if r:
                rnx("job", "requeue", r[0]["id"])
        time.sleep(rng.choice([0, 0.2, 0.6]))
        check(step)
    # end: open every gate, release holds, all ends
    for _ in range(40):
        for a in allarr:
            rnx("job", "release", a[:8])
            for j in running_of(a):
                gate(d, j["id"])
        check("end")
        if all(job(a)[1]["status"] in TERMINAL for a in allarr):
            break
        time.sleep(1)
    check("final")
    assert "tasks kept as ready to go" not in d.log()
