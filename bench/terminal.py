#!/usr/bin/env python3
"""Keystroke round trip through a job's terminal (issue 29): one byte in, its echo out, p50/p99.

Starts a joblet of its own (root; --build DIR holds joblet and rnx) and measures, interleaved
round by round so that drifts in load hit every path alike:

  api-tty     POST /v1/jobs/{id}/attach framing over the unix socket, a tty job running
              `stty raw -echo; cat` (the byte goes client -> joblet -> shim -> pty -> cat and back)
  api-pipe    the same framing, a -i job (no tty) running `cat` (stdin and stdout are pipes)
  rnx-it      `rnx job run -it` in a pty of the bench's own, the job as api-tty: the whole way a
              typed key takes (rnx's raw mode, its poll loop, joblet, the shim, the job's pty)
  api-tls     api-tty's framing over the TLS listener (127.0.0.1, a client certificate of the
              bench's CA, Python's ssl): TLS 1.3 records each way, joblet's own reads and writes of
              the upgraded connection's session (src/api/attach.c, tls.h)
  rnx-it-tls  rnx-it with --node: through rnx's keeper (src/cli/conn_agent.c), which holds the
              TLS connection, the way rnx reaches a remote node
  floor-pty   the same `stty raw -echo; cat` on a local pty, no joblet: what a terminal costs
  floor-pipe  `cat` on two local pipes, no joblet

Then bulk output through an attached terminal, over the socket and over TLS (--node, the keeper),
rounds alternating: `rnx job run -it` in a pty of the bench's own, the job writing --bulk-mb MB
in 64 KiB chunks, at most two ahead of what the bench acknowledged (a line typed back per chunk
read): a terminal drops what a watcher cannot take (docs/interactive.md), so the job is paced by
its reader and every byte is counted. MB/s from the command's start to its exit, median of
--bulk-rounds rounds.

Target (issue 29): echo p50 <= 1 ms locally. Standard library only.

  sudo python3 bench/terminal.py --build build --runs 2000
"""

import argparse
import json
import os
import pty
import select
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
import tty

