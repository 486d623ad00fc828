#!/usr/bin/env python3
"""Another user's latency while one user attacks the daemon's loop (issue 25's probe).

For each attack below, a prober running as another uid asks GET /v1/version every 10 ms on a new
connection (as rnx does) and the bench prints the longest and the 99th percentile of its answers'
latencies during the attack, beside the same with the daemon idle (the floor). Issue 25's bound:
no request of any user holds the loop more than 100 ms, the probe staying under 200 ms.

    sudo python3 bench/hostile_latency.py [--build build] [--before OTHER_BUILD]

--before runs the same attacks against a second build (e.g. a checkout of the previous commit)
and prints both side by side. The attacks:
  links    POST /v1/jobs whose upload listing has 23 links, each naming the next twice (2^23
           resolutions when each use is followed afresh)
  scrub    POST /v1/workflows?dry_run=1 with a YAML of 1 MiB of '*' and secret values of '*'
  submit   POST /v1/workflows of 1,000 jobs (limits.max_queued_per_user's default)
  list     GET /v1/jobs over 10,000 jobs (as root: all of them)
  delete   DELETE /v1/jobs of those 10,000, ended
  tail     GET /v1/jobs/ID/logs?tail=1 of a job whose 256 MiB of output is one line
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
PROBER_UID = 4326

PROBER = r"""
import socket, sys, time
path = sys.argv[1]
while True:
    t0 = time.monotonic()
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(b"GET /v1/version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    while s.recv(65536):
        pass
    s.close()
    t1 = time.monotonic()
    print(f"{t0:.6f} {t1 - t0:.6f}", flush=True)
    time.sleep(0.01)
"""


def doubling_links(n):
    ups = [{"path": "d", "type": "dir"}]
    for k in range(n):
        ups.append({"path": f"l{k}", "type": "symlink", "target": f"l{k + 1}/./../l{k + 1}/." if k + 1 < n else "d"})
    return ups


def run_attacks(build):
    os.environ["JOBLET_BUILD"] = build
    import conftest
    conftest.BUILD = build
    d = conftest.Daemon("limits:\n  max_queued_per_user: 0\n").start()
    prober = subprocess.Popen(["setpriv", f"--reuid={PROBER_UID}", f"--regid={PROBER_UID}", "--clear-groups", PY,
                               "-c", PROBER, d.sock], stdout=subprocess.PIPE, text=True)
    samples = []

    def read():
        for line in prober.stdout:
            t, lat = line.split()
            samples.append((float(t), float(lat)))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    phases = []

    def phase(name, fn):
        t0 = time.monotonic()
        try:
            fn()
        except Exception as e:  # an attack the build refuses outright is still measured
            print(f"  ({name}: {e})", file=sys.stderr)
        t1 = time.monotonic()
        time.sleep(0.3)
        phases.append((name, t0, t1))

    try:
        time.sleep(0.3)
        t0 = time.monotonic()
        time.sleep(1.5)
        phases.append(("idle", t0, time.monotonic() - 0.1))   # the floor: nothing else asked meanwhile
        time.sleep(0.2)
        phase("links", lambda: d.api("POST", "/v1/jobs", {"command": "true", "uploads": doubling_links(23)},
                                     timeout=600))
        yaml = "#" + "*" * ((1 << 20) - 64) + "\njobs: {}\n"
        jobs = [{"name": f"j{i}", "request": {"command": "true", "secret_env": {"S": "*" * (4 + i)}}} for i in range(4)]
        phase("scrub", lambda: d.api("POST", "/v1/workflows?dry_run=1", {"name": "s", "yaml": yaml, "jobs": jobs},
                                     timeout=600))
        later = "2036-01-01T00:00:00Z"

        def wf(i):
            return {"name": f"w{i}", "jobs": [{"name": f"j{k}", "request": {"command": "true", "schedule_at": later}}
                                              for k in range(1000)]}
        phase("submit", lambda: d.api("POST", "/v1/workflows", wf(0), timeout=600))
        for i in range(1, 10):
            d.api("POST", "/v1/workflows", wf(i), timeout=600)
        phase("list", lambda: d.api("GET", "/v1/jobs", timeout=600))
        for w in d.api("GET", "/v1/workflows")[1]["workflows"]:
            d.api("POST", f"/v1/workflows/{w['id']}/cancel", timeout=600)
        phase("delete", lambda: d.api("DELETE", "/v1/jobs", timeout=600))
        jid = d.submit("sh", "-c", "echo first; head -c 268435456 /dev/zero | tr '\\0' x")
        d.wait(jid, timeout=600)
        phase("tail", lambda: d.api_raw(f"/v1/jobs/{jid}/logs?tail=1&format=raw&stream=stdout")
              if hasattr(d, "api_raw") else raw_get(d.sock, f"/v1/jobs/{jid}/logs?tail=1&format=raw&stream=stdout"))
    finally:
        prober.kill()
        prober.wait()
        d.cleanup()
    out = {}
    for name, t0, t1 in phases:
        lat = [l for (t, l) in samples if t0 - 0.05 <= t <= t1 + 0.05] or [0.0]
        lat.sort()
        out[name] = (max(lat), lat[int(0.99 * (len(lat) - 1))], len(lat), t1 - t0)
    return out


def raw_get(sock, path):
    import socket
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    while s.recv(1 << 20):
        pass
    s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--before", default=None, help="a second build to compare against")
    a = ap.parse_args()
    builds = [("this", os.path.abspath(a.build))] + ([("before", os.path.abspath(a.before))] if a.before else [])
    results = {label: run_attacks(b) for label, b in builds}
    hdr = f"{'attack':8}" + "".join(f" | {label + ': probe max / p99 (n), attack s':>42}" for label, _ in builds)
    print(hdr)
    print("-" * len(hdr))
    for name in results["this"]:
        row = f"{name:8}"
        for label, _ in builds:
            mx, p99, n, dur = results[label][name]
            row += f" | {mx * 1000:9.1f} ms / {p99 * 1000:7.1f} ms ({n:4d}), {dur:7.2f} s"
        print(row)


if __name__ == "__main__":
    main()
