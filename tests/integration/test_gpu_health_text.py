"""GPU health as rnx prints it (issue 15, "health in text"): `rnx gpu show` prints the live
sample, the state with since when and why, HOT, the last XIDs, ECC and remapped-row counts;
`rnx gpu list` marks hot and out-of-service GPUs; a job a GPU fault ended says which GPU, which
XID or admin command, and by whom (kept across a restart); a request for a GPU that is not in
service names it; `rnx audit` is newest first with --limit, --since and --until.

Samples, XIDs and ECC counters come from the fake NVML (FAKE_NVML_EVENTS lines, see
tests/fakes/fake_nvml.c) through the daemon's real health monitor; the admin and audit tests
that need no monitor use a simulated machine (gpu.fixture)."""
import calendar
import json
import os
import re
import time

import pytest

from conftest import ROOT, wait_for
from gpu_nodes import FAKE_NVML
from test_gpu_health import health_machine, run_on  # noqa: F401 (a fixture)

FIX = os.path.join(ROOT, "tests", "fixtures")


def local(rfc3339):
    """An API time as rnx prints it (fmt_local_time): local "YYYY-MM-DD HH:MM:SS"."""
    t = calendar.timegm(time.strptime(rfc3339[:19], "%Y-%m-%dT%H:%M:%S"))
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def ms(rfc3339):
    """An API time ("2026-11-22T15:00:00.123Z") in milliseconds since the epoch."""
    return calendar.timegm(time.strptime(rfc3339[:19], "%Y-%m-%dT%H:%M:%S")) * 1000 + int(rfc3339[20:23])


def kv(out):
    """rnx gpu show's "Key:   value" lines as a dict (the first of each key)."""
    d = {}
    for line in out.splitlines():
        m = re.match(r"^([A-Z][A-Za-z ()]*:) +(.*)$", line)
        if m and m.group(1) not in d:
            d[m.group(1)] = m.group(2)
    return d


def list_rows(out):
    """rnx gpu list's table rows by index: the columns as printed (two or more spaces apart)."""
    rows = {}
    for line in out.splitlines():
        if re.match(r"^\d+\s{2,}", line):
            cells = re.split(r"\s{2,}", line.strip())
            rows[int(cells[0])] = cells
    return rows


