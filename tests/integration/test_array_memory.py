"""What a kept job array costs the daemon's memory (core/arrays.h: jarray): a plain "0-99" array
held keeps its object, its request and its row, and its task lists only as large as the ranges
they hold (a list of 256 ranges is 3 KB: an array used to keep four of them whole, 12 KB whatever
it held). 2,000 held arrays, one request each, against the real daemon: its RSS grows by less than
4 KB an array (docs/performance.md: 14.2 KB before, 1.8 KB since)."""
import os

from conftest import submit_array
from test_arrays import rss_kb

N = 2000
WARM = 200
# every array's 100 tasks wait (held): the user may keep them all
LIMITS = "limits:\n  max_queued_per_user: 1000000\n  max_jobs_per_user: 1000000\n"


def held_arrays(d, n):
    ids = []
    for _ in range(n):
        a = submit_array(d, "0-99", "/bin/true", hold=True)
        assert a["status"] == "HELD" and a["array"]["made"] == 0, a
        ids.append(a["id"])
    return ids


def test_a_kept_held_array_costs_under_4_kb(fresh_daemon):
    d = fresh_daemon(LIMITS)
    pid = d.api("GET", "/v1/version")[1]["pid"]
    # warm the paths a submission takes, and the database's page cache (bounded: 1 MB)
    held_arrays(d, WARM)
    rss0 = rss_kb(pid)
    ids = held_arrays(d, N)
    rss1 = rss_kb(pid)
    per = (rss1 - rss0) * 1024 / N
    print(f"{N} held arrays of 0-99: daemon RSS {rss0} -> {rss1} KB (+{rss1 - rss0} KB), {per:.0f} bytes an array")
    # each is listed as one, held, none of its tasks made
    code, lst = d.api("GET", "/v1/jobs")
    assert code == 200
    arrays = {j["id"]: j for j in lst["jobs"] if j.get("kind") == "array"}
    assert len(arrays) == N + WARM
    for aid in ids[:: N // 20]:
        a = arrays[aid]
        assert a["status"] == "HELD" and a["array"]["tasks"] == 100 and a["array"]["counts"] == {"HELD": 100}, a
    # (a sanitizer build's RSS is its allocator's quarantine and shadow memory, not the daemon's)
    if os.environ.get("JOBLET_PASS") != "sanitizers":
        assert per < 4096, (rss0, rss1, per)
    # released task by task and canceled: the lists written after a held array's are kept too
    aid = ids[0]
    d.rnx("job", "release", f"{aid}_[3-5]", check=True)
    d.rnx("job", "cancel", f"{aid}_[90-99]", check=True)
    a = d.job(aid)["array"]
    assert a["released"] == "3-5" and a["counts"].get("CANCELED") == 10, a
    assert sum(a["counts"].values()) == 100, a
