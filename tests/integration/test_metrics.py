"""Metrics and monitoring (docs/metrics.md): GET /metrics on the unix socket and on the TCP
listener (metrics.listen), checked by parsing the text, by `promtool check metrics`, and by a
real Prometheus server that scrapes the listener and answers PromQL queries; the health
monitor's samples through the fake NVML; `rnx monitor` and `rnx job metrics`."""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse

import pytest

from conftest import BUILD, ROOT, UnixHTTPConnection, free_port, need_setpriv, setpriv, wait_for

FIX = os.path.join(ROOT, "tests", "fixtures")
MIB = 1048576
PROM_TYPE = "text/plain; version=0.0.4"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
FAKE_NVML = os.path.join(BUILD, "tests", "fakes", "libnvidia-ml.so.1")
ODD_NAME = 'odd "name" \\ with\nnewline'


def machine(name):
    with open(os.path.join(FIX, name, "machine.json")) as f:
        return sorted(json.load(f)["gpus"], key=lambda g: g["bus_id"])


def unix_get(d, path, method="GET"):
    c = UnixHTTPConnection(d.sock)
    c.request(method, path)
    r = c.getresponse()
    body = r.read().decode()
    c.close()
    return r.status, r.getheader("Content-Type", ""), body


def tcp_get(port, path, method="GET", body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path, body=body)
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, r.getheader("Content-Type", ""), data, r


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)')


def unescape(v):
    return re.sub(r'\\(.)', lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), v)


def parse(text):
    """[(name, {label: value}, float)] of every sample; checks each family's HELP/TYPE first."""
    out, typed = [], set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        name, labels, value = m.groups()
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in typed or family in typed, f"{name} has no TYPE line before it"
        lab = {k: unescape(v) for k, v in LABEL.findall(labels or "")}
        out.append((name, lab, float(value)))
    return out


def values(samples, metric, /, **labels):
    return [v for n, l, v in samples if n == metric and all(l.get(k) == str(w) for k, w in labels.items())]


def one(samples, metric, /, **labels):
    v = values(samples, metric, **labels)
    assert len(v) == 1, f"{metric}{labels}: {v}"
    return v[0]


def sim_daemon(fresh_daemon, port, extra=""):
    return fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n"
                        f"metrics:\n  listen: 127.0.0.1:{port}\n{extra}")


def busy_machine(d):
    """Two completed jobs, one failed, one running with 2 GPUs; returns the running job's id."""
    for cmd in ("true", "true", "false"):
        d.wait(d.submit(cmd))
    jid = d.submit("sh", "-c", "head -c 8000000 /dev/zero > /tmp/fill; echo filled; exec sleep 300",
                   gpu_count=2, name=ODD_NAME)
    d.wait_status(jid, "RUNNING")
    # RUNNING comes before the file is written: on a loaded machine, well before
    wait_for(lambda: "filled" in d.output(jid), "the job's 8 MB file in /tmp")
    return jid


