"""Integration fixtures: the real joblet daemon, as root, driven by the real rnx.

JOBLET_BUILD names the build directory (default: ./build). Each daemon gets a scratch
state directory and socket under /tmp, its own cgroup root, and is torn down with every job
it started; a sanitizer report in its log fails the test that owned it.
"""
import glob
import http.client
import json
import contextlib
import datetime
import errno
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("JOBLET_BUILD", os.path.join(ROOT, "build"))
# scripts/coverage_by_file.py collect: a coverage build per pytest-xdist worker, so that the counters
# a build holds are its worker's: JOBLET_BUILD_PER_WORKER names them, "@WORKER@" for the worker's
# number (xdist sets it before a worker reads this file; pytest's controller reads it too, with none)
if os.environ.get("JOBLET_BUILD_PER_WORKER"):
    BUILD = os.environ["JOBLET_BUILD_PER_WORKER"].replace(
        "@WORKER@", os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    os.environ["JOBLET_BUILD"] = BUILD   # for the modules that read it themselves
TERMINAL = {"STOPPED", "COMPLETED", "FAILED", "CANCELED"}
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def api_seconds(stamp):
    """An API time ("2026-11-22T15:00:00.123Z") as seconds since the epoch."""
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def shim_record(job_dir, name):
    """The shim's record of that kind ("started": its start line, "status.json": its end) in a
    job's directory, as joblet reads it (src/exec/shim_status.h): the directory's attribute
    trusted.joblet.run when it holds that kind (an end record is a JSON object), else the file
    of that name; None when there is neither."""
    try:
        txt = os.getxattr(job_dir, "trusted.joblet.run").decode()
        if txt.startswith("{") == (name == "status.json"):
            return txt
    except OSError:
        pass
    try:
        with open(os.path.join(job_dir, name)) as f:
            return f.read()
    except FileNotFoundError:
        return None


def wait_for(pred, what="the condition", timeout=60):
    """pred's first true value, polled every 50 ms; AssertionError naming what, and pred's last
    value, after timeout s."""
    deadline = time.time() + timeout
    v = None
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"{what}: not after {timeout}s (last: {v!r})")


# A job deaf to TERM (and so is what its shell runs): its stop lasts jobs.stop_grace_s and ends by
# the grace's SIGKILL. Act on it only once wait_deaf saw it say so.
DEAF_SH = "trap '' TERM; echo deaf; while :; do sleep 0.2; done"
DEAF = ["sh", "-c", DEAF_SH]


def wait_deaf(d, ref, timeout=60):
    """ref runs and ignores TERM. RUNNING is said once its shell started, maybe before its trap:
    a TERM then ended it at once (stop 63's CI saw that race in test_retention)."""
    wait_for(lambda: d.job(ref)["status"] == "RUNNING" and "deaf" in d.output(ref), f"{ref} running, deaf to TERM",
             timeout=timeout)


def sockets_of(pid):
    """How many sockets the process holds open (a descriptor it closes while they are counted is
    not one)."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return n


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick; free until taken)."""
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


def need_root():
    if os.geteuid() != 0:
        pytest.skip("needs root: joblet creates namespaces, cgroups and mounts")


def need_setpriv():
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is not installed")


def setpriv(user):
    """The argv prefix that runs a command as user, a uid (its gid the same) or (uid, gid), with
    no supplementary groups; none is needed in /etc/passwd. Skips the test without setpriv."""
    need_setpriv()
    uid, gid = user if isinstance(user, tuple) else (user, user)
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]


def add_account(prefix, groups=()):
    """A local account made with useradd (no home, its own group, no login shell), a member of
    groups: (name, uid, gid). remove_account(name) takes it away; the test is skipped on a host
    without useradd and userdel."""
    if not shutil.which("useradd") or not shutil.which("userdel"):
        pytest.skip("useradd and userdel (passwd) are needed")
    name = prefix + uuid.uuid4().hex[:8]
    subprocess.run(["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin",
                    *(["-G", ",".join(groups)] if groups else []), name], check=True, capture_output=True)
    try:
        ids = [int(subprocess.run(["id", flag, name], check=True, capture_output=True, text=True).stdout)
               for flag in ("-u", "-g")]
    except BaseException:
        remove_account(name)
        raise
    return name, ids[0], ids[1]


def remove_account(name):
    subprocess.run(["userdel", name], check=False, capture_output=True)


@contextlib.contextmanager
def local_account(prefix, groups=()):
    """add_account's account for the with block's time: (name, uid, gid)."""
    name, uid, gid = add_account(prefix, groups)
    try:
        yield name, uid, gid
    finally:
        remove_account(name)


# One request over a unix socket, made by whoever runs it: argv the socket, the method, the path
# and the Content-Type ("-": none); stdin the body. It prints [status, answer]: the answer's
# JSON, its text where it is not JSON, None where it is empty.
_API_CLIENT = r"""
import http.client, json, socket, sys
class C(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(sys.argv[1])
c = C("localhost")
body = sys.stdin.buffer.read()
c.request(sys.argv[2], sys.argv[3], body=body or None,
          headers={"Content-Type": sys.argv[4]} if body and sys.argv[4] != "-" else {})
r = c.getresponse()
raw = r.read()
try:
    ans = json.loads(raw) if raw else None
except ValueError:
    ans = raw.decode(errors="replace")
print(json.dumps([r.status, ans]))
"""