def wait_health(m, i, pred, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        g = m.gpu(i)
        if "health" in g and pred(g["health"]):
            return g
        time.sleep(0.05)
    raise AssertionError(f"GPU {i}'s health never matched: {m.gpu(i)}")


def end_reason(d, jid):
    out = d.rnx("job", "status", jid, check=True).stdout
    m = re.search(r"^End reason: +(.*)$", out, re.M)
    assert m, out
    return m.group(1)


needs_nvml = pytest.mark.skipif(not os.path.exists(FAKE_NVML), reason="the fake NVML was not built")

# what GET /v1/gpus/{gpu} had before the live sample joined it: still there, same names
OLD_GPU_KEYS = {"index", "uuid", "name", "bus_id", "memory_total_mb", "memory_used_mb", "utilization_pct",
                "temperature_c", "power_w", "state", "takes_jobs", "job", "health"}
OLD_HEALTH_KEYS = {"temperature_c", "utilization_pct", "memory_used_mb", "power_w", "hot", "ecc_sbe_events",
                   "ecc_dbe_events", "xid", "throttle_reasons", "remapped_rows", "ecc_sbe_total", "ecc_dbe_total"}


@needs_nvml
def test_gpu_show_prints_the_live_sample(health_machine):
    m = health_machine()
    # the monitor's first sample, not the figure discovery read (labelled "(at discovery)" until then:
    # under the sanitizers the first sample can come after the first `gpu show`)
    wait_health(m, 1, lambda h: h.get("sampled_at"))
    before = kv(m.d.rnx("gpu", "show", "1", check=True).stdout)
    assert before["Temperature:"] == f"{m.gpus[1]['temperature_c']} C" and before["State:"] == "available"
    assert before["Last XIDs:"] == "none since joblet started"
    m.inject("temp 1 90\nutil 1 77\npower 1 250\nmemused 1 30000\nthrottle 1 0x44\nremap 1 3\n"
             "ecc_past 1 12,1\necc 1 sbe\necc 1 sbe\nxid 1 13")
    g = wait_health(m, 1, lambda h: h["temperature_c"] == 90 and h["ecc_sbe_total"] == 2 and h["xid"] == {"13": 1}
                    and h["remapped_rows"] == 3 and h["memory_used_mb"] == 30000)
    h = g["health"]
    # the JSON: a superset of what it was, the top-level numbers now the live ones
    assert OLD_GPU_KEYS <= set(g) and OLD_HEALTH_KEYS <= set(h)
    assert (g["temperature_c"], g["utilization_pct"], g["memory_used_mb"], g["power_w"]) == (90, 77, 30000, 250)
    assert h["throttle_reasons"] == 0x44 and h["throttle_reason_names"] == ["sw_power_cap", "hw_thermal_slowdown"]
    assert (h["ecc_sbe_total"], h["ecc_dbe_total"], h["ecc_sbe_aggregate"], h["ecc_dbe_aggregate"]) == (2, 0, 14, 1)
    assert (h["remapped_rows_correctable"], h["remapped_rows_uncorrectable"], h["remap_pending"],
            h["remap_failure"]) == (0, 3, True, False)
    assert h["hot"] is True and h["max_temperature_c"] == 85 and g["takes_jobs"] is False
    (x,) = h["recent_xids"]
    assert (x["xid"], x["meaning"], x["action"]) == (13, "graphics engine exception (an application error)", "app")
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", h["sampled_at"])

    out = m.d.rnx("gpu", "show", "1", check=True).stdout
    s = kv(out)
    assert s["Temperature:"] == "90 C"
    assert s["Utilization:"] == "77 %"
    assert s["Memory:"] == "30000 / 40960 MiB"
    assert s["Power:"] == "250 W"
    assert s["Throttle reasons:"] == "sw_power_cap, hw_thermal_slowdown"
    assert s["State:"] == "available, HOT (90 C, above gpu.max_temperature_c 85: no new jobs until it cools to 80 C)"
    assert s["Takes new jobs:"] == "no"
    assert s["ECC (volatile):"] == "2 corrected, 0 uncorrected (since the driver loaded)"
    assert s["ECC (aggregate):"] == "14 corrected, 1 uncorrected (the board's lifetime)"
    assert s["Remapped rows:"] == "0 correctable, 3 uncorrectable; a remapping waits for the GPU's next reset"
    assert re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", s["Sampled at:"]), s
    lines = out.splitlines()
    i = lines.index("Last XIDs:")
    assert lines[i + 1] == (f"  {local(x['time'])}  XID 13   graphics engine exception (an application error); "
                            "action: app")
    # the list: the live temperature, and HOT in the state column
    rows = list_rows(m.d.rnx("gpu", "list", check=True).stdout)
    assert rows[1][4] == "90C" and rows[1][5] == "available, HOT 90C", rows[1]
    assert rows[0][5] == "available"
    # --json is the API's object
    assert json.loads(m.d.rnx("gpu", "show", "--json", "1", check=True).stdout)["health"]["hot"] is True
    # it cools: HOT goes away again
    m.inject("temp 1 70")
    wait_health(m, 1, lambda h: not h["hot"])
    assert kv(m.d.rnx("gpu", "show", "1", check=True).stdout)["State:"] == "available"


@needs_nvml
def test_list_and_show_name_out_of_service_gpus(health_machine):
    m = health_machine()
    m.inject("xid 2 79")
    g2 = m.wait_gpu(2, "offline")
    m.d.rnx("gpu", "drain", "3", check=True)
    g3 = m.gpu(3)
    m.inject("temp 0 91")
    wait_health(m, 0, lambda h: h["hot"])
    rows = list_rows(m.d.rnx("gpu", "list", check=True).stdout)
    assert [rows[i][5] for i in range(4)] == ["available, HOT 91C", "available", "offline (XID 79)",
                                              "draining (drained by uid 0)"], rows
    s = kv(m.d.rnx("gpu", "show", "2", check=True).stdout)
    assert s["State:"] == f"offline since {local(g2['state_since'])} (XID 79: GPU has fallen off the bus)"
    assert s["Takes new jobs:"] == "no"
    out = m.d.rnx("gpu", "show", "2", check=True).stdout.splitlines()
    x = g2["health"]["recent_xids"][0]
    assert out[out.index("Last XIDs:") + 1] == f"  {local(x['time'])}  XID 79   GPU has fallen off the bus; action: offline"
    assert kv(m.d.rnx("gpu", "show", "3", check=True).stdout)["State:"] == \
        f"draining since {local(g3['state_since'])} (drained by uid 0)"


def test_simulated_gpus_say_they_have_no_live_sample(fresh_daemon):
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/a100-pcie-4/machine.json\n  scrub: 0\n")
    d.rnx("gpu", "offline", "2", check=True)
    rows = list_rows(d.rnx("gpu", "list", check=True).stdout)
    assert rows[2][1] == "NVIDIA A100-PCIE-40GB [simulated]" and rows[2][5] == "offline (taken offline by uid 0)"
    assert rows[0][5] == "available"
    out = d.rnx("gpu", "show", "0", check=True).stdout
    assert out.startswith("SIMULATED GPU (gpu.fixture): this device does not exist on this machine.\n")
    s = kv(out)
    assert s["Sampled at:"] == "never (simulated GPUs have no health monitor)"
    assert s["Temperature:"] == "52 C (at discovery)"
    assert s["Throttle reasons:"] == "unknown"
    assert s["Last XIDs:"] == "unknown (not watched without a health monitor)"
    assert s["ECC (volatile):"] == "unknown" and s["ECC (aggregate):"] == "unknown"
    assert s["Remapped rows:"] == "unknown"
    assert s["State:"] == "available" and s["Takes new jobs:"] == "yes"


@needs_nvml
def test_a_job_ended_by_an_xid_says_which_gpu_and_xid(health_machine):
    m = health_machine()
    jid, (g,) = run_on(m, "--gpu=1")
    m.inject(f"xid {g} 79")
    job = m.d.wait(jid)
    assert job["status"] == "FAILED" and job["end_reason"] == "gpu_error"
    f = job["gpu_fault"]
    assert f == {"gpu": g, "uuid": m.gpus[g]["uuid"], "xid": 79, "meaning": "GPU has fallen off the bus",
                 "action": "offline", "by_uid": None, "time": f["time"]}
    assert end_reason(m.d, jid) == f"failed: GPU {g} XID 79 (GPU has fallen off the bus; XID policy: offline)"
    # a job that ended well has none
    p = m.d.rnx("job", "run", "--gpu=1", "true", check=True)
    assert m.d.wait(p.stdout.strip())["gpu_fault"] is None


@needs_nvml
def test_a_job_ended_by_an_admin_says_who_and_survives_a_restart(health_machine):
    m = health_machine()
    jid, (g,) = run_on(m, "--gpu=1")
    jid2, (g2,) = run_on(m, "--gpu=1")
    m.d.rnx("gpu", "offline", "--force", str(g), check=True)
    m.d.rnx("gpu", "drain", "--force", str(g2), check=True)
    job, job2 = m.d.wait(jid), m.d.wait(jid2)
    assert job["error"] == f"GPU {g} failed: taken offline by uid 0"
    f = job["gpu_fault"]
    assert f == {"gpu": g, "uuid": m.gpus[g]["uuid"], "xid": None, "meaning": None, "action": "offline --force",
                 "by_uid": 0, "time": f["time"]}
    assert job2["gpu_fault"]["action"] == "drain --force" and job2["gpu_fault"]["by_uid"] == 0
    want = f"failed: GPU {g} went offline (admin uid 0: rnx gpu offline --force)"
    want2 = f"failed: GPU {g2} was drained (admin uid 0: rnx gpu drain --force)"
    assert end_reason(m.d, jid) == want and end_reason(m.d, jid2) == want2
    # stored with the job's other end fields
    m.d.stop()
    m.d.start()
    assert m.d.job(jid)["gpu_fault"] == f
    assert end_reason(m.d, jid) == want and end_reason(m.d, jid2) == want2


def test_gpu_ids_of_an_offline_or_draining_gpu_is_named(fresh_daemon):
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/a100-pcie-4/machine.json\n  scrub: 0\n")
    d.rnx("gpu", "offline", "3", check=True)
    d.rnx("gpu", "drain", "2", check=True)
    code, g3 = d.api("GET", "/v1/gpus/3")
    code, g2 = d.api("GET", "/v1/gpus/2")
    p = d.rnx("job", "run", "--gpu-ids=3", "true")
    assert p.returncode != 0
    assert (f"--gpu-ids: GPU 3 is offline since {g3['state_since']} (taken offline by uid 0): it cannot be granted "
            "until an admin runs 'rnx gpu online 3'") in p.stderr, p.stderr
    assert "usable GPU" not in p.stderr
    p = d.rnx("job", "run", "--gpu-ids=1,2", "true")
    assert p.returncode != 0
    assert (f"--gpu-ids: GPU 2 is draining since {g2['state_since']} (drained by uid 0): it cannot be granted "
            "until an admin runs 'rnx gpu online 2'") in p.stderr, p.stderr
    # the API names the field
    code, e = d.api("POST", "/v1/jobs", {"command": "true", "gpu_ids": ["3"]})
    assert code == 400 and e["error"]["field"] == "gpu_ids"
    assert e["error"]["message"].startswith("gpu_ids: GPU 3 is offline since ")
    # back in service: granted
    d.rnx("gpu", "online", "3", check=True)
    p = d.rnx("job", "run", "--gpu-ids=3", "true", check=True)
    assert [x["index"] for x in d.wait(p.stdout.strip())["gpus"]] == [3]


@needs_nvml
def test_gpu_ids_of_a_hot_or_resetting_gpu_waits_and_says_why(health_machine):
    m = health_machine()
    m.inject("temp 1 90")
    wait_health(m, 1, lambda h: h["hot"])
    p = m.d.rnx("job", "run", "--gpu-ids=1", "true", check=True)
    jid = p.stdout.strip()
    time.sleep(0.3)
    j = m.d.job(jid)
    want = ("needs 1 GPU (the ones it named); GPU 1 is hot (90 C, above gpu.max_temperature_c 85): it takes jobs "
            "again once it has cooled to 80 C")
    assert j["status"] == "QUEUED" and j["wait_reason"] == want, j
    out = m.d.rnx("job", "status", jid, check=True).stdout
    assert want in out
    m.inject("temp 1 70")
    assert m.d.wait(jid)["status"] == "COMPLETED"
    # a drain-then-reset XID while a job runs: the GPU waits for its reset; a job naming it waits
    jid, (g,) = run_on(m, "--gpu-ids=2")
    m.inject("xid 2 63")
    gj = m.wait_gpu(2, "resetting")
    p = m.d.rnx("job", "run", "--gpu-ids=2", "true", check=True)
    jid2 = p.stdout.strip()
    time.sleep(0.3)
    want = (f"needs 1 GPU (the ones it named); GPU 2 is resetting since {gj['state_since']} (XID 63: ECC page "
            "retirement or row remapping recorded (applied at the next reset)): it takes jobs again once its reset and the check after "
            "it pass")
    j = m.d.job(jid2)
    assert j["status"] == "QUEUED" and j["wait_reason"] == want, j
    m.d.rnx("job", "stop", jid, check=True)
    m.d.wait(jid)
    assert m.d.wait(jid2)["status"] == "COMPLETED"


def test_audit_newest_first_limit_since_until(fresh_daemon):
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/a100-pcie-4/machine.json\n  scrub: 0\n")
    for i in range(3):
        d.rnx("gpu", "drain", str(i), check=True)
        time.sleep(1.1)  # records a second or more apart: --since/--until at whole seconds split them
        d.rnx("gpu", "online", str(i), check=True)
        time.sleep(1.1)
    recs = json.loads(d.rnx("audit", "--json", check=True).stdout)
    assert len(recs) == 12  # per cycle: a state change and the admin action, twice
    times = [r["time"] for r in recs]
    assert times == sorted(times, reverse=True)
    # the admin's action is recorded after the state change it made
    assert [(r["action"], r["gpu"]) for r in recs[:2]] == [("online", 2), ("state", 2)]
    assert [(r["action"], r["gpu"]) for r in recs[-2:]] == [("drain", 0), ("state", 0)]
    # --limit: the newest N, in the API and in text
    assert json.loads(d.rnx("audit", "--json", "--limit", "3", check=True).stdout) == recs[:3]
    code, a = d.api("GET", "/v1/audit?limit=3")
    assert code == 200 and a["records"] == recs[:3]
    text = d.rnx("audit", "--limit", "2", check=True).stdout.splitlines()
    assert text[0].startswith("TIME") and len(text) == 3
    assert text[1].startswith(recs[0]["time"] + " ") and text[2].startswith(recs[1]["time"] + " ")
    # --since / --until at whole seconds, in UTC and with an offset
    drain1 = next(r for r in recs if r["action"] == "drain" and r["gpu"] == 1)
    cut = ms(drain1["time"]) // 1000 * 1000  # the second drain 1 happened in
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(cut / 1000))
    got = json.loads(d.rnx("audit", "--json", "--since", since, check=True).stdout)
    assert got == [r for r in recs if ms(r["time"]) >= cut] and {r["gpu"] for r in got} == {1, 2}
    until = time.strftime("%Y-%m-%dT%H:%M:%S+01:00", time.gmtime(cut / 1000 + 3600 + 1))  # a second later, UTC+1
    got = json.loads(d.rnx("audit", "--json", "--since", since, "--until", until, check=True).stdout)
    assert got == [r for r in recs if cut <= ms(r["time"]) <= cut + 1000]
    assert [(r["action"], r["gpu"]) for r in got] == [("drain", 1), ("state", 1)]
    assert json.loads(d.rnx("audit", "--json", "--gpu", "2", "--limit", "1", check=True).stdout) == \
        [next(r for r in recs if r["gpu"] == 2)]
    # bad times are named
    p = d.rnx("audit", "--since", "yesterday")
    assert p.returncode != 0 and \
        "since: 'yesterday' is not a time; give RFC 3339, e.g. 2026-11-22T15:00:00Z" in p.stderr, p.stderr
    p = d.rnx("audit", "--since", "2030-01-01T00:00:00Z", "--until", "2029-01-01T00:00:00Z")
    assert p.returncode != 0 and \
        "until: '2029-01-01T00:00:00Z' is before since '2030-01-01T00:00:00Z'; nothing can match" in p.stderr
    assert "newest first" in d.rnx("audit", "--help", check=True).stdout


