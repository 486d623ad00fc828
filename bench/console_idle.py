#!/usr/bin/env python3
"""The console's idle cost: joblet's CPU while 50 consoles hold GET /v1/events open.

Starts joblet (as root) on the fake NVML with the DGX H100 fixture, so that the health monitor
samples 8 GPUs every second and every sample is published to every stream (8 gpu_sample events
a second per console: the steady state of a console on a GPU machine with no job changing).
Opens N event streams (default 50) through one `rnx console` proxy, each a client that signed
in with the cookie as a browser tab does (--via socket: straight on the unix socket instead),
lets the machine sit for --seconds and reads the daemon's utime + stime from /proc/<pid>/stat.
The same daemon idles first with no stream, for the baseline. Prints CPU time per second as a
percentage of one core, and the events each client received (proof the streams were live).
Issue 18's bound: under 1 % of one core with 50 consoles.

    sudo python3 bench/console_idle.py [--build build] [--consoles 50] [--seconds 30] [--via proxy|socket]

Standard library only.
"""
import argparse
import http.client
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Client(threading.Thread):
    """One console's event stream: counts the events it reads."""

    def __init__(self, connect, session):
        super().__init__(daemon=True)
        self.s = connect()
        # through the proxy: its cookie, and the page's key in the URL (as the console's page sends them)
        path, host, extra = "/v1/events", "127.0.0.1", ""
        if session:
            netloc, cookie, key = session
            path, host, extra = f"/v1/events?console_key={key}", netloc, f"Cookie: {cookie}\r\n"
        self.s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n".encode())
        self.events = 0
        self.hello = threading.Event()
        self.stop = False

    def run(self):
        buf = b""
        while not self.stop:
            try:
                d = self.s.recv(65536)
            except OSError:
                return
            if not d:
                return
            buf += d
            if b"event: hello" in buf:
                self.hello.set()
            self.events += buf.count(b"\nevent: gpu_sample")
            buf = buf[buf.rfind(b"\n"):]


def measure(pid, seconds):
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    c1, t1 = cpu_seconds(pid), time.monotonic()
    return 100.0 * (c1 - c0) / (t1 - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--consoles", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--via", choices=["proxy", "socket"], default="proxy")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    d = tempfile.mkdtemp(prefix="joblet-console-bench-")
    fix = os.path.join(ROOT, "tests", "fixtures", "dgx-h100")
    lib = os.path.join(build, "tests", "fakes", "libnvidia-ml.so.1")
    sock = f"{d}/s.sock"
    with open(f"{d}/joblet.yml", "w") as f:
        f.write(f"state_dir: {d}/state\nserver:\n  socket: {sock}\ncgroup:\n  root: joblet-bench-{os.getpid()}\n"
                f"gpu:\n  backends: [nvml]\n  nvml_library: {lib}\n  proc_root: {fix}/proc\n  sys_root: {fix}/sys\n"
                f"  health_interval_ms: 1000\n  scrub: 0\nevents:\n  max_streams: 1000\nlog_level: warn\n")
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "FAKE_NVML_FIXTURE": f"{fix}/machine.json"}
    p = subprocess.Popen([os.path.join(build, "joblet"), "--config", f"{d}/joblet.yml"], env=env,
                         stdout=subprocess.DEVNULL, stderr=open(f"{d}/log", "w"))
    proxy = None
    clients = []
    try:
        deadline = time.time() + 20
        while not os.path.exists(sock) and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(2)  # start-up (discovery, first samples) is not steady state
        idle = measure(p.pid, a.seconds)
        session = None
        if a.via == "proxy":
            proxy = subprocess.Popen([os.path.join(build, "rnx"), "--socket", sock, "console"],
                                     stdout=subprocess.PIPE, text=True)
            # the console answers to the host name it printed (NAME.localhost) only
            m = re.search(r"http://(\w+\.localhost:(\d+))/\?token=(\w+)", proxy.stdout.readline())
            netloc, port = m.group(1), int(m.group(2))
            c = http.client.HTTPConnection("127.0.0.1", port)
            c.request("GET", f"/?token={m.group(3)}", headers={"Host": netloc})
            r = c.getresponse()
            session = (netloc, r.getheader("Set-Cookie").split(";")[0], r.getheader("Location").split("#key=")[1])
            connect = lambda: socket.create_connection(("127.0.0.1", port))
        else:
            def connect():
                s = socket.socket(socket.AF_UNIX)
                s.connect(sock)
                return s
        for _ in range(a.consoles):
            cl = Client(connect, session)
            cl.start()
            clients.append(cl)
        for cl in clients:
            cl.hello.wait(10)
        time.sleep(2)
        before = [cl.events for cl in clients]
        busy = measure(p.pid, a.seconds)
        got = [cl.events - b for cl, b in zip(clients, before)]
        live = sum(1 for cl in clients if cl.hello.is_set())
        print(f"joblet CPU, % of one core over {a.seconds:.0f} s (8 GPUs sampled every second, fake NVML):")
        print(f"  no console             {idle:6.3f} %")
        print(f"  {a.consoles} consoles ({a.via:6}) {busy:6.3f} %   "
              f"({live} streams live; gpu_sample events per console: min {min(got)}, max {max(got)}, "
              f"expected ~{int(8 * a.seconds)})")
        print(f"  bound: < 1 %: {'met' if busy < 1.0 else 'NOT met'}")
    finally:
        for cl in clients:
            cl.stop = True
            try:
                cl.s.close()
            except OSError:
                pass
        if proxy:
            proxy.terminate()
            proxy.wait()
        p.terminate()
        p.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