def api_as(d, user, method, path, body=None, timeout=150, ctype="application/json"):
    """One request over the socket of daemon d as user (see setpriv; the daemon reads the peer's
    credentials): (status, answer). body is JSON, or bytes sent as they are (ctype None: with no
    Content-Type); it goes on stdin, so it may be larger than one argument may be. timeout:
    the seconds the whole request may take, generous since the machine is shared."""
    data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else b"")
    p = subprocess.run([*setpriv(user), "/usr/bin/python3", "-c", _API_CLIENT, d.sock, method, path, ctype or "-"],
                       input=data, capture_output=True, timeout=timeout, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return tuple(json.loads(p.stdout))


# Requests sent over one connection as whoever runs it: argv the socket; stdin a JSON list of
# [method, path, body]; prints the list of [status, answer].
_BULK_CLIENT = r"""
import http.client, json, socket, sys
class C(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(sys.argv[1])
c = C("localhost", timeout=600)
out = []
for m, p, b in json.load(sys.stdin):
    data = json.dumps(b) if b is not None else None
    c.request(m, p, body=data, headers={"Content-Type": "application/json"} if data else {})
    r = c.getresponse()
    raw = r.read()
    out.append([r.status, json.loads(raw) if raw else None])
print(json.dumps(out))
"""


def bulk_as(d, user, reqs):
    """Many requests ([method, path, body]) over one connection to daemon d as user (see
    setpriv), one process for all: the list of [status, answer]."""
    p = subprocess.run([*setpriv(user), "/usr/bin/python3", "-c", _BULK_CLIENT, d.sock],
                       input=json.dumps(reqs).encode(), capture_output=True, timeout=900,
                       env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return json.loads(p.stdout)


def fake_nvml_daemon(fresh_daemon, tmp_path, fixture="dgx-h100", health_interval_ms=200):
    """A daemon on the fake NVML (tests/fakes/fake_nvml.c) with a fixture machine's GPUs, sampled
    every health_interval_ms: (daemon, the fixture's machine.json, the events file whose lines the
    fake reads as what the driver says next). Skips where the fake was not built."""
    lib = os.path.join(BUILD, "tests", "fakes", "libnvidia-ml.so.1")
    if not os.path.exists(lib):
        pytest.skip("the fake NVML was not built")
    fix = os.path.join(ROOT, "tests", "fixtures", fixture)
    events = tmp_path / "events"
    events.write_text("")
    d = fresh_daemon(f"gpu:\n  backends: [nvml]\n  nvml_library: {lib}\n  proc_root: {fix}/proc\n  sys_root: {fix}/sys\n"
                     f"  health_interval_ms: {health_interval_ms}\n  scrub: 0\n",
                     env={"FAKE_NVML_FIXTURE": f"{fix}/machine.json", "FAKE_NVML_EVENTS": str(events)})
    return d, f"{fix}/machine.json", events


def tool_env():
    """What the test tools' settings pass on to the daemons and rnx the tests start: the
    sanitizers' options, and under scripts/coverage_by_file.py collect where the coverage counters
    go (GCOV_PREFIX: the module's own directory, coverage_by_module)."""
    return {k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS") or k.startswith("GCOV_PREFIX")}


def rnx_as(d, user, *args, timeout=150, input=None, text=True):
    """rnx run as user (see setpriv) against daemon d; text=False for bytes in and out. timeout
    as for api_as."""
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock}
    env.update(tool_env())
    return subprocess.run([*setpriv(user), os.path.join(BUILD, "rnx"), *args], capture_output=True, text=text,
                          timeout=timeout, env=env, input=input)


def submit_array(d, spec, command, *args, status=201, **fields):
    """An array of command's tasks, spec as in "0-9%2", submitted to d by root: the answer, which
    must come with the HTTP status given."""
    code, a = d.api("POST", "/v1/jobs", {"command": command, "args": list(args), "array": spec, **fields})
    assert code == status, a
    return a


def wait_array(d, aid, timeout=180):
    """Array aid once it ended (every task in a terminal state); AssertionError after timeout s."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        a = d.job(aid)
        if a["status"] in TERMINAL:
            return a
        time.sleep(0.1)
    raise AssertionError(f"array {aid} not ended after {timeout}s: {d.job(aid)}\n{d.log()[-3000:]}")


def tasks_of(d, aid):
    """The task jobs array aid has made so far."""
    code, lst = d.api("GET", "/v1/jobs?expand=1")
    assert code == 200
    return [j for j in lst["jobs"] if j.get("kind") != "array" and (j.get("array") or {}).get("id") == aid]


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


START_WAIT_S = 120   # Daemon.start: how long a daemon that has not exited may take to answer


class Daemon:
    def __init__(self, config_text=None, env=None, wrap=None):
        self.extra_env = env or {}
        self.wrap = list(wrap or [])  # argv the daemon's command line is handed to (V1ONLY_WRAP)
        self.mnt_nss = []             # the wrapped daemon's mount namespaces (one per start), for cleanup
        self.preexec = None           # run in the daemon's process before its exec (its rlimits, say)
        self.dir = tempfile.mkdtemp(prefix="joblet-it-")
        os.chmod(self.dir, 0o755)
        self.state = os.path.join(self.dir, "state")
        self.sock = os.path.join(self.dir, "joblet.sock")
        self.log_path = os.path.join(self.dir, "joblet.log")
        self.cgroup_root = "joblet-it-" + uuid.uuid4().hex[:8]
        self.config = os.path.join(self.dir, "joblet.yml")
        jobs = "jobs:\n  stop_grace_s: 2\n"
        if config_text and re.search(r"^jobs:\s*$", config_text, re.M):
            # one jobs: section: the test's keys join the short grace period
            config_text = re.sub(r"^jobs:\s*\n", jobs if "stop_grace_s" not in config_text else "jobs:\n",
                                 config_text, count=1, flags=re.M)
            jobs = ""
        with open(self.config, "w") as f:
            f.write(f"cgroup:\n  root: {self.cgroup_root}\n{jobs}")
            if config_text:
                f.write(config_text)
        self.proc = None
        self.logs_seen = ""

    # -- process control -------------------------------------------------
    def start(self):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [*self.wrap, os.path.join(BUILD, "joblet"), "--config", self.config, "--state-dir", self.state,
             # debug: the daemon checks its own indexes against scans (core/jobs.c); a benchmark
             # that drives a test daemon sets JOBLET_IT_LOG_LEVEL=info to measure what runs
             "--socket", self.sock, "--log-level", os.environ.get("JOBLET_IT_LOG_LEVEL", "debug")],
            stdout=log, stderr=log, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                         "JOBLET_DAEMON_SECRET_MARK": "daemon-env-must-not-leak",
                                         **tool_env(),
                                         **self.extra_env},
            preexec_fn=self.preexec)
        log.close()
        # a bound on a hang, not on speed: a start that exits fails at once; one that reads 10,000
        # jobs under the sanitizers on a loaded machine took over 20 s (local run 166)
        deadline = time.time() + START_WAIT_S
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("joblet exited at start:\n" + self.log())
            try:
                self.api("GET", "/v1/version")
                if self.wrap:
                    # held open: the namespace, and so its number, cannot go to another
                    # process (a parallel worker's job) before kill_mount_namespace is done
                    self.mnt_nss.append(os.open(f"/proc/{self.proc.pid}/ns/mnt", os.O_RDONLY))
                return self
            except OSError:
                time.sleep(0.05)
        # (not left running: a module's daemon that failed its start was never cleaned up, and
        # its zygote and cgroups outlived the run)
        text = self.log()
        self.cleanup()
        raise RuntimeError(f"joblet did not answer within {START_WAIT_S} s:\n" + text)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    # -- clients ---------------------------------------------------------
    def rnx_env(self):
        """The environment rnx runs in against this daemon (rnx, or an rnx of the test's own)."""
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JOBLET_SOCKET": self.sock,
                **tool_env()}

    def rnx(self, *args, input=None, timeout=120, env=None, check=False):
        e = self.rnx_env()
        if env:
            e.update(env)
        p = subprocess.run([os.path.join(BUILD, "rnx"), *args], input=input, capture_output=True,
                           text=True, timeout=timeout, env=e)
        if check and p.returncode != 0:
            raise AssertionError(f"rnx {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
        for mark in SANITIZER_MARKS:
            assert mark not in p.stderr, f"sanitizer report from rnx {args}:\n{p.stderr}"
        return p

    def api(self, method, path, body=None, timeout=30):
        status, _, obj = self.api_retry_after(method, path, body, timeout)
        return status, obj

    def api_retry_after(self, method, path, body=None, timeout=30):
        """api, with the answer's Retry-After (a busy answer's, common/err.h; None without one):
        (status, Retry-After, body)."""
        c = UnixHTTPConnection(self.sock, timeout=timeout)
        data = json.dumps(body) if body is not None else None
        c.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        r = c.getresponse()
        raw = r.read()
        c.close()
        ctype = r.getheader("Content-Type", "")
        if "ndjson" in ctype:
            return r.status, r.getheader("Retry-After"), [json.loads(l) for l in raw.decode().splitlines() if l]
        return r.status, r.getheader("Retry-After"), json.loads(raw) if raw else None

    def metrics_text(self):
        """The daemon's GET /metrics, as text."""
        c = UnixHTTPConnection(self.sock)
        try:
            c.request("GET", "/metrics")
            return c.getresponse().read().decode()
        finally:
            c.close()

    def metric(self, name):
        """A sample of the daemon's /metrics without labels (a float), or None when it has none."""
        text = self.metrics_text()
        m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
        return float(m.group(1)) if m else None

    def submit(self, command, *args, **fields):
        status, job = self.api("POST", "/v1/jobs", {"command": command, "args": list(args), **fields})
        assert status == 201, job
        return job["id"]

    def events(self, job_id):
        """The job's history (rnx job status --detail) as (event, detail) pairs."""
        status, job = self.api("GET", f"/v1/jobs/{job_id}?detail=1")
        assert status == 200, job
        return [(e["event"], e.get("detail", "")) for e in job["detail"]["events"]]

    def job(self, job_id):
        status, job = self.api("GET", f"/v1/jobs/{job_id}")
        assert status == 200, job
        return job

    def wait(self, job_id, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            job = self.job(job_id)
            if job["status"] in TERMINAL:
                return job
            time.sleep(0.05)
        raise AssertionError(f"job {job_id} not finished after {timeout}s: {self.job(job_id)}")

    def wait_status(self, job_id, wanted, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            job = self.job(job_id)
            if job["status"] == wanted:
                return job
            time.sleep(0.05)
        raise AssertionError(f"job {job_id} never became {wanted}: {self.job(job_id)}")

    def logs(self, job_id, stream=None):
        q = f"?stream={stream}" if stream else ""
        status, recs = self.api("GET", f"/v1/jobs/{job_id}/logs{q}")
        assert status == 200, recs
        return recs

    def output(self, job_id, stream="stdout"):
        return "".join(r.get("data", "") for r in self.logs(job_id, stream) if not r.get("end"))

    def run(self, command, *args, timeout=60, **fields):
        """Submit and wait; returns (job, stdout text, stderr text)."""
        jid = self.submit(command, *args, **fields)
        job = self.wait(jid, timeout)
        return job, self.output(jid, "stdout"), self.output(jid, "stderr")

    def work(self, job_id):
        """The host directory holding a job's /work: <state>/work/<owner uid>/<id> under
        jobs.work_quota (core/workfs.h), else <state>/jobs/<id>/work."""
        inside = os.path.join(self.state, "jobs", job_id, "work")
        found = glob.glob(os.path.join(self.state, "work", "[0-9]*", job_id))  # works with the daemon down
        return inside if os.path.lexists(inside) or not found else found[0]

    def job_cgroup(self, job_id, owner_uid=None):
        """The job's cgroup below the daemon's cgroup root: in its owner's level (exec/cgroup.h)."""
        if owner_uid is None:
            owner_uid = self.job(job_id)["owner_uid"]
        return os.path.join(f"user-{owner_uid}", job_id)

    def job_count(self):
        return len(self.api("GET", "/v1/jobs")[1]["jobs"])

    def job_dirs(self):
        d = os.path.join(self.state, "jobs")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []

    # -- teardown ----------------------------------------------------------
    def cleanup(self):
        try:
            if self.proc and self.proc.poll() is None:
                # the jobs with processes are stopped through joblet (their mounts, GPUs and
                # volumes let go as a stop does); a job that waits has none, and one that starts
                # meanwhile ends with the shims below (a test's 10,000 waiting jobs stopped one
                # request each made its teardown 35 s)
                # (listed by state: a test's 260 jobs of 256 KiB each listed whole, twice, made a
                # teardown of 35 s under ASan)
                stopped = set()
                for state in ("RUNNING", "STOPPING", "SUSPENDED", "PREEMPTED"):
                    for j in self.api("GET", f"/v1/jobs?status={state}")[1]["jobs"]:
                        self.api("POST", f"/v1/jobs/{j['id']}/stop")
                        stopped.add(j["id"])
                deadline = time.time() + 15
                while stopped and time.time() < deadline:
                    now = {i: self.api("GET", f"/v1/jobs/{i}") for i in stopped}
                    stopped = {i for i, (code, j) in now.items() if code == 200 and j["status"] not in TERMINAL}
                    time.sleep(0.1)
        except OSError:
            pass
        self.stop()
        # Shims that outlived a killed daemon (and a test that failed with jobs running or
        # waiting: the daemon stops, its jobs do not): end them so nothing leaks past the test.
        # Shims forked by the zygote bear its name, the daemon's cgroup root.
        subprocess.run(["pkill", "-KILL", "-f", f"joblet-shim {self.state}/"], check=False)
        subprocess.run(["pkill", "-KILL", "-f", f"^joblet-shim --zygote {self.cgroup_root}$"], check=False)
        kill_cgroup_procs(self.cgroup_root)
        for ns in self.mnt_nss:
            kill_mount_namespace(ns)
            os.close(ns)
        self.mnt_nss = []
        remove_cgroup_root(self.cgroup_root)
        release_mounts(self.dir)
        log = self.log()
        shutil.rmtree(self.dir, ignore_errors=True)
        for mark in SANITIZER_MARKS:
            assert mark not in log, f"sanitizer report in joblet's log:\n{log}"


# A daemon that sees the v1-only cgroup layout (exec/cgroup.h) on this hybrid host's real kernel:
# the wrapper gives it a mount namespace of its own, private, in which every cgroup2 mount is
# unmounted (the host's stay: the namespace holds copies), then execs it (the daemon keeps the
# wrapper's PID). Its jobs and shims are born in that namespace; it ends with the last of them.
V1ONLY_WRAP = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
               "umount -a -t cgroup2 && ! grep -qw cgroup2 /proc/self/mounts && exec \"$@\"", "joblet-v1only"]


def v1only_daemon(config_text=None, env=None):
    """A Daemon (not started) that runs in a mount namespace without cgroup2: see V1ONLY_WRAP.
    Its /work is a plain directory (jobs.work_quota 0): a user's image mounted in one daemon's
    namespace is not seen by the host's tests, nor by the next daemon after a kill -9, which
    would mount it a second time."""
    quota = "  work_quota: 0\n"
    if config_text and re.search(r"^jobs:\s*$", config_text, re.M):
        config_text = re.sub(r"^jobs:\s*\n", "jobs:\n" + quota, config_text, count=1, flags=re.M)
    else:
        config_text = "jobs:\n" + quota + (config_text or "")
    return Daemon(config_text, env, wrap=V1ONLY_WRAP)


def kill_mount_namespace(fd):
    """SIGKILL, by PID, every process left in the mount namespace open as fd (a v1-only daemon's:
    the shims that outlived it), and wait until none is."""
    ino = os.fstat(fd).st_ino
    if ino == os.stat("/proc/self/ns/mnt").st_ino:
        # a wrapper that entered another namespace but not a mount namespace of its own (nsenter
        # --net): this is the test's own, with every process of the machine in it
        return

    def members():
        out = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if os.stat(f"/proc/{pid}/ns/mnt").st_ino == ino and int(pid) != os.getpid():
                    out.append(int(pid))
            except OSError:
                continue
        return out
    deadline = time.time() + 20
    while (left := members()) and time.time() < deadline:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def thaw_freezer_root(name):
    """A v1-only daemon's jobs' freezer cgroups (exec/cgroup.h) under its cgroup root: a process
    left frozen there does not die of SIGKILL until it is thawed. Each still there is sent SIGKILL
    by its PID (they are the test's by the root's name), then all are thawed, and so die."""
    base = os.path.join("/sys/fs/cgroup/freezer", name)
    dirs = [sub for sub, _, _ in os.walk(base)]
    for sub in dirs:
        try:
            with open(os.path.join(sub, "cgroup.procs")) as f:
                pids = [int(p) for p in f.read().split()]
        except OSError:
            continue
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for sub in dirs:
        try:
            with open(os.path.join(sub, "freezer.state"), "w") as f:
                f.write("THAWED")
        except OSError:
            pass


def kill_cgroup_procs(name):
    """SIGKILL to every process left in a daemon's cgroup root (its jobs' cgroups, by the
    hierarchies that hold every job: cgroup2 and v1 pids), by the PIDs the kernel lists there."""
    for base in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup", "/sys/fs/cgroup/pids"):
        root = os.path.join(base, name)
        if not os.path.isdir(root):
            continue
        for sub, _, _ in os.walk(root):
            try:
                pids = open(os.path.join(sub, "cgroup.procs")).read().split()
            except OSError:
                continue
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (OSError, ValueError):
                    pass


def remove_cgroup_root(name):
    """A daemon's cgroup root (cgroup.root) in every hierarchy, its users' and jobs' levels first."""
    thaw_freezer_root(name)
    for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified") + tuple(
            f"/sys/fs/cgroup/{c}" for c in ("cpu", "cpuacct", "memory", "pids", "blkio", "cpuset", "devices",
                                            "freezer")):
        path = os.path.join(base, name)
        # depth first: the users' levels hold the jobs' cgroups (exec/cgroup.h); a shim killed a
        # moment ago may still be leaving its cgroup (EBUSY): a few tries
        for sub, _, _ in sorted(os.walk(path), key=lambda w: -w[0].count("/")):
            for _ in range(40):
                try:
                    os.rmdir(sub)
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY:
                        break
                    time.sleep(0.05)


class Keepers:
    """rnx's keepers (src/cli/conn_agent.h: the process the first command to a node starts, which
    holds TLS connections to it) of one test's rnx: their sockets go under a private
    XDG_RUNTIME_DIR of the test's, their sanitizer reports (the keeper's stderr is /dev/null) to
    files there, and end() stops each by its PID and fails on any report."""

    def __init__(self, base):
        self.run = os.path.join(base, "xdg-run")
        os.makedirs(self.run, mode=0o700, exist_ok=True)
        os.chmod(self.run, 0o700)

    def env(self, env):
        env = dict(env, XDG_RUNTIME_DIR=self.run)
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
            if env.get(k):
                env[k] += f":log_path={self.run}/sanitizer"
        return env

    def pids(self):
        out = {}
        for sock in glob.glob(os.path.join(self.run, "rnx", "*.sock")):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(sock)
                pid, _, _ = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
                out[sock] = pid
            except OSError:
                pass
            finally:
                s.close()
        return out

    def end(self):
        for sock, pid in self.pids().items():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):
                if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z":
                    break
                time.sleep(0.05)
            else:
                os.kill(pid, signal.SIGKILL)
        reports = glob.glob(os.path.join(self.run, "sanitizer*"))
        text = "".join(open(r, errors="replace").read() for r in reports)
        shutil.rmtree(self.run, ignore_errors=True)
        assert not reports, f"sanitizer report from an rnx keeper:\n{text}"


def _unescape(path):
    """A mountinfo path: spaces and the like come as octal escapes (\\040)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def release_mounts(root):
    """Volumes (docs/volumes.md) stay mounted when joblet stops, as they must: unmount what lies
    under root, deepest first (rmtree must never walk into a mounted volume), and detach any loop
    device whose image lies under root (autoclear releases them with the unmount; this catches
    the rest)."""
    root = os.path.realpath(root)
    with open("/proc/self/mountinfo") as f:
        points = [_unescape(line.split()[4]) for line in f]
    for mp in sorted((p for p in points if p == root or p.startswith(root + "/")), key=len, reverse=True):
        subprocess.run(["umount", "-l", mp], check=False, capture_output=True)
    for bf in glob.glob("/sys/block/loop*/loop/backing_file"):
        try:
            with open(bf) as f:
                backing = f.read().strip()
        except OSError:
            continue
        if backing.startswith(root + "/"):
            subprocess.run(["losetup", "-d", "/dev/" + bf.split("/")[3]], check=False, capture_output=True)


def coverage_move(dest):
    """Moves the coverage counters (.gcda) the processes of BUILD wrote to dest/<BUILD's name>/,
    by their path under BUILD (scripts/coverage_by_file.py reads them with that build's notes)."""
    for dp, _, fs in os.walk(BUILD):
        for f in fs:
            if f.endswith(".gcda"):
                src = os.path.join(dp, f)
                to = os.path.join(dest, os.path.basename(BUILD), os.path.relpath(src, BUILD))
                os.makedirs(os.path.dirname(to), exist_ok=True)
                with contextlib.suppress(FileNotFoundError):   # one a late process was writing then
                    shutil.move(src, to)


@pytest.fixture(scope="module", autouse=True)
def coverage_by_module(request):
    """With JOBLET_COVERAGE_OUT (scripts/coverage_by_file.py collect): the counters written while a
    module ran are its own, moved to OUT/<module> once its daemons are stopped (this fixture is set
    up first, so torn down last); any written between two modules (a process that ended late) go to
    OUT/_between."""
    out = os.environ.get("JOBLET_COVERAGE_OUT")
    if out:
        coverage_move(os.path.join(out, "_between"))
        # the daemons and rnx started meanwhile write their counters straight to the module's
        # directory, whenever they end: pytest may tear a module's own daemon fixture down after
        # this one (test_signal's did, its last test using another fixture), and that daemon's
        # counters were moved to no module (their lines counted as reached by none)
        dest = os.path.join(out, os.path.basename(str(request.node.fspath)), os.path.basename(BUILD))
        os.environ["GCOV_PREFIX"] = dest
        os.environ["GCOV_PREFIX_STRIP"] = str(len(BUILD.strip("/").split("/")))
    yield
    if out:
        os.environ.pop("GCOV_PREFIX", None)
        os.environ.pop("GCOV_PREFIX_STRIP", None)
        coverage_move(os.path.join(out, os.path.basename(str(request.node.fspath))))


@pytest.fixture(scope="module")
def daemon():
    need_root()
    d = Daemon().start()
    yield d
    d.cleanup()


def preload_object(tmp_path, source, name, covered="the code it exercises runs under the sanitizers in the "
                                                 "module's other tests"):
    """An LD_PRELOAD object for a daemon built from source (C) into tmp_path as NAME.so: its path.
    Skipped in the sanitizer pass (covered: where its code runs there instead)."""
    if os.environ.get("JOBLET_PASS") == "sanitizers":
        pytest.skip(f"LD_PRELOAD of the object would come before the ASan runtime, which must be first; {covered}")
    src, so = tmp_path / f"{name}.c", tmp_path / f"{name}.so"
    src.write_text(source)
    p = subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(so), str(src), "-ldl"], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    os.chmod(tmp_path, 0o755)
    return str(so)


@pytest.fixture
def own_net():
    """A network namespace of the test's own for rnx console and chromium
    (console_util.OwnNetwork: chromium fails requests under way when the host's links change)."""
    need_root()
    from console_util import OwnNetwork
    with OwnNetwork() as n:
        yield n


class DbLock:
    """Another process holding a daemon's database write lock (a backup, a sqlite3 shell in
    BEGIN IMMEDIATE): every commit of the daemon's waits, then fails busy. release() lets it go,
    once (again, or from a timer and a finally both: nothing more)."""

    def __init__(self, state_dir):
        import sqlite3
        import threading
        self.conn = sqlite3.connect(os.path.join(state_dir, "joblet.db"), timeout=30, isolation_level=None,
                                    check_same_thread=False)
        self.conn.execute("BEGIN IMMEDIATE")
        self.gone = threading.Event()
        self._once = threading.Lock()

    def release(self):
        with self._once:
            if not self.gone.is_set():
                self.conn.execute("ROLLBACK")
                self.conn.close()
                self.gone.set()


@pytest.fixture
def fresh_daemon():
    """A daemon of the test's own, for tests that kill or reconfigure it."""
    need_root()
    made = []

    def make(config_text=None, start=True, env=None):
        d = Daemon(config_text, env)
        made.append(d)
        return d.start() if start else d

    yield make
    for d in made:
        d.cleanup()


def tree_allocated(top):
    """The disk blocks, in bytes, of every file under top on top's own filesystem (the images
    mounted under it count as their image files; hard links once)."""
    dev = os.stat(top).st_dev
    seen, total = set(), 0
    for dp, dirs, fs in os.walk(top):
        dirs[:] = [x for x in dirs if os.lstat(os.path.join(dp, x)).st_dev == dev]
        for f in fs:
            try:
                st = os.lstat(os.path.join(dp, f))
            except FileNotFoundError:
                continue
            if st.st_dev == dev and (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def file_holds(path, needle):
    """Whether a file's bytes hold needle, read 1 MiB at a time, skipping the holes of a sparse
    file (the owners' /work images are 20 GB sparse: read whole, a scan of the state directory
    took 21 GB of memory)."""
    chunk, keep = 1 << 20, len(needle) - 1
    with open(path, "rb") as fh:
        fd = fh.fileno()
        size = os.fstat(fd).st_size
        pos = 0
        while pos < size:
            try:
                pos = os.lseek(fd, pos, os.SEEK_DATA)
                end = os.lseek(fd, pos, os.SEEK_HOLE)
            except OSError as e:
                if e.errno == errno.ENXIO:   # only a hole from pos on
                    return False
                end = size                   # no SEEK_DATA here: read it all
            os.lseek(fd, pos, os.SEEK_SET)
            tail = b""
            while pos < end:
                block = os.read(fd, min(chunk, end - pos))
                if not block:
                    break
                if needle in tail + block:
                    return True
                tail = block[-keep:] if keep else b""
                pos += len(block)
            pos = max(pos, end)
    return False


def pytest_sessionfinish(session, exitstatus):
    """No rnx keeper (src/cli/conn_agent.h) of this build may outlive the tests: each test that
    reaches a node over TLS ends its keepers (Keepers.end). Any left is ended here by its PID and
    fails the run."""
    if hasattr(session.config, "workerinput"):
        return   # a parallel worker: the others may still run keepers; the run's end checks
    exe = os.path.realpath(os.path.join(BUILD, "rnx"))
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            if cmd.startswith(b"rnx\0node\0keep\0") and os.path.realpath(f"/proc/{pid}/exe") == exe:
                left.append(int(pid))
        except OSError:
            continue
    for pid in left:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    if left:
        print(f"\nrnx keepers left running by the tests (ended now): {left}")
        session.exitstatus = 1


# The sanitizer pass (scripts/test.sh, JOBLET_PASS=sanitizers) runs the suite again on the ASan +
# UBSan build for what sanitizers can find in joblet's C. These modules exercise little or none
# of it beyond what other modules do in that pass, and cost minutes each: they run in the normal
# pass only, and the sanitizer pass lists them as skipped with the reason.
SANITIZER_PASS_SKIPS = {
    "test_slurm_cluster.py": "it tests the test Slurm cluster itself (Python and Slurm's daemons, no joblet code)",
    "test_slurm_ml.py": "torch training through Slurm: joblet's path is test_slurm_joblet's, which the pass runs",
    "test_runtime_ml.py": "torch in a runtime: joblet's path is test_runtime_jobs', which the pass runs",
    "test_networks_ml.py": "torch between two jobs on a network: joblet's path is test_networks', which the pass runs",
    "test_console_browser.py": "chromium drives the console; the daemon's routes are test_console's, which the pass runs",
    "test_console_lighthouse.py": "Lighthouse audits the console's pages in chromium; no joblet code beyond test_console's",
}
# And these, by measure: scripts/coverage_by_file.py (a coverage build, each module alone, 2026-11-29) found
# that every line of joblet's C they reach, other modules of the pass reach too, but one each for
# two of them (an error message's line); each costs 10-30 s.
COVERED_ELSEWHERE = "every line of joblet's C it reaches, other modules of the pass reach (scripts/coverage_by_file.py)"
SANITIZER_PASS_SKIPS.update({
    "test_limits.py": COVERED_ELSEWHERE,
    "test_networks_gvisor.py": COVERED_ELSEWHERE,
    "test_gpu_guide.py": "every line of joblet's C it reaches but one (jobreq.c's max_memory_mb message), other "
                         "modules of the pass reach (scripts/coverage_by_file.py)",
    "test_networks_rate.py": "every line of joblet's C it reaches but one (networks.c's max_netbps refusal), other "
                             "modules of the pass reach (scripts/coverage_by_file.py)",
})
# The study again on 2026-12-05 (181 modules; /var/tmp/cov152, local run 151's sanitizer times): of
# the modules that reach nothing no other module of the pass reaches, those whose finding is a
# measure the sanitizers do not change (memory, a count, time) or a browser's behaviour, ~115 s
# of the pass's summed time. Kept though they reach nothing of their own: the hostile inputs
# (test_hostile_tty), the crash-consistency reviews, and test_joblist_walk (a listing walked
# while its jobs are deleted: where a use after free would be).
SANITIZER_PASS_SKIPS.update({
    "test_array_memory.py": "the daemon's RSS per array (a sanitizer build's is its allocator's, not checked "
                            "there); " + COVERED_ELSEWHERE,
    "test_hostile_events.py": "what one event costs as thousands are kept (a count); " + COVERED_ELSEWHERE,
    "test_hostile_console_worker.py": "a service worker in chromium; the daemon's routes are test_console's; " +
                                      COVERED_ELSEWHERE,
    "test_hostile_console_cache.py": "chromium's cache of the console's port; the daemon's routes are "
                                     "test_console's; " + COVERED_ELSEWHERE,
    "test_console_file.py": "the console's link file opened in chromium; " + COVERED_ELSEWHERE,
})

# Single tests, by the same rule: what they look for shows in the normal pass, and the code they run
# runs under the sanitizers in other tests of the pass.
SANITIZER_PASS_SKIP_TESTS = {
    # 6,000 submissions (2 min under ASan) to show that a chain of arrays is decided in a loop, not
    # recursively: a stack overflow is a crash in the normal pass too, and the cascade's code (an
    # array canceled, then what waits on it) runs under the sanitizers in test_arrays'
    # test_array_after_a_job_and_a_job_after_an_array and test_dependencies' chain tests
    "test_hostile_arrays.py::test_a_long_chain_of_arrays_ends_without_recursing":
        "a recursion depth (a crash in the normal pass); the cascade's code runs under the sanitizers in "
        "test_arrays and test_dependencies",
    # what it looks for is which jobs a listing looks at; the lists it reads are kept, and checked
    # against a scan at every use (log level debug), by every daemon of the pass
    "test_scancel.py::test_waiting_listings_exact_across_changes":
        "which jobs a listing looks at; the lists are kept and checked against a scan by every daemon of the pass",
    # every parameter (one per command, ~110 s under ASan): the drift guard compares two texts,
    # the flags a command's help documents and those its completion offers; the completion's code
    # runs under the sanitizers in the module's other tests (flags, values, jobs from the daemon, zsh)
    # 60,000 directories each (10 s in the normal pass): what they look for is how the turn's
    # slice is shared and a PUT's pace (time); the slices' code runs under the sanitizers in
    # test_hostile_loop's long-listing tests and the rest of this module
    "test_hostile_uploads2.py::test_one_users_long_listing_does_not_take_every_slice":
        "how the loop's slice is shared (time); the slices' code runs under the sanitizers in test_hostile_loop",
    "test_hostile_uploads2.py::test_a_put_waiting_on_its_entries_keeps_its_pace":
        "a PUT's pace while joblet makes its entries (time); the code runs under the sanitizers in test_hostile_loop",
    # 2,600 jobs: what it looks for is how many jobs one release looks at with 2,000 jobs of the
    # name kept, a count the sanitizers do not change; the singletons' code (the (owner, name)
    # index, the release, the waiters' order) runs under the sanitizers in test_singleton
    "test_hostile_deps.py::test_singletons_let_go_by_one_job_are_decided_once_per_name":
        "how many jobs one release looks at among 2,600 (a count); the singletons' code runs under the "
        "sanitizers in test_singleton",
    # 64 arrays of 25 tasks, twice, and 200 jobs after them (68 s under ASan): what it looks for is
    # how many dependencies the decisions look at, a count the sanitizers do not change; the
    # decisions' code (arrays as dependencies, all tasks or task by task) runs under the
    # sanitizers in test_arrays' after tests and test_dependencies
    "test_hostile_deps.py::test_jobs_after_many_arrays_are_decided_at_their_start_and_end_not_each_tasks":
        "how many dependencies the decisions look at (a count); the decisions' code runs under the sanitizers in "
        "test_arrays and test_dependencies",
    # an interleaved array of ~800 tasks released, canceled and run (20 s under ASan): the same
    # code (ahead's ranges, the releases' and cancels' refusals) runs under the sanitizers in the
    # module's other seeds and tests and in test_hostile_ahead
    "test_hostile_arrprop.py::test_random_array_bookkeeping_big":
        "an ~800-task seed of the explorer (20 s under ASan); its code runs under the sanitizers in the module's "
        "other seeds and test_hostile_ahead",
    "test_completion.py::test_documented_flags_are_completed_and_completed_flags_are_real":
        "it compares the help's flags with the completion's (text); the completion's code runs under the "
        "sanitizers in test_completion's other tests",
}


# Parallel workers. scripts/test.sh runs the modules in pytest-xdist workers (--dist loadgroup):
# each module runs whole, its tests in order, in one worker. Every daemon has its own directory,
# socket and cgroup root, so most modules share nothing with each other; the modules of a group
# below share something of the machine's and so run one after another in one worker, in the
# order listed. The units (a group, or a module) are handed out the longest first (unit_order).
SHARED = {
    # The runtime build cache: 8 archives kept, so one module's builds may evict another's
    # python-3.11-ml (minutes from the mirror when cold; runtime_util.build waits for a build of
    # the same recipe another worker has under way, then takes it from the cache).
    "runtime-cache": ["test_runtime_ml.py", "test_runtimes.py", "test_gpu_guide.py"],
    # chromium, a core or two each: one browser at a time
    "chromium": ["test_console_lighthouse.py", "test_console_browser.py"],
    # dpkg and what the .deb installs (/usr/share/bash-completion, which test_completion reads;
    # test_packaging's meson install)
    "dpkg": ["test_deb.py", "test_packaging.py", "test_completion.py"],
    # the GPU scrub's holder check kills any process of the machine that holds a released GPU's
    # node (195:minor, the fixtures' minors are alike): test_gpu_holders' holders are another
    # daemon's to kill while one of these modules scrubs
    "gpu-scrub": ["test_gpu_holders.py", "test_gpu_isolation.py", "test_gpu_health.py"],
    # Slurm's fixed v1 cgroups slurm_node1/2, and every slurm* one swept at a cluster's end
    "slurm": ["test_slurm_cluster.py", "test_slurm_joblet.py", "test_slurm_plugin.py", "test_slurm_hostile.py",
              "test_docs_slurm.py", "test_slurm_ml.py"],
    # (handed out no earlier than runtime-cache (UNIT_AFTER), and test_slurm_ml above last of its
    # group: their ML modules wait for runtime-cache's first build of python-3.11-ml, ~5 minutes
    # on an empty machine, holding a worker idle; the later they start, the less)
    # nftables' table inet joblet, the links jb-*/jv* (test_networks' fixture prunes and checks
    # them) and the default networks' addresses; the host's interface list (test_cli and
    # test_isolation compare a --network host job's with it; test_delegated adds a veth)
    "host-network": ["test_networks.py", "test_networks_gvisor.py", "test_networks_rate.py", "test_cli.py",
                     "test_isolation.py", "test_delegated.py", "test_networks_ml.py"],
}
GROUP_OF = {m: g for g, ms in SHARED.items() for m in ms}
UNIT_AFTER = {"slurm": "runtime-cache"}


def unit_order(units, seconds):
    """The order in which the workers are handed the units: the longest first by seconds (the
    unit's time in the pass, unit_seconds.json), so that a long one never starts last and runs
    alone while the other workers wait (before: modules in file-name order after the groups, which
    run 146 still packed 97 % (normal pass) and 99 % (sanitizer pass) onto 3 workers; the order
    keeps it so as modules grow or workers are added: docs/performance.md); a unit of no known time
    (a module newer than the file) first; a unit of UNIT_AFTER no earlier than the one it waits for."""
    order = sorted(units, key=lambda u: (-seconds.get(u, float("inf")), u))   # (ties: by name, as every worker)
    for u, first in UNIT_AFTER.items():
        if u in order and first in order and order.index(u) < order.index(first):
            order.remove(u)
            order.insert(order.index(first) + 1, u)
    return order


def recorded_unit_seconds(pass_name):
    """{unit: seconds} of the pass ("normal" or "sanitizers") in the last run recorded
    (scripts/unit_seconds.py); none when the file is missing."""
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "unit_seconds.json")) as fp:
            return json.load(fp).get(pass_name, {})
    except FileNotFoundError:
        return {}


@pytest.hookimpl(tryfirst=True)   # before xdist's own, which reads the group's mark
def pytest_collection_modifyitems(config, items):
    def module(item):
        return os.path.basename(str(item.fspath))
    def unit(item):
        return GROUP_OF.get(module(item), module(item))
    for item in items:
        item.add_marker(pytest.mark.xdist_group(unit(item)))
    sanitizers = os.environ.get("JOBLET_PASS") == "sanitizers"
    rank = {u: i for i, u in enumerate(unit_order({unit(it) for it in items},
                                                  recorded_unit_seconds("sanitizers" if sanitizers else "normal")))}
    within = {m: i for ms in SHARED.values() for i, m in enumerate(ms)}   # a group's modules as listed
    items.sort(key=lambda it: (rank[unit(it)], within.get(module(it), 0)))   # stable: a module's tests as collected
    if not sanitizers:
        return
    for item in items:
        why = SANITIZER_PASS_SKIPS.get(module(item)) or \
            SANITIZER_PASS_SKIP_TESTS.get(f"{module(item)}::{item.originalname}")   # (each parameter)
        if why:
            item.add_marker(pytest.mark.skip(reason=f"normal pass only: {why}"))


class FakeJoblet:
    """A server on a Unix socket that answers each request from answers (status, headers, body),
    the last one again when they run out (None: the request read whole, the connection closed
    with no answer, as a joblet killed then); counts the requests."""

    def __init__(self, path, answers):
        self.answers, self.n = answers, 0
        self.s = socket.socket(socket.AF_UNIX)
        self.s.bind(path)
        self.s.listen(16)
        self.t = threading.Thread(target=self.serve, daemon=True)
        self.t.start()

    def serve(self):
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            with c:
                c.settimeout(10)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        more = c.recv(65536)
                        if not more:
                            break
                        data += more
                    answer = self.answers[min(self.n, len(self.answers) - 1)]
                    self.n += 1
                    if answer is None:
                        continue
                    status, headers, body = answer
                    head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n" \
                           f"Content-Length: {len(body)}\r\nConnection: close\r\n"
                    c.sendall(head.encode() + b"".join(h + b"\r\n" for h in headers) + b"\r\n" + body)
                except OSError:
                    pass

    def close(self):
        self.s.close()
