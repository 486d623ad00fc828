#!/usr/bin/env python3
"""Remote access over TLS against the unix socket, on one machine, interleaved.

Starts one joblet with both its unix socket and a TLS listener on 127.0.0.1 (certificates by
`joblet cert`; the bench's certificate is mapped to root by remote.users, so that both paths
run the same jobs as the same account), then measures, each pair of runs back to back in
alternating order so that drifts in load hit both alike:

  1. start latency: `rnx job run --follow /bin/true` on the socket, with `--node` as rnx runs
     by default (through the node's keeper, rnx's process that holds a TLS connection ready:
     src/cli/conn_agent.h), and with `--node` and RNX_PERSIST=0 (each command makes its own
     TLS connection: a full handshake, and GnuTLS loaded), median and p95, and the differences;
  2. the cost of one command's connection: `rnx job status ID` (one read that does little)
     on the three paths, and a bare TLS 1.3 handshake with a client certificate (Python's ssl);
  3. throughput: 1,000 submissions of /bin/true from C keep-alive clients (Python's
     http.client), over the socket and over TLS, jobs/s from the first submission to the last
     job's end.

  sudo bench/remote.py [--build build] [--runs 200] [--jobs 1000] [--clients 8]

Needs root (the daemon). Standard library only.
"""

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

TERMINAL = {"COMPLETED", "FAILED", "STOPPED", "CANCELED"}


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=60.0):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class Setup:
    def __init__(self, build):
        self.build = os.path.abspath(build)
        self.dir = tempfile.mkdtemp(prefix="joblet-bench-remote-")
        self.pki = os.path.join(self.dir, "pki")
        self.sock = os.path.join(self.dir, "joblet.sock")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        j = os.path.join(self.build, "joblet")
        for args in (["init"], ["server", "--name", "bench", "--san", "localhost,127.0.0.1"],
                     ["client", "--user", "bench", "--role", "admin", "--address", f"127.0.0.1:{self.port}"]):
            subprocess.run([j, "cert", args[0], "--dir", self.pki, *args[1:]], check=True, capture_output=True)
        cfg = os.path.join(self.dir, "joblet.yml")
        with open(cfg, "w") as f:
            f.write(f"cgroup:\n  root: joblet-bench-remote\njobs:\n  stop_grace_s: 2\n"
                    f"remote:\n  listen: [\"127.0.0.1:{self.port}\"]\n  pki_dir: {self.pki}\n"
                    f"  users:\n    bench: root\n")
        self.log = open(os.path.join(self.dir, "joblet.log"), "w")
        self.proc = subprocess.Popen([j, "--config", cfg, "--state-dir", os.path.join(self.dir, "state"),
                                      "--socket", self.sock], stdout=self.log, stderr=self.log)
        deadline = time.time() + 20
        while not os.path.exists(self.sock) and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        # the keeper's socket under the bench's directory: removing it ends the keeper
        run = os.path.join(self.dir, "run")
        os.mkdir(run, 0o700)
        self.env = dict(os.environ, RNX_CONFIG=os.path.join(self.dir, "nodes.yml"), JOBLET_SOCKET=self.sock,
                        XDG_RUNTIME_DIR=run)
        self.env.pop("RNX_NODE", None)
        self.env.pop("RNX_PERSIST", None)
        self.env_nokeep = dict(self.env, RNX_PERSIST="0")
        subprocess.run([self.rnx, "node", "add", "bench", os.path.join(self.pki, "bench.rnx.yml")], env=self.env,
                       check=True, capture_output=True)

    @property
    def rnx(self):
        return os.path.join(self.build, "rnx")

    def timed(self, args, env=None):
        t = time.perf_counter()
        p = subprocess.run([self.rnx, *args], env=env or self.env, capture_output=True)
        dt = (time.perf_counter() - t) * 1000
        if p.returncode != 0:
            sys.exit(f"rnx {' '.join(args)}: {p.stderr.decode()}")
        return dt

    def close(self):
        subprocess.run([self.rnx, "node", "disconnect", "--all"], env=self.env, capture_output=True)
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        # the daemon's cgroup levels, depth first, in every hierarchy (the jobs have ended)
        for base in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] + [f"/sys/fs/cgroup/{c}" for c in (
                "cpu", "cpuacct", "memory", "pids", "blkio", "cpuset", "devices")]:
            top = os.path.join(base, "joblet-bench-remote")
            for sub, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
                try:
                    os.rmdir(sub)
                except OSError:
                    pass


