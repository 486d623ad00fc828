"""A hostile local user naming an array's tasks with a step other than its ranges' (`rnx job cancel
ID_[0-3999998:2]`): what one request costs the loop is the tasks it names, not the span of the
array's list times its ranges. Fails on 102d722, where core/arrays.c's stepped_pieces walked, for
each range of the array's list, every id the reference names in that range's span one by one,
most of them not that range's: an array of 0-3999998:2 and 53 ranges of two odd ids each spanning
the whole list (1,016 bytes) made one cancel of ID_[0-3999998:2] look at 106 million ids, 300 ms
of the loop, and 32 of them in a row another user's GET /v1/version 0.5 -> 290 ms for 10 s (a
second cancel of the same tasks looked at them all again to say none was left). Now the ids two
progressions share are found lcm apart; its debug line says how many ids were looked at one by
one. Real daemon, a uid of no account (setpriv)."""
import re

from conftest import api_as

HOG = 4371
CFG = "limits:\n  max_queued_per_user: 5000000\n  max_jobs_per_user: 5000000\n"
LOOKED = re.compile(r"array (\S+): the tasks named with a step other than their ranges' looked at (\d+) ids one by one")


def looked(d, seen, aid):
    m = [int(n) for a, n in LOOKED.findall(d.log()[seen:]) if a == aid]
    assert m, "no line of the ids looked at in joblet's log:\n" + d.log()[seen:][-2000:]
    return m[-1]


def counts(d, aid):
    return d.job(aid)["array"]["counts"]


def wide_spec():
    """0-3999998:2 and as many ranges of two odd ids each, spanning the whole list, as 1,024 bytes
    of a list take: (the list, how many odd ids)."""
    spec, k = "0-3999998:2", 0
    while len(spec + f",{2 * k + 1}-{3999999 - 2 * k}:{3999998 - 4 * k}") <= 1024:
        spec += f",{2 * k + 1}-{3999999 - 2 * k}:{3999998 - 4 * k}"
        k += 1
    return spec, 2 * k


def test_a_step_across_an_arrays_wide_ranges_looks_at_the_tasks_named_alone(fresh_daemon):
    d = fresh_daemon(CFG)
    spec, odd = wide_spec()
    code, a = api_as(d, HOG, "POST", "/v1/jobs", {"command": "true", "array": spec, "hold": True})
    assert code == 201, a
    aid = a["id"]
    for n in range(2):  # the second: none left to cancel, found as cheaply
        seen = len(d.log())
        code, ans = api_as(d, HOG, "POST", f"/v1/jobs/{aid}_[0-3999998:2]/cancel")
        assert code == (200 if n == 0 else 409), ans
        assert looked(d, seen, aid) == 0      # the evens: one run; the odd ranges: none of them named
    assert counts(d, aid) == {"HELD": odd, "CANCELED": 2000000}


def test_ids_named_across_ranges_of_another_step_are_each_found_once(fresh_daemon):
    d = fresh_daemon(CFG)
    code, a = api_as(d, HOG, "POST", "/v1/jobs", {"command": "true", "array": "0-98:2,1-99:2", "hold": True})
    assert code == 201, a
    aid = a["id"]
    seen = len(d.log())
    code, ans = api_as(d, HOG, "POST", f"/v1/jobs/{aid}_[0-99:3]/cancel")
    assert code == 200, ans
    assert looked(d, seen, aid) == 34           # 0, 6, ..., 96 of the evens; 3, 9, ..., 99 of the odds
    assert counts(d, aid) == {"HELD": 66, "CANCELED": 34}
    code, got = d.api("GET", f"/v1/jobs/{aid}_[0-99]")
    assert code == 200, got
    canceled = sorted(t["task"] if "task" in t else t["array"]["task"] for t in got["tasks"] if t["status"] == "CANCELED")
    assert canceled == list(range(0, 100, 3)), canceled
