"""GET /v1/events (docs/api.md, "Events"): the console's live feed of job, workflow and GPU
changes as server-sent events, per caller, bounded."""
import json
import os
import time

from conftest import ROOT, fake_nvml_daemon, rnx_as
from sse import Stream

FIX = os.path.join(ROOT, "tests", "fixtures")
UID = 4322


def dgx(fresh_daemon, extra=""):
    return fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n{extra}")


def job_is(jid, status):
    return lambda k, v: k == "job" and v["id"] == jid and v["status"] == status


def test_a_job_and_its_gpu_change_on_the_stream(fresh_daemon):
    """hello first; then the job's QUEUED, RUNNING, the GPU allocated to it, its STOPPED and the
    GPU available again, in the order they happened, with increasing ids."""
    d = dgx(fresh_daemon)
    s = Stream(d.sock)
    assert s.status == 200 and s.headers["content-type"] == "text/event-stream"
    assert s.next()[0] == "hello"
    jid = d.rnx("job", "run", "--gpu=1", "sleep", "600", check=True).stdout.split()[-1]
    seen = s.until(job_is(jid, "RUNNING"))
    seen += s.until(lambda k, v: k == "gpu" and v["job"] == jid) if not any(k == "gpu" for k, _, _ in seen) else []
    gpu = next(v for k, v, _ in seen if k == "gpu")
    assert gpu["state"] == "allocated" and gpu["job"] == jid
    running = next(v for k, v, _ in seen if k == "job" and v["status"] == "RUNNING")
    assert running["gpus"] == [gpu["index"]] and running["user"] == 0
    d.rnx("job", "stop", jid, check=True)
    more = s.until(lambda k, v: k == "gpu" and v["index"] == gpu["index"] and v["state"] == "available")
    stopped = [v for k, v, _ in more if k == "job" and v["status"] == "STOPPED"]
    assert stopped and stopped[0]["end_reason"] == "stopped"
    ids = [int(i) for _, _, i in seen + more]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    s.close()


def test_a_gpu_drained_by_an_admin_is_published(fresh_daemon):
    d = dgx(fresh_daemon)
    s = Stream(d.sock)
    s.next()
    d.rnx("gpu", "drain", "3", check=True)
    ev = s.until(lambda k, v: k == "gpu" and v["index"] == 3)[-1][1]
    assert ev["state"] == "draining" and not ev["takes_jobs"]
    d.rnx("gpu", "online", "3", check=True)
    assert s.until(lambda k, v: k == "gpu" and v["index"] == 3)[-1][1]["state"] == "available"


def test_a_user_sees_only_own_jobs_and_the_gpus(fresh_daemon):
    d = dgx(fresh_daemon)
    mine = Stream(d.sock, uid=UID)
    assert mine.next()[0] == "hello"
    root_job = d.rnx("job", "run", "--gpu=1", "sleep", "600", check=True).stdout.split()[-1]
    p = rnx_as(d, UID, "job", "run", "sleep", "600")
    assert p.returncode == 0, p.stderr
    user_job = p.stdout.split()[-1]
    seen = mine.until(job_is(user_job, "RUNNING"))
    seen += mine.drain(1)
    jobs = {v["id"] for k, v, _ in seen if k == "job"}
    assert jobs == {user_job}
    # the GPU view is everyone's, but not another user's job id (docs/gpu.md, "Who sees what")
    assert any(k == "gpu" and v["job"] is None and v.get("another_users_job") for k, v, _ in seen)
    assert not any(root_job in json.dumps(v) for k, v, _ in seen)
    d.rnx("job", "stop", root_job, user_job)


def test_streams_are_bounded_per_user_and_in_total(fresh_daemon):
    d = dgx(fresh_daemon, "events:\n  max_streams_per_user: 2\n  max_streams: 3\n")
    a, b = Stream(d.sock, uid=UID), Stream(d.sock, uid=UID)
    c = Stream(d.sock, uid=UID)
    assert (a.status, b.status, c.status) == (200, 200, 429)
    assert "max_streams_per_user" in c.error["error"]["message"]
    other = Stream(d.sock, uid=UID + 1)
    assert other.status == 200
    full = Stream(d.sock, uid=UID + 2)
    assert full.status == 503 and "events.max_streams" in full.error["error"]["message"]
    assert d.metric("joblet_console_streams") == 3
    # a stream whose client hangs up is gone at once, its place free again
    a.close()
    for _ in range(50):
        e = Stream(d.sock, uid=UID)
        if e.status == 200:
            break
        time.sleep(0.05)
    assert e.status == 200
    assert e.next()[0] == "hello"


