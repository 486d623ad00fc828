"""Tasks of an array named by a long list, as a demanding Slurm user writes `scancel
123_[1,5,9,...]`: a reference ID_[LIST] was at most 128 bytes (some 30 tasks), refused past that
as "no job '…': an id, a prefix or a name is at most 128 bytes". Its list may now be as long as
256 ranges take (6,400 bytes); past that, or past 256 ranges, it is refused naming the field and
the bound, nothing done. Real daemon, real rnx."""
from conftest import wait_for

CFG = "limits:\n  max_queued_per_user: 5000000\n  max_jobs_per_user: 5000000\n"


def counts(d, aid):
    return d.job(aid)["array"]["counts"]


def test_a_long_list_of_tasks_is_one_reference(fresh_daemon):
    d = fresh_daemon(CFG)
    aid = d.submit("true", array="0-3999999", hold=True)
    ref = aid[:8]
    # Slurm's style: 200 single tasks, 4 apart (1,5,9,...): 771 bytes
    singles = ",".join(str(1 + 4 * k) for k in range(200))
    p = d.rnx("job", "cancel", f"{ref}_[{singles}]")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("canceled 200 tasks of array"), p.stdout[:300]
    assert counts(d, aid) == {"HELD": 4000000 - 200, "CANCELED": 200}
    d.rnx("job", "cancel", ref, check=True)
    # 256 ranges of 7-digit ids with a step, 4,600 bytes: one reference, kept as 256 ranges
    aid = d.submit("true", array="0-3999995:5", hold=True)
    ref = aid[:8]
    ranges = ",".join(f"{3000000 + 1000 * k}-{3000000 + 1000 * k + 500}:5" for k in range(256))
    assert 4096 < len(ranges) < 6400
    p = d.rnx("job", "cancel", f"{ref}_[{ranges}]")
    assert p.returncode == 0, p.stderr
    assert counts(d, aid) == {"HELD": 800000 - 256 * 101, "CANCELED": 256 * 101}
    # the array's history says it in whole items, the count kept: cut to fit mid-number, it said
    # "tasks ...,3041000-30415" (a range never named) and lost ", 25856 of them"
    det = next(det for ev, det in d.events(aid) if ev == "stopping")
    assert det.endswith(f"named, {256 * 101} of them"), det[-200:]
    listed = det.split("tasks ", 1)[1].rsplit(" named, ", 1)[0]
    assert listed.endswith(",...") and len(listed) < len(ranges), listed[-100:]
    assert ranges.startswith(listed[:-len(",...")] + ","), listed[-100:]
    # seen by status too: each task named is looked at (at most 1,000 listed)
    code, got = d.api("GET", f"/v1/jobs/{aid}_[{ranges}]")
    assert code == 200 and got["truncated"] and len(got["tasks"]) == 1000, (code, str(got)[:300])
    assert all(t["status"] == "CANCELED" for t in got["tasks"]), str(got)[:300]
    before = counts(d, aid)
    # 257 ranges: refused naming the field and the bound, nothing canceled
    over = ",".join(str(2000000 + 5 * k) for k in range(257))
    p = d.rnx("job", "cancel", f"{ref}_[{over}]")
    assert p.returncode != 0 and "tasks: more than 256 ranges" in p.stderr, p.stderr
    # past 6,400 bytes, both where joblet reads it whole and where it reads no further
    for n in (810, 1000):
        long_list = ",".join(str(2000000 + 5 * k) for k in range(n))
        assert len(long_list) > 6400
        code, e = d.api("POST", f"/v1/jobs/{aid}_[{long_list}]/cancel")
        msg = e["error"]["message"]
        assert code == 400 and e["error"].get("field") == "tasks", (code, e)
        assert msg.startswith("tasks: the list of tasks named") and "at most 6400 are read" in msg, msg
        assert f"is {len(long_list)} bytes" in msg, msg
        p = d.rnx("job", "hold", f"{ref}_[{long_list}]")
        assert p.returncode != 0 and "at most 6400 are read" in p.stderr, p.stderr
    assert counts(d, aid) == before
    # a plain reference is still at most 128 bytes
    code, e = d.api("GET", "/v1/jobs/" + "x" * 200)
    assert code == 404 and "at most 128 bytes" in e["error"]["message"], (code, e)
    d.rnx("job", "cancel", ref, check=True)
    wait_for(lambda: counts(d, aid) == {"CANCELED": 800000}, "the array canceled")
