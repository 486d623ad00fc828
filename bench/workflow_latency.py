#!/usr/bin/env python3
"""Workflow dependency latency: how long after a job ends does the job waiting for it start?

Submits workflows of trivial jobs through the HTTP API of a running joblet and reads, for
every dependency edge, started_at(dependent) - ended_at(dependency) from the jobs' own records
(the shim's timestamps, millisecond resolution). Two shapes:

  chain   j0 -> j1 -> ... -> jN-1            (one dependent per end)
  fan     src -> w0..wK-1 -> sink            (K dependents released by one end, and a sink
                                              released by the last of K ends)

Prints median, p95 and max per shape. Issue 6's target: median <= 5 ms; the reference
implementation polls for dependencies every 5 s.

    sudo python3 bench/workflow_latency.py [--socket /run/joblet/joblet.sock] [--chain 50] [--fan 8] [--rounds 3]

Standard library only.
"""

import argparse
import datetime
import http.client
import json
import socket
import statistics
import sys
import time


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=60.0):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def api(sock, method, path, body=None):
    c = UnixHTTPConnection(sock)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"} if body is not None else {})
    r = c.getresponse()
    doc = json.loads(r.read() or b"null")
    c.close()
    return r.status, doc


def ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() * 1000.0


def job(name, requires=()):
    d = {"name": name, "request": {"command": "/bin/true"}}
    if requires:
        d["requires"] = [{"job": r, "status": "COMPLETED"} for r in requires]
    return d


def run(sock, name, jobs, edges):
    code, wf = api(sock, "POST", "/v1/workflows", {"name": name, "jobs": jobs})
    if code != 201:
        sys.exit(f"submit: {code} {wf}")
    deadline = time.time() + 300
    while True:
        code, wf = api(sock, "GET", f"/v1/workflows/{wf['id']}")
        if wf["state"] in ("COMPLETED", "FAILED", "CANCELED") and wf["ended_at"]:
            break
        if time.time() > deadline:
            sys.exit(f"workflow {wf['id']} did not finish: {wf['state']}")
        time.sleep(0.05)
    if wf["state"] != "COMPLETED":
        sys.exit(f"workflow {wf['id']} ended {wf['state']}: {wf['reason']}")
    at = {j["name"]: j for j in wf["jobs"]}
    out = []
    for dep, child in edges:
        # a dependent waits for the last of its dependencies
        last_end = max(ts(at[d]["ended_at"]) for d in dep)
        out.append(ts(at[child]["started_at"]) - last_end)
    return out


def summary(label, xs):
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]
    print(f"{label:<28} n={len(xs):<4} median {statistics.median(xs):6.1f} ms   p95 {p95:6.1f} ms   "
          f"max {xs[-1]:6.1f} ms")
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", default="/run/joblet/joblet.sock")
    ap.add_argument("--chain", type=int, default=50)
    ap.add_argument("--fan", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    chain, fan_out, fan_in = [], [], []
    for r in range(a.rounds):
        jobs = [job("j0")] + [job(f"j{i}", [f"j{i - 1}"]) for i in range(1, a.chain)]
        chain += run(a.socket, f"bench-chain-{r}", jobs, [([f"j{i - 1}"], f"j{i}") for i in range(1, a.chain)])
        ws = [f"w{i}" for i in range(a.fan)]
        jobs = [job("src")] + [job(w, ["src"]) for w in ws] + [job("sink", ws)]
        d = run(a.socket, f"bench-fan-{r}", jobs, [(["src"], w) for w in ws] + [(ws, "sink")])
        fan_out += d[:-1]
        fan_in.append(d[-1])
    print(f"joblet workflow dependency latency: a dependency's end to its dependent's start "
          f"({a.rounds} rounds; timestamps from the jobs' records, 1 ms resolution)")
    m = summary("chain (1 dependent)", chain)
    summary(f"fan-out (1 end, {a.fan} dependents)", fan_out)
    summary(f"fan-in (last of {a.fan} ends)", fan_in)
    print(f"target: median <= 5 ms: {'met' if m <= 5 else 'NOT met'} ({m:.1f} ms); reference: polling every 5000 ms")


if __name__ == "__main__":
    main()
