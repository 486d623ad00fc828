"""Tasks made out of their array's list order (arrays.h: `ahead`), of a list whose ranges
interleave (`--array=0-800:2,1-801:2`: the ids between two tasks of one range are the other's).
An array held whole, tasks released from the hold one by one (rnx job release ID_[...]) are made
ahead of the list's cursor (task 0 stays held): each must run, once, however many they are, and
a release that could not be kept so is refused up front (409), never left QUEUED for ever."""
from conftest import tasks_of, wait_for

CFG = "limits:\n  max_queued_per_user: 5000\n  max_jobs_per_user: 5000\n"


def counts(d, aid):
    return d.job(aid)["array"]["counts"]


def done_tasks(d, aid):
    return sorted(t["array"]["task"] for t in tasks_of(d, aid) if t["status"] == "COMPLETED")


def test_tasks_released_of_an_interleaved_list_are_all_made_once(fresh_daemon):
    """300 tasks of the first range (2-600:2) and 21 of the second (1-41:2) released: ahead kept
    ids 2, 4, ... one range each (3, 5, ... between them are tasks of the other range, not made),
    so after 256 of them (ARRAYSPEC_MAX_RANGES) none more was made: the other 65 waited QUEUED for
    ever. Every released task runs exactly once, over a kill -9 midway too; the others stay held;
    released whole, each of them runs once."""
    d = fresh_daemon(CFG)
    aid = d.rnx("job", "run", "--hold", "--array=0-800:2,1-801:2", "true", check=True).stdout.split()[-1]
    ref = aid[:8]
    want = list(range(2, 601, 2)) + list(range(1, 42, 2))
    try:
        d.rnx("job", "release", f"{ref}_[2-600:2,1-41:2]", check=True)
        wait_for(lambda: counts(d, aid).get("COMPLETED", 0) >= 100, "100 of the tasks released to complete", 120)
        d.kill9()
        d.start()
        try:
            wait_for(lambda: counts(d, aid).get("COMPLETED") == len(want), "the 321 tasks released to complete", 180)
        except AssertionError:
            raise AssertionError(f"the tasks released did not all complete: {counts(d, aid)}")
        assert counts(d, aid) == {"COMPLETED": 321, "HELD": 802 - 321}, counts(d, aid)
        assert done_tasks(d, aid) == sorted(want)   # each once: no task made twice
        # kept over a second kill -9 (what was made ahead: two ranges), the rest held, made once
        d.kill9()
        d.start()
        assert counts(d, aid) == {"COMPLETED": 321, "HELD": 802 - 321}, counts(d, aid)
        d.rnx("job", "release", aid, check=True)
        try:
            wait_for(lambda: counts(d, aid) == {"COMPLETED": 802}, "every task to run once released whole", 300)
        except AssertionError:
            left = [(t["array"]["task"], t["status"]) for t in tasks_of(d, aid) if t["status"] != "COMPLETED"]
            raise AssertionError(f"released whole, the tasks did not all complete: {counts(d, aid)}; "
                                 f"{d.job(aid)['array']}; made and not completed: {left[:20]}\n{d.log()[-4000:]}")
        assert done_tasks(d, aid) == list(range(802))
    finally:
        d.rnx("job", "cancel", aid)


def test_a_release_that_ahead_cannot_keep_is_refused_up_front(fresh_daemon):
    """Tasks 4-5, 12-13, ... 1196-1197 canceled before they were made (150 ranges): released
    whole but task 0, the tasks left would be made ahead of the cursor in some 300 runs, more than
    ahead keeps: refused (409, nothing changed), not made until ahead is full and the rest left
    QUEUED. A smaller release goes, each of its tasks made once; the others stay held."""
    d = fresh_daemon(CFG)
    aid = d.rnx("job", "run", "--hold", "--array=0-2000:2,1-2001:2", "true", check=True).stdout.split()[-1]
    ref = aid[:8]
    try:
        p = d.rnx("job", "cancel", f"{ref}_[4-1196:8,5-1197:8]")
        assert p.returncode == 0, p.stderr
        assert counts(d, aid) == {"CANCELED": 300, "HELD": 2002 - 300}, counts(d, aid)
        code, r = d.api("POST", f"/v1/jobs/{aid}_[1-2001]/release")
        assert code == 409 and "ranges ahead" in r["error"]["message"] and "nothing changed" in r["error"]["message"], (code, r)
        p = d.rnx("job", "release", f"{ref}_[1-2001]")
        assert p.returncode != 0 and "ranges ahead" in p.stderr, (p.stdout, p.stderr)
        assert d.job(aid)["array"]["released"] is None
        assert counts(d, aid) == {"CANCELED": 300, "HELD": 2002 - 300}, counts(d, aid)
        # 2-100 and 1-99 less those canceled: 13 + 13 runs, kept
        d.rnx("job", "release", f"{ref}_[1-100]", check=True)
        want = sorted(t for t in range(1, 101) if t % 8 not in (4, 5))
        wait_for(lambda: counts(d, aid).get("COMPLETED") == len(want), "the tasks released to complete", 120)
        assert done_tasks(d, aid) == want
        assert counts(d, aid) == {"COMPLETED": len(want), "CANCELED": 300, "HELD": 2002 - 300 - len(want)}
    finally:
        d.rnx("job", "cancel", aid)


def test_a_cancel_that_would_leave_released_tasks_unkept_is_refused(fresh_daemon):
    """Released whole but task 0 (two runs, kept), the tasks waiting for their --schedule time: a
    cancel of tasks 4-5, 12-13, ... between them would cut those runs into some 300, more than
    ahead keeps once they are made: refused (409, nothing canceled), not left QUEUED for ever. A
    cancel of a few goes."""
    d = fresh_daemon(CFG)
    aid = d.rnx("job", "run", "--hold", "--schedule=1h", "--array=0-2000:2,1-2001:2", "true",
                check=True).stdout.split()[-1]
    ref = aid[:8]
    try:
        d.rnx("job", "release", f"{ref}_[1-2001]", check=True)
        assert counts(d, aid) == {"SCHEDULED": 2001, "HELD": 1}, counts(d, aid)
        code, r = d.api("POST", f"/v1/jobs/{aid}_[4-1196:8,5-1197:8]/cancel")
        assert code == 409 and "ranges ahead" in r["error"]["message"], (code, r)
        assert counts(d, aid) == {"SCHEDULED": 2001, "HELD": 1}, counts(d, aid)
        d.rnx("job", "cancel", f"{ref}_[4-40:8,5-41:8]", check=True)
        assert counts(d, aid) == {"SCHEDULED": 2001 - 10, "HELD": 1, "CANCELED": 10}, counts(d, aid)
    finally:
        d.rnx("job", "cancel", aid)