def test_a_stream_far_behind_resyncs(fresh_daemon):
    """A client that comes back after more than the bound of events gets one resync event, not
    what it missed; one that missed a few gets them."""
    d = dgx(fresh_daemon)
    s = Stream(d.sock)
    s.next()
    last = 0
    while last < 2:  # (last_id 0 is none: a job whose changes fell in one turn is event 1 alone)
        first = d.rnx("job", "run", "true", check=True).stdout.split()[-1]
        ev = s.until(job_is(first, "COMPLETED"))
        last = int(ev[-1][2])
    near = Stream(d.sock, last_id=last - 1)
    k, v, i = near.next()
    assert k == "job" and int(i) == last and v["status"] == "COMPLETED"
    # more than 512 events: jobs that run `true` are submitted until that many went by (a job
    # makes up to three, fewer when its changes fall in one turn of the loop)
    newest = last
    deadline = time.time() + 120
    batch = 260
    while newest <= last + 520 and time.time() < deadline:
        for _ in range(batch):
            d.api("POST", "/v1/jobs", {"command": "true"})
        batch = 20
        try:
            while newest <= last + 520:
                newest = int(s.next(timeout=3)[2] or newest)
        except TimeoutError:
            pass   # what these made went by: more jobs
    assert newest > last + 520
    far = Stream(d.sock, last_id=last)
    kind, data, _ = far.next(timeout=10)
    assert kind == "resync" and data["last_id"] >= newest


def test_deleted_jobs_and_a_daemon_stopping(fresh_daemon):
    """A deleted job is published; a daemon stopping ends its open streams and exits at once."""
    d = dgx(fresh_daemon)
    s = Stream(d.sock)
    s.next()
    jid = d.rnx("job", "run", "true", check=True).stdout.split()[-1]
    s.until(job_is(jid, "COMPLETED"))
    d.rnx("job", "delete", jid, check=True)
    assert s.until(lambda k, v: k == "job_deleted")[-1][1] == {"id": jid}
    other = Stream(d.sock, uid=UID)
    other.next()
    t = time.time()
    d.stop()
    assert d.proc.returncode == 0 and time.time() - t < 18   # (at once, not after the streams' keep-alive)
    for st in (s, other):
        try:
            while True:
                st.next(timeout=5)
        except EOFError:
            pass


def test_other_users_events_do_not_push_a_stream_behind(fresh_daemon):
    """A user's idle stream is not resynced by the 520+ events (more than the bound) it may not see."""
    d = dgx(fresh_daemon)
    mine = Stream(d.sock, uid=UID)
    assert mine.next()[0] == "hello"
    s = Stream(d.sock)
    s.next()
    newest = 0
    deadline = time.time() + 90
    while newest < 520 and time.time() < deadline:   # root's jobs until 520 events went by
        for _ in range(50):
            d.api("POST", "/v1/jobs", {"command": "true"})
        for _, _, i in s.drain(1):
            newest = max(newest, int(i or 0))
    assert newest >= 520
    p = rnx_as(d, UID, "job", "run", "true")
    assert p.returncode == 0, p.stderr
    user_job = p.stdout.split()[-1]
    seen = mine.until(job_is(user_job, "COMPLETED"))
    assert all(k == "job" and v["id"] == user_job for k, v, _ in seen), [k for k, _, _ in seen]


def test_gpu_samples_on_the_stream_follow_the_driver(fresh_daemon, tmp_path):
    """GPU health samples (docs/api.md, "Events": gpu_sample), as the console's sparklines draw
    them: on the fake NVML, sampled every 200 ms, each GPU's sample comes to every caller, with the
    driver's figures, and follows what the driver says next. (The sanitizer pass reached this event
    nowhere else: test_gpu_guide and test_console_browser run in the normal pass only.)"""
    d, machine, events = fake_nvml_daemon(fresh_daemon, tmp_path)
    with open(machine) as f:
        driver = {g["index"]: g for g in json.load(f)["gpus"]}
    keys = ("temperature_c", "utilization_pct", "memory_used_mb", "power_w")
    for s in (Stream(d.sock), Stream(d.sock, uid=UID)):            # root and a user: the GPU view is everyone's
        assert s.next()[0] == "hello"
        got = {}

        def every_gpus(k, v):
            if k == "gpu_sample":
                got.setdefault(v["index"], v)
            return len(got) == 8
        s.until(every_gpus, timeout=30)
        assert sorted(got) == list(range(8)), sorted(got)
        for i, v in got.items():
            assert set(v) == {"index", "t", *keys}, v
            assert v["t"] > 0
            assert [v[k] for k in keys] == [driver[i][k] for k in keys], (i, v, driver[i])
        s.close()
    # what the driver says next, the next samples say
    s = Stream(d.sock)
    assert s.next()[0] == "hello"
    with open(events, "a") as f:
        f.write("temp 4 91\nutil 4 12\n")
    v = s.until(lambda k, v: k == "gpu_sample" and v["index"] == 4 and v["temperature_c"] == 91, timeout=30)[-1][1]
    assert v["utilization_pct"] == 12, v
    s.close()