def rounds(s, args, runs, warm=10):
    """The three paths, one run each per round, in an order that rotates round by round."""
    out = {"socket": [], "keeper": [], "direct": []}
    paths = [("socket", args, None), ("keeper", ["--node", "bench", *args], None),
             ("direct", ["--node", "bench", *args], s.env_nokeep)]
    for i in range(warm + runs):
        k = i % 3
        for name, a, env in paths[k:] + paths[:k]:
            dt = s.timed(a, env)
            if i >= warm:
                out[name].append(dt)
    return out


def handshakes(s, n=200):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_verify_locations(os.path.join(s.pki, "ca.pem"))
    ctx.load_cert_chain(os.path.join(s.pki, "bench.pem"), os.path.join(s.pki, "bench-key.pem"))
    out = []
    for _ in range(n):
        t = time.perf_counter()
        with socket.create_connection(("127.0.0.1", s.port)) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1"):
                out.append((time.perf_counter() - t) * 1000)
    return out


def throughput(s, conn_fn, jobs, clients):
    left = [jobs]
    lock = threading.Lock()
    ids = []

    def submit():
        c = conn_fn()
        while True:
            with lock:
                if not left[0]:
                    break
                left[0] -= 1
            c.request("POST", "/v1/jobs", body='{"command": "/bin/true"}', headers={"Content-Type": "application/json"})
            r = c.getresponse()
            body = json.loads(r.read())
            if r.status != 201:
                sys.exit(f"submit: {r.status} {body}")
            with lock:
                ids.append(body["id"])
        c.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=submit) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c = conn_fn()
    want = set(ids)
    while True:
        c.request("GET", "/v1/jobs")
        r = c.getresponse()
        body = json.loads(r.read())
        jl = body["jobs"] if isinstance(body, dict) else body
        if sum(1 for j in jl if j["id"] in want and j["status"] in TERMINAL) == len(want):
            break
        time.sleep(0.05)
    dt = time.perf_counter() - t0
    c.request("DELETE", "/v1/jobs")
    c.getresponse().read()
    c.close()
    return jobs / dt


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("remote.py: run as root (it starts joblet)")
    s = Setup(a.build)
    try:
        print(f"joblet {a.build}, {os.cpu_count()} CPUs; TLS 1.3 on 127.0.0.1:{s.port}. TLS: through the node's "
              f"keeper (rnx's default);\nno keeper: RNX_PERSIST=0, a new TLS connection per command (no session "
              f"resumption)\n")
        print(f"{'measure':<44} {'socket':>8} {'TLS':>8} {'-socket':>8} {'no keeper':>10} {'-socket':>8}")
        one = subprocess.run([s.rnx, "--json", "job", "run", "/bin/true"], env=s.env, capture_output=True, check=True)
        one = json.loads(one.stdout)["id"]
        for name, args in (("rnx job run --follow /bin/true, median ms", ["job", "run", "--follow", "/bin/true"]),
                           ("rnx job status ID (one request), median ms", ["job", "status", one])):
            r = rounds(s, args, a.runs)
            for label, f in ((name, statistics.median), ("  p95", lambda xs: pct(xs, 95))):
                ml, mk, md = f(r["socket"]), f(r["keeper"]), f(r["direct"])
                print(f"{label:<44} {ml:>8.2f} {mk:>8.2f} {mk - ml:>+8.2f} {md:>10.2f} {md - ml:>+8.2f}")
        hs = handshakes(s)
        print(f"{'TLS 1.3 handshake with a client cert, ms':<44} {'':>8} {statistics.median(hs):>8.2f}"
              f"   (p95 {pct(hs, 95):.2f})")

        def unix():
            return UnixHTTPConnection(s.sock)

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(os.path.join(s.pki, "ca.pem"))
        ctx.load_cert_chain(os.path.join(s.pki, "bench.pem"), os.path.join(s.pki, "bench-key.pem"))

        def tls():
            return http.client.HTTPSConnection("127.0.0.1", s.port, context=ctx, timeout=60)

        rates = {"socket": [], "TLS": []}
        for r in range(a.rounds):
            order = [("socket", unix), ("TLS", tls)]
            if r % 2:
                order.reverse()
            for name, fn in order:
                rates[name].append(throughput(s, fn, a.jobs, a.clients))
        ls, lt = statistics.median(rates["socket"]), statistics.median(rates["TLS"])
        print(f"{f'{a.jobs} submissions, {a.clients} keep-alive clients, jobs/s':<44} {ls:>8.0f} {lt:>8.0f}"
              f" {lt / ls:>7.2f}x")
    finally:
        s.close()


if __name__ == "__main__":
    main()