def test_metrics_on_the_socket_and_the_listener(fresh_daemon):
    port = free_port()
    d = sim_daemon(fresh_daemon, port)
    assert f"metrics: serving GET /metrics on http://127.0.0.1:{port}/metrics" in d.log()
    # libmicrohttpd's messages are joblet's from the listener's first (its logger the first option)
    assert "is not the first option" not in d.log(), d.log()[-2000:]
    jid = busy_machine(d)
    held = sorted(g["index"] for g in d.job(jid)["gpus"])
    gpus = machine("dgx-h100")

    status, ctype, text = unix_get(d, "/metrics")
    assert status == 200 and ctype.startswith(PROM_TYPE), (status, ctype)
    s = parse(text)
    for i, g in enumerate(gpus):
        lab = dict(gpu=i, uuid=g["uuid"], name=g["name"], simulated="true")
        assert one(s, "joblet_gpu_memory_total_bytes", **lab) == g["memory_total_mb"] * MIB
        want = "allocated" if i in held else "available"
        states = {l["state"]: v for n, l, v in s if n == "joblet_gpu_state" and l["gpu"] == str(i)}
        assert states == {k: float(k == want) for k in ("available", "allocated", "shared", "scrubbing", "draining",
                                                         "degraded", "resetting", "offline", "unusable")}
        assert values(s, "joblet_gpu_allocated", gpu=i) == ([1.0] if i in held else [])
        assert one(s, "joblet_gpu_jobs", gpu=i) == (1 if i in held else 0)
    assert [l["gpu"] for n, l, v in s if n == "joblet_gpu_allocated" and l["job_id"] == jid] == [str(i) for i in held]
    # simulated GPUs are never sampled: nothing unknown is exported as -1
    for name in ("joblet_gpu_temperature_celsius", "joblet_gpu_utilization_ratio", "joblet_gpu_power_watts",
                 "joblet_gpu_memory_used_bytes", "joblet_gpu_xid_errors_total"):
        assert not values(s, name), name
    assert not [x for x in s if x[2] < 0]
    # "job" and "instance" are Prometheus's target labels: a scrape would rename ours
    assert not [x for x in s if "job" in x[1] or "instance" in x[1]]

    assert one(s, "joblet_jobs", state="COMPLETED") == 2
    assert one(s, "joblet_jobs", state="FAILED") == 1
    assert one(s, "joblet_jobs", state="RUNNING") == 1
    assert one(s, "joblet_jobs", state="QUEUED") == 0
    assert len(values(s, "joblet_jobs")) == 12   # every state, HELD and SUSPENDED too
    # docs/metrics.md lists them all (it left out HELD and SUSPENDED)
    with open(os.path.join(ROOT, "docs", "metrics.md")) as f:
        row = next(line for line in f if line.startswith("| `joblet_jobs` |"))
    assert re.findall(r"`([A-Z]+)`", row) == [l["state"] for n, l, v in s if n == "joblet_jobs"], row
    assert one(s, "joblet_queue_length") == 0
    # the odd name survives escaping
    assert one(s, "joblet_job_gpus", job_id=jid, job_name=ODD_NAME) == 2
    assert one(s, "joblet_job_memory_bytes", job_id=jid) >= 8000000  # the file in its tmpfs /tmp
    assert one(s, "joblet_job_memory_peak_bytes", job_id=jid) >= one(s, "joblet_job_memory_bytes", job_id=jid)
    assert one(s, "joblet_job_cpu_seconds_total", job_id=jid) > 0
    assert one(s, "joblet_job_pids", job_id=jid) >= 1
    assert values(s, "joblet_job_io_read_bytes_total", job_id=jid) and values(s, "joblet_job_io_write_bytes_total", job_id=jid)
    # histograms: every job that ran was observed once; buckets are cumulative up to +Inf
    assert one(s, "joblet_job_start_latency_seconds_count") == 4
    buckets = values(s, "joblet_job_start_latency_seconds_bucket")
    assert buckets == sorted(buckets) and buckets[-1] == 4
    assert one(s, "joblet_job_start_latency_seconds_bucket", le="+Inf") == 4
    assert one(s, "joblet_schedule_duration_seconds_count") >= 4
    # every turn of the loop but the one answering this (and the first, which had no wake) is in
    # the histogram; the counter is read in the same turn
    turns = one(s, "joblet_loop_turns_total")
    assert turns - 2 <= one(s, "joblet_loop_turn_duration_seconds_count") <= turns and turns > 10
    buckets = values(s, "joblet_loop_turn_duration_seconds_bucket")
    assert buckets == sorted(buckets) and buckets[-1] == one(s, "joblet_loop_turn_duration_seconds_count")
    assert one(s, "joblet_api_requests_total", method="POST", code="201") == 4
    assert one(s, "joblet_api_requests_total", method="GET", code="200") >= 1
    assert one(s, "joblet_build_info") == 1

    # the TCP listener serves the same, and nothing else
    status, ctype, text, _ = tcp_get(port, "/metrics")
    assert status == 200 and ctype.startswith(PROM_TYPE)
    t = parse(text)
    assert one(t, "joblet_jobs", state="COMPLETED") == 2
    assert one(t, "joblet_job_gpus", job_id=jid) == 2
    assert tcp_get(port, "/v1/jobs")[0] == 404
    assert tcp_get(port, "/")[0] == 404
    status, _, _, r = tcp_get(port, "/metrics", "POST", body="x")
    assert status == 405 and r.getheader("Allow") == "GET, HEAD"
    assert tcp_get(port, "/metrics", "HEAD")[0] == 200
    assert unix_get(d, "/metrics", "POST")[0] == 404
    # on the socket, /metrics is for admins: it names every user's jobs
    if shutil.which("setpriv"):
        p = subprocess.run(["setpriv", "--reuid=2000000007", "--regid=2000000007", "--clear-groups", "/usr/bin/python3",
                            "-c", "import sys; sys.path.insert(0, sys.argv[1]); from conftest import UnixHTTPConnection as U; "
                                  "c = U(sys.argv[2]); c.request('GET', '/metrics'); r = c.getresponse(); "
                                  "print(r.status, r.read().decode())",
                            os.path.dirname(os.path.abspath(__file__)), d.sock], capture_output=True, text=True,
                           timeout=30)
        assert p.stdout.startswith("403 ") and "it is for admins" in p.stdout and ODD_NAME not in p.stdout, p

    # the job ends: its series go, the counts follow
    d.rnx("job", "stop", jid, check=True)
    d.wait(jid)
    s = parse(tcp_get(port, "/metrics")[2])
    assert not values(s, "joblet_job_gpus") and not values(s, "joblet_gpu_allocated")
    assert one(s, "joblet_jobs", state="STOPPED") == 1 and one(s, "joblet_jobs", state="RUNNING") == 0


