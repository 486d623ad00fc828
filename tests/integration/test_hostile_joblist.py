"""A hostile local user against GET /v1/jobs (the job list): what one listing costs the loop at a
turn is bounded, not the whole table of jobs kept. Fails on ea8e40b, where a listing of every job
(or of an ended state) picked its jobs when the request came, looking at every job kept in one
piece, on the loop, for each request, even one of a user who has none of them (40,000 ended jobs:
2.5 ms a request; one user's 32 connections asking again and again made another user's
GET /v1/version 0.3 -> 190 ms), and held 8 bytes a job kept for each listing not read yet. Now
such a listing walks the table in seq order, looking at a bounded number of jobs a slice, a slice
a turn (api/jobs_list.c); its debug line says how many it looked at, in how many slices, and the
most in one."""
import re

from conftest import api_as, bulk_as

HOG, OTHER = 4361, 4362
KEPT = 2200          # jobs of root's kept: more than two slices' looks
SLICE_LOOKS = 1024   # api/jobs_list.c: JOBS_LIST_SLICE_LOOKS
WALK = re.compile(r"a listing(?: of (\w+))? looked at (\d+) jobs and (\d+) arrays, picked (\d+), in (\d+) slices "
                  r"of at most (\d+)")


def walk_line(d, seen):
    m = WALK.findall(d.log()[seen:])
    assert m, "no walk's line in joblet's log:\n" + d.log()[seen:][-2000:]
    state, looked, arrays, picked, slices, most = m[-1]
    return state, int(looked), int(arrays), int(picked), int(slices), int(most)


def test_a_listing_looks_at_a_bounded_slice_a_turn(fresh_daemon):
    d = fresh_daemon("limits:\n  max_queued_per_user: 0\n")
    # root's jobs kept, held (none runs): the table a listing walks
    out = bulk_as(d, 0, [["POST", "/v1/jobs", {"command": "true", "hold": True}]] * KEPT)
    assert all(code == 201 for code, _ in out), out[:3]
    mine = api_as(d, OTHER, "POST", "/v1/jobs", {"command": "true", "hold": True})
    assert mine[0] == 201, mine
    code, a = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-9", "hold": True})
    assert code == 201, a

    # a user who has none of them: an empty answer, got by looking a slice at a time
    seen = len(d.log())
    code, ans = api_as(d, HOG, "GET", "/v1/jobs")
    assert code == 200 and ans == {"jobs": []}, ans
    _, looked, arrays, picked, slices, most = walk_line(d, seen)
    assert (looked, arrays, picked) == (KEPT + 1, 1, 0)
    assert most <= SLICE_LOOKS and slices >= KEPT // SLICE_LOOKS + 1, (slices, most)

    # another user's own job alone, and root's every job, each once, in order
    seen = len(d.log())
    code, ans = api_as(d, OTHER, "GET", "/v1/jobs?fields=id")
    assert code == 200 and [j["id"] for j in ans["jobs"]] == [mine[1]["id"]], ans
    assert walk_line(d, seen)[3] == 1
    seen = len(d.log())
    code, ans = d.api("GET", "/v1/jobs?fields=id,kind", timeout=120)
    ids = [j["id"] for j in ans["jobs"]]
    assert code == 200 and len(ids) == len(set(ids)) == KEPT + 2, len(ids)
    assert ids[:KEPT] == [o["id"] for _, o in out] and ids[KEPT:] == [mine[1]["id"], a["id"]]
    _, looked, arrays, picked, slices, most = walk_line(d, seen)
    assert (looked, arrays, picked) == (KEPT + 1, 1, KEPT + 2) and most <= SLICE_LOOKS, (looked, most)

    # an ended state's listing walks the same: none of them ended
    seen = len(d.log())
    code, ans = api_as(d, HOG, "GET", "/v1/jobs?status=COMPLETED&expand=1")
    assert code == 200 and ans == {"jobs": []}, ans
    state, looked, _, _, _, most = walk_line(d, seen)
    assert state == "COMPLETED" and looked == KEPT + 1 and most <= SLICE_LOOKS


ARRAYS = 2200        # arrays of root's kept: more than two slices' looks


def test_a_waiting_states_listing_walks_the_arrays_a_slice_a_turn(fresh_daemon):
    """A listing of a waiting state (?status=RUNNING, the poll of a client waiting for its jobs)
    picks its jobs from the table's short lists, and walks the arrays kept a slice at a time: on
    5209d68 it looked at every array kept at the request, in one piece, for each request, even one
    of a user who has none (10,000 arrays kept, one user's 32 connections asking again and again
    made another user's GET /v1/version 0.4 -> 3.8 ms, growing with the arrays kept)."""
    d = fresh_daemon("limits:\n  max_queued_per_user: 0\n")
    out = bulk_as(d, 0, [["POST", "/v1/jobs", {"command": "true", "array": "0-1", "hold": True}]] * (ARRAYS // 2))
    assert all(code == 201 for code, _ in out), out[:3]
    job = d.api("POST", "/v1/jobs", {"command": "true", "hold": True})
    assert job[0] == 201, job
    more = bulk_as(d, 0, [["POST", "/v1/jobs", {"command": "true", "array": "0-1", "hold": True}]] * (ARRAYS // 2))
    assert all(code == 201 for code, _ in more), more[:3]
    arrays = [o["id"] for _, o in out + more]

    # a user who has none of them: an empty answer, the arrays looked at a slice at a time
    for state in ("RUNNING", "HELD", "QUEUED"):
        seen = len(d.log())
        code, ans = api_as(d, HOG, "GET", f"/v1/jobs?status={state}")
        assert code == 200 and ans == {"jobs": []}, ans
        got, looked, narrays, picked, slices, most = walk_line(d, seen)
        assert (got, narrays, picked) == (state, ARRAYS, 0), (got, narrays, picked)
        assert most <= SLICE_LOOKS and slices >= ARRAYS // SLICE_LOOKS + 1, (slices, most)

    # root's held: every array and the job, each once, in order
    seen = len(d.log())
    code, ans = d.api("GET", "/v1/jobs?status=HELD&fields=id", timeout=120)
    ids = [j["id"] for j in ans["jobs"]]
    assert code == 200 and ids == arrays[:ARRAYS // 2] + [job[1]["id"]] + arrays[ARRAYS // 2:], len(ids)
    _, looked, narrays, picked, _, most = walk_line(d, seen)
    assert (looked, narrays, picked) == (1, ARRAYS, ARRAYS + 1) and most <= SLICE_LOOKS, (looked, narrays, most)
    # none runs
    code, ans = d.api("GET", "/v1/jobs?status=RUNNING")
    assert code == 200 and ans == {"jobs": []}, ans