@needs_nvml
def test_a_job_stopping_for_its_gpu_when_joblet_dies_still_ends_gpu_error(health_machine):
    """The fault is stored as soon as the stop begins: a joblet killed while the job still
    ignores SIGTERM re-adopts it, and its end says what the GPU did, not "stopped"."""
    m = health_machine()
    p = m.d.rnx("job", "run", "--gpu=1", "sh", "-c", "trap '' TERM; : > /work/trapped; sleep 600", check=True)
    jid = p.stdout.strip()
    g = m.d.wait_status(jid, "RUNNING")["gpus"][0]["index"]
    wait_for(lambda: os.path.exists(os.path.join(m.d.work(jid), "trapped")), "the shell's trap set")
    m.d.rnx("gpu", "offline", "--force", str(g), check=True)
    assert m.d.job(jid)["status"] == "STOPPING"
    m.d.kill9()
    m.d.start()
    job = m.d.wait(jid)
    assert job["status"] == "FAILED" and job["end_reason"] == "gpu_error", job
    assert job["error"] == f"GPU {g} failed: taken offline by uid 0"
    assert job["gpu_fault"]["action"] == "offline --force" and job["gpu_fault"]["by_uid"] == 0
    assert end_reason(m.d, jid) == f"failed: GPU {g} went offline (admin uid 0: rnx gpu offline --force)"