def test_promtool_accepts_the_text(fresh_daemon):
    if not os.access(PROMTOOL, os.X_OK):
        pytest.skip("promtool is not installed (Debian package prometheus; scripts/install-deps.sh)")
    port = free_port()
    d = sim_daemon(fresh_daemon, port)
    busy_machine(d)
    text = tcp_get(port, "/metrics")[2]
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), p.stdout + p.stderr


def prom_query(port, q):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/api/v1/query?" + urllib.parse.urlencode({"query": q}))
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    assert body["status"] == "success", body
    return body["data"]["result"]


def test_a_real_prometheus_scrapes_and_queries(fresh_daemon, tmp_path):
    if not os.access(PROMETHEUS, os.X_OK):
        pytest.skip("prometheus is not installed (Debian package prometheus; scripts/install-deps.sh)")
    port, prom_port = free_port(), free_port()
    d = sim_daemon(fresh_daemon, port)
    jid = busy_machine(d)
    held = sorted(g["index"] for g in d.job(jid)["gpus"])
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                   "scrape_configs:\n  - job_name: joblet\n    static_configs:\n"
                   f"      - targets: ['127.0.0.1:{port}']\n")
    log = open(tmp_path / "prometheus.log", "w")
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'data'}",
                             f"--web.listen-address=127.0.0.1:{prom_port}", "--storage.tsdb.retention.time=1h"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 60
        result = []
        while time.time() < deadline:
            assert prom.poll() is None, "prometheus exited:\n" + (tmp_path / "prometheus.log").read_text()
            try:
                result = prom_query(prom_port, 'joblet_jobs{state="COMPLETED"}')
            except (OSError, http.client.HTTPException, ValueError):
                result = []
            if result:
                break
            time.sleep(0.5)
        assert result, "no scrape within 60 s:\n" + (tmp_path / "prometheus.log").read_text()
        assert result[0]["metric"]["job"] == "joblet"
        assert result[0]["value"][1] == "2"
        assert prom_query(prom_port, 'up{job="joblet"}')[0]["value"][1] == "1"
        gpus = machine("dgx-h100")
        r = prom_query(prom_port, 'joblet_gpu_memory_total_bytes{gpu="0"}')
        assert len(r) == 1 and r[0]["value"][1] == str(gpus[0]["memory_total_mb"] * MIB)
        assert r[0]["metric"]["uuid"] == gpus[0]["uuid"] and r[0]["metric"]["simulated"] == "true"
        assert prom_query(prom_port, 'joblet_jobs{state="FAILED"}')[0]["value"][1] == "1"
        r = prom_query(prom_port, 'joblet_gpu_state{state="allocated"} == 1')
        assert sorted(int(x["metric"]["gpu"]) for x in r) == held
        r = prom_query(prom_port, f'sum(joblet_gpu_allocated{{job_id="{jid}"}})')
        assert r[0]["value"][1] == "2"
        # the label came through Prometheus intact, escapes and all
        r = prom_query(prom_port, f'joblet_job_gpus{{job_id="{jid}"}}')
        assert r[0]["metric"]["job_name"] == ODD_NAME and r[0]["value"][1] == "2"
        r = prom_query(prom_port, "joblet_job_start_latency_seconds_count")
        assert r[0]["value"][1] == "4"
        # docs/metrics.md's query for turns longer than 0.1 s: one series (it gave the rate of
        # every bucket, the turns *at most* each bucket, as "held for longer than a bucket")
        with open(os.path.join(ROOT, "docs", "metrics.md")) as f:
            row = next(line for line in f if line.startswith("| `joblet_loop_turn_duration_seconds` |"))
        query = next(q for q in re.findall(r"`([^`]+)`", row) if q.startswith("rate("))
        r = []
        wait_for(lambda: r.extend(prom_query(prom_port, query)) or r, f"no answer to {query}", 30)
        assert len(r) == 1 and float(r[0]["value"][1]) >= 0, r
    finally:
        os.killpg(prom.pid, signal.SIGTERM)
        try:
            prom.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(prom.pid, signal.SIGKILL)
            prom.wait()
        log.close()