RAW_CAT = ["sh", "-c", "stty raw -echo; echo ready; exec cat"]
# the jobs' work areas stay mounted when joblet stops: the test suite's release_mounts unmounts
# them and detaches their loop devices before the bench's directory goes
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "integration"))
from conftest import release_mounts  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class Daemon:
    """A joblet of the bench's own: its unix socket, and a TLS listener on 127.0.0.1 (certificates
    by `joblet cert`; the bench's certificate mapped to root by remote.users, so that both paths run
    the same jobs as the same account), with rnx's node "bench" for it."""

    def __init__(self, build):
        self.build = os.path.abspath(build)
        self.dir = tempfile.mkdtemp(prefix="joblet-bench-term-")
        self.sock = os.path.join(self.dir, "joblet.sock")
        self.pki = os.path.join(self.dir, "pki")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        j = os.path.join(self.build, "joblet")
        for args in (["init"], ["server", "--name", "bench", "--san", "localhost,127.0.0.1"],
                     ["client", "--user", "bench", "--role", "admin", "--address", f"127.0.0.1:{self.port}"]):
            subprocess.run([j, "cert", args[0], "--dir", self.pki, *args[1:]], check=True, capture_output=True)
        cfg = os.path.join(self.dir, "joblet.yml")
        with open(cfg, "w") as f:
            f.write(f"cgroup:\n  root: joblet-bench-term\njobs:\n  stop_grace_s: 2\n"
                    f"remote:\n  listen: [\"127.0.0.1:{self.port}\"]\n  pki_dir: {self.pki}\n"
                    f"  users:\n    bench: root\n")
        self.log = open(os.path.join(self.dir, "joblet.log"), "w")
        self.proc = subprocess.Popen([j, "--config", cfg, "--state-dir", os.path.join(self.dir, "state"),
                                      "--socket", self.sock], stdout=self.log, stderr=self.log)
        deadline = time.time() + 20
        while not os.path.exists(self.sock) and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        # rnx's environment: the node's keeper's socket under the bench's directory (removing it
        # ends the keeper)
        run = os.path.join(self.dir, "run")
        os.mkdir(run, 0o700)
        self.env = {k: v for k, v in os.environ.items() if k not in ("RNX_NODE", "RNX_PERSIST")}
        self.env.update(RNX_CONFIG=os.path.join(self.dir, "nodes.yml"), JOBLET_SOCKET=self.sock, XDG_RUNTIME_DIR=run)
        subprocess.run([os.path.join(self.build, "rnx"), "node", "add", "bench", os.path.join(self.pki, "bench.rnx.yml")],
                       env=self.env, check=True, capture_output=True)
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self.tls.load_verify_locations(os.path.join(self.pki, "ca.pem"))
        self.tls.load_cert_chain(os.path.join(self.pki, "bench.pem"), os.path.join(self.pki, "bench-key.pem"))

    def api(self, method, path, body=None):
        s = socket.socket(socket.AF_UNIX)
        s.connect(self.sock)
        data = json.dumps(body).encode() if body is not None else b""
        s.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
        r = b""
        while True:
            c = s.recv(65536)
            if not c:
                break
            r += c
        s.close()
        return json.loads(r.split(b"\r\n\r\n", 1)[1] or b"null")

    def attach(self, job_id, tls=False):
        if tls:
            s = self.tls.wrap_socket(socket.create_connection(("127.0.0.1", self.port)), server_hostname="localhost")
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        else:
            s = socket.socket(socket.AF_UNIX)
            s.connect(self.sock)
        s.sendall(f"POST /v1/jobs/{job_id}/attach HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
                  f"Content-Length: 0\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1)
        assert b" 101 " in head, head
        return s

    def close(self):
        subprocess.run([os.path.join(self.build, "rnx"), "node", "disconnect", "--all"], env=self.env,
                       capture_output=True)
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        self.log.close()
        release_mounts(self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)
        for sub, _, _ in sorted(os.walk("/sys/fs/cgroup/joblet-bench-term"), key=lambda w: -w[0].count("/")):
            try:
                os.rmdir(sub)
            except OSError:
                pass


class ApiPath:
    """A job's terminal through the framing: send a stdin frame of one byte, read stdout frames
    until that byte came back."""

    def __init__(self, d, tty_job, tls=False):
        body = {"command": RAW_CAT[0], "args": RAW_CAT[1:], "stdin": True} if tty_job else \
            {"command": "sh", "args": ["-c", "echo ready; exec cat"], "stdin": True}
        if tty_job:
            body["tty"] = True
        self.d, self.job = d, d.api("POST", "/v1/jobs", body)["id"]
        self.s = d.attach(self.job, tls)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        if tty_job:
            self.s.sendall(struct.pack(">BIHH", 3, 4, 24, 80))
        self.buf = b""
        self.wait_for(b"ready")

    def wait_for(self, needle):
        out = b""
        while needle not in out:
            while len(self.buf) < 5 or len(self.buf) < 5 + struct.unpack(">I", self.buf[1:5])[0]:
                c = self.s.recv(65536)
                assert c, "the job's stream ended"
                self.buf += c
            ch, n = struct.unpack(">BI", self.buf[:5])
            if ch == 1:
                out += self.buf[5:5 + n]
            self.buf = self.buf[5 + n:]

    def once(self, b):
        t = time.perf_counter()
        self.s.sendall(struct.pack(">BI", 0, 1) + b)
        self.wait_for(b)
        return time.perf_counter() - t

    def close(self):
        self.s.close()
        self.d.api("POST", f"/v1/jobs/{self.job}/stop")


class FdPath:
    """A byte written to wfd, read back from rfd (a pty master, or two pipes)."""

    def __init__(self, wfd, rfd, proc):
        self.w, self.r, self.proc = wfd, rfd, proc
        got = b""
        while b"ready" not in got:
            select.select([self.r], [], [], 30)
            got += os.read(self.r, 4096)

    def once(self, b):
        t = time.perf_counter()
        os.write(self.w, b)
        got = b""
        while b not in got:
            got += os.read(self.r, 4096)
        return time.perf_counter() - t

    def close(self):
        self.proc.kill() if hasattr(self.proc, "kill") else os.kill(self.proc, signal.SIGKILL)


def floor_pty():
    m, sl = pty.openpty()
    p = subprocess.Popen(RAW_CAT, stdin=sl, stdout=sl, stderr=sl, start_new_session=True)
    os.close(sl)
    return FdPath(m, m, p)


def floor_pipe():
    p = subprocess.Popen(["sh", "-c", "echo ready; exec cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    return FdPath(p.stdin.fileno(), p.stdout.fileno(), p)


def rnx_pty(d, node, args):
    """rnx [--node bench] ARGS in a pty of our own (its raw mode on our side): (pid, master)."""
    pid, m = pty.fork()
    if pid == 0:
        os.execve(os.path.join(d.build, "rnx"), ["rnx", *(["--node", "bench"] if node else []), *args], d.env)
    tty.setraw(m)  # (the master's side: nothing of ours in the way)
    return pid, m


def rnx_it(d, node=False):
    """rnx job run -it (the job's stty on its side)."""
    pid, m = rnx_pty(d, node, ["job", "run", "-it", *RAW_CAT])
    return FdPath(m, m, pid)


CHUNK = 64 << 10


def bulk_script(chunks):
    """A job that writes chunks of CHUNK bytes, at most two ahead of the lines typed back."""
    return (f"stty raw -echo; s=$(head -c {CHUNK} /dev/zero | tr '\\0' x); printf BEGIN%s \"$s\"; i=1; "
            f"while [ $i -lt {chunks} ]; do printf %s \"$s\"; read -r x; i=$((i+1)); done; read -r x; printf END")


def bulk(d, node, mb):
    """Seconds for rnx job run -it of bulk_script, from its start to its exit, and the bytes read."""
    chunks = max(1, mb * 1000000 // CHUNK)
    t = time.perf_counter()
    pid, m = rnx_pty(d, node, ["job", "run", "-it", "sh", "-c", bulk_script(chunks)])
    buf, got, acked = b"", 0, 0
    try:
        while b"BEGIN" not in buf:
            c = os.read(m, 65536)
            buf += c
        got = len(buf) - buf.index(b"BEGIN") - 5
        while acked < chunks:
            while got >= (acked + 1) * CHUNK and acked < chunks:
                os.write(m, b"\n")
                acked += 1
            if acked < chunks:
                got += len(os.read(m, 1 << 20))
        tail = b""
        while True:
            try:
                c = os.read(m, 65536)
            except OSError:  # EIO: rnx exited, its pty closed
                break
            if not c:
                break
            tail += c
        _, status = os.waitpid(pid, 0)
        dt = time.perf_counter() - t
    finally:
        os.close(m)
    got += len(tail) - len(b"END") if tail.endswith(b"END") else len(tail)
    if not tail.endswith(b"END") or got != chunks * CHUNK or os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bulk{' over TLS' if node else ''}: {got} bytes of {chunks * CHUNK}, "
                 f"status {status}, tail {tail[-300:]!r}")
    return dt, got


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--warm", type=int, default=100)
    ap.add_argument("--bulk-mb", type=int, default=20)
    ap.add_argument("--bulk-rounds", type=int, default=5)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("terminal.py: needs root (it starts a joblet of its own)")
    d = Daemon(a.build)
    paths = {}
    try:
        paths = {"api-tty": ApiPath(d, True), "api-pipe": ApiPath(d, False), "api-tls": ApiPath(d, True, tls=True),
                 "rnx-it": rnx_it(d), "rnx-it-tls": rnx_it(d, node=True), "floor-pty": floor_pty(),
                 "floor-pipe": floor_pipe()}
        times = {k: [] for k in paths}
        keys = b"abcdefghijklmnopqrstuvwxyz"
        names = list(paths)
        for i in range(a.warm + a.runs):
            for k in names[i % len(names):] + names[:i % len(names)]:
                t = paths[k].once(keys[i % len(keys):i % len(keys) + 1])
                if i >= a.warm:
                    times[k].append(t * 1e6)
        print(f"keystroke round trip, {a.runs} runs each after {a.warm} warm-ups (us)")
        print(f"{'path':<12}{'p50':>9}{'p99':>9}{'max':>9}  p50 over its floor")
        for k in names:
            xs = times[k]
            floor = times["floor-pipe" if k == "api-pipe" else "floor-pty"]
            over = f"+{pct(xs, 50) - pct(floor, 50):.0f}" if not k.startswith("floor") else ""
            print(f"{k:<12}{pct(xs, 50):>9.0f}{pct(xs, 99):>9.0f}{max(xs):>9.0f}  {over}")
        for p in paths.values():
            p.close()
        paths = {}
        if a.bulk_rounds:
            secs = {"socket": [], "tls": []}
            for i in range(a.bulk_rounds):
                for k in (["socket", "tls"] if i % 2 == 0 else ["tls", "socket"]):
                    secs[k].append(bulk(d, k == "tls", a.bulk_mb)[0])
            size = max(1, a.bulk_mb * 1000000 // CHUNK) * CHUNK
            print(f"\nbulk output through rnx job run -it, {size / 1e6:.1f} MB paced by its reader, "
                  f"median of {a.bulk_rounds} (start to exit)")
            print(f"{'path':<12}{'MB/s':>9}{'s':>9}")
            for k, xs in secs.items():
                med = sorted(xs)[len(xs) // 2]
                print(f"{k:<12}{size / 1e6 / med:>9.1f}{med:>9.2f}")
    finally:
        for p in paths.values():
            try:
                p.close()
            except Exception:
                pass
        time.sleep(0.5)
        d.close()


if __name__ == "__main__":
    main()