def test_listener_refuses_names_and_bad_ports(fresh_daemon):
    for listen, msg in [("localhost:9464", "'localhost' is not a numeric IP address"),
                        ("127.0.0.1", "has no port"),
                        ("127.0.0.1:99999", "the port must be a number from 1 to 65535"),
                        ("::1:9464", "put an IPv6 address in brackets")]:
        d = fresh_daemon(f"metrics:\n  listen: \"{listen}\"\n", start=False)
        with pytest.raises(RuntimeError) as ex:
            d.start()
        assert msg in str(ex.value), (listen, str(ex.value)[-2000:])


def test_listener_on_ipv6_loopback(fresh_daemon):
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
        port = s.getsockname()[1]
        s.close()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    d = fresh_daemon(f"metrics:\n  listen: \"[::1]:{port}\"\n")
    c = http.client.HTTPConnection("::1", port, timeout=10)
    c.request("GET", "/metrics")
    r = c.getresponse()
    text = r.read().decode()
    assert r.status == 200 and one(parse(text), "joblet_queue_length") == 0
    assert "joblet_gpu_" not in text  # no GPUs configured: no GPU families at all
    d.stop()


def test_monitor_and_job_metrics_commands(fresh_daemon):
    d = sim_daemon(fresh_daemon, free_port())
    jid = busy_machine(d)
    held = sorted(g["index"] for g in d.job(jid)["gpus"])

    out = d.rnx("monitor", "status", check=True).stdout
    assert out.startswith("Host:    ")
    assert "Jobs:    1 running, 2 completed, 1 failed; 0 waiting for room" in out
    assert "8 SIMULATED (gpu.fixture)" in out
    rows = [l for l in out.splitlines() if re.match(r"^\d+\s", l)]
    assert len(rows) == 8
    for i in held:
        assert re.match(rf"^{i}\s+NVIDIA H100 80GB HBM3 \[simulated\]\s+allocated\s.*{jid[:8]}$", rows[i]), rows[i]
    m = json.loads(d.rnx("monitor", "status", "--json", check=True).stdout)
    assert m["jobs"]["COMPLETED"] == 2 and m["jobs"]["RUNNING"] == 1 and m["queue_length"] == 0
    assert m["host"]["cpus"] >= 1 and m["host"]["memory_total_bytes"] > 0 and len(m["host"]["load"]) == 3
    assert m["gpu"]["simulated"] is True and len(m["gpus"]) == 8
    assert [g["jobs"] for g in m["gpus"] if g["index"] in held] == [[jid]] * len(held)
    assert all(g["state"] == ("allocated" if g["index"] in held else "available") for g in m["gpus"])

    p = d.rnx("monitor", "watch", "--count", "2", "--interval", "0.2", check=True)
    lines = p.stdout.splitlines()
    assert len(lines) == 2 and all(re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d load ", l) for l in lines), lines
    assert "\033" not in p.stdout  # not a terminal: plain lines
    p = d.rnx("monitor", "watch", "--count", "2", "--interval", "200ms", "--json", check=True)
    assert [json.loads(l)["jobs"]["RUNNING"] for l in p.stdout.splitlines()] == [1, 1]

    p = d.rnx("job", "metrics", "--count", "3", "--interval", "0.2", jid[:8], check=True)
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["TIME", "STATUS", "CPU", "MEMORY", "PEAK", "READ", "WRITE", "PIDS", "GPUS"]
    assert len(lines) == 4 and all(" RUNNING " in l for l in lines[1:])
    assert lines[2].split()[3].endswith("%")  # CPU from the second sample on
    p = d.rnx("job", "metrics", "--json", "--count", "2", "--interval", "0.1", jid, check=True)
    samples = [json.loads(l) for l in p.stdout.splitlines()]
    assert len(samples) == 2
    s = samples[-1]
    assert s["job"] == jid and s["status"] == "RUNNING" and s["running"] is True
    assert s["memory_bytes"] >= 8000000 and s["memory_peak_bytes"] >= s["memory_bytes"] and s["pids"] >= 1
    assert s["cpu_ns"] >= samples[0]["cpu_ns"] > 0
    assert [g["index"] for g in s["gpus"]] == held
    assert all(g["memory_total_mb"] == 81559 and g["utilization_pct"] is None for g in s["gpus"])

    # a job that ended: one sample, its totals, and the command ends by itself
    d.rnx("job", "stop", jid, check=True)
    d.wait(jid)
    p = d.rnx("job", "metrics", "--interval", "0.1", jid, timeout=20, check=True)
    lines = p.stdout.splitlines()
    assert len(lines) == 2 and " STOPPED " in lines[1], lines
    s = json.loads(d.rnx("job", "metrics", "--json", jid, check=True).stdout)
    assert s["running"] is False and s["memory_bytes"] is None and s["memory_peak_bytes"] >= 8000000

    for args, msg in [(["job", "metrics", "--interval", "0", jid], "--interval: '0' is out of range"),
                      (["job", "metrics", "--count", "0", jid], "--count: '0' must be a whole number"),
                      (["job", "metrics"], "job metrics: missing ID"),
                      (["monitor"], "monitor: missing command"),
                      (["monitor", "top"], "unknown command 'top' for 'rnx monitor'"),
                      (["monitor", "status", "--interval", "1"], "unknown flag '--interval'")]:
        p = d.rnx(*args)
        assert p.returncode == 2 and msg in p.stderr, (args, p.stderr)
    p = d.rnx("job", "metrics", "0000dead")
    assert p.returncode == 1 and "no job" in p.stderr


@pytest.mark.skipif(not os.path.exists(FAKE_NVML), reason="the fake NVML was not built")
def test_health_samples_and_xids_become_metrics(health_machine):
    port = free_port()
    m = health_machine(extra=f"metrics:\n  listen: 127.0.0.1:{port}\n")
    gpus = machine("a100-pcie-4")
    m.inject("xid 0 13")
    m.inject("xid 0 13")
    m.inject("xid 0 31")
    m.inject("ecc 1 sbe")
    m.inject("temp 2 77")
    deadline = time.time() + 20
    while time.time() < deadline:
        s = parse(tcp_get(port, "/metrics")[2])
        if (values(s, "joblet_gpu_xid_errors_total", gpu=0, xid=31) == [1.0]
                and values(s, "joblet_gpu_ecc_errors_total", gpu=1, type="sbe") == [1.0]
                and values(s, "joblet_gpu_temperature_celsius", gpu=2) == [77.0]):
            break
        time.sleep(0.1)
    assert one(s, "joblet_gpu_xid_errors_total", gpu=0, xid=13) == 2
    assert one(s, "joblet_gpu_xid_errors_total", gpu=0, xid=31) == 1
    assert not values(s, "joblet_gpu_xid_errors_total", gpu=1)
    assert one(s, "joblet_gpu_ecc_errors_total", gpu=1, type="sbe") == 1
    assert one(s, "joblet_gpu_ecc_errors_total", gpu=1, type="dbe") == 0
    assert one(s, "joblet_gpu_temperature_celsius", gpu=2) == 77
    for i, g in enumerate(gpus):
        lab = dict(gpu=i, uuid=g["uuid"], name=g["name"])
        assert one(s, "joblet_gpu_utilization_ratio", **lab) == pytest.approx(g["utilization_pct"] / 100)
        assert one(s, "joblet_gpu_power_watts", **lab) == g["power_w"]
        assert one(s, "joblet_gpu_memory_used_bytes", **lab) == g["memory_used_mb"] * MIB
        assert one(s, "joblet_gpu_memory_total_bytes", **lab) == g["memory_total_mb"] * MIB
        assert one(s, "joblet_gpu_hot", gpu=i) == 0
        if i != 2:
            assert one(s, "joblet_gpu_temperature_celsius", gpu=i) == g["temperature_c"]
    assert not any("simulated" in l for n, l, v in s)
    # the health monitor's view through rnx monitor too
    out = m.d.rnx("monitor", "status", check=True).stdout
    row0 = next(l for l in out.splitlines() if l.startswith("0 "))
    assert f"{gpus[0]['utilization_pct']}%" in row0 and f"{gpus[0]['temperature_c']}C" in row0
    assert f"{gpus[0]['power_w']}W" in row0 and f"{gpus[0]['memory_used_mb']} / {gpus[0]['memory_total_mb']} MiB" in row0
    if os.access(PROMTOOL, os.X_OK):
        p = subprocess.run([PROMTOOL, "check", "metrics"], input=tcp_get(port, "/metrics")[2], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0 and not (p.stdout + p.stderr).strip(), p.stdout + p.stderr


from test_gpu_health import health_machine  # noqa: E402,F401  (the fixture, shared)


def test_listener_answers_only_the_readers_it_lists(fresh_daemon):
    """metrics.readers: on a machine several people share, loopback is no boundary, and the text
    names every user's running jobs. Set, the listener answers root and the local users and groups
    it lists (the kernel says whose the client's socket is), 403 to every other local user; unset,
    everyone, as before."""
    need_setpriv()
    port = free_port()
    d = fresh_daemon(f"metrics:\n  listen: 127.0.0.1:{port}\n  readers: \"64311, @nosuchgroupjb\"\n")
    jid = d.submit("sleep", "300", name=ODD_NAME)
    d.wait_status(jid, "RUNNING")
    probe = ("import http.client, sys; c = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]), timeout=20); "
             "c.request('GET', '/metrics'); r = c.getresponse(); print(r.status, r.read().decode())")

    def scrape_as(uid):
        p = subprocess.run([*setpriv(uid), "/usr/bin/python3", "-c", probe, str(port)], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout

    status, _, text, _ = tcp_get(port, "/metrics")           # root
    assert status == 200 and jid in text
    listed = scrape_as(64311)
    assert listed.startswith("200 ") and jid in listed, listed
    other = scrape_as(64312)
    assert other.startswith("403 ") and "metrics.readers does not list uid 64312" in other, other
    assert "odd" not in other and jid not in other
    d.rnx("job", "stop", jid, check=True)
    d.wait(jid)
