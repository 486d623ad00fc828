"""gVisor isolation (docs/sandbox.md, issue 17): a job with isolation gvisor runs under the real
runsc from Debian (its kernel is gVisor's), with its uploads, exit code, logs, memory limit,
stop, kill and restart survival as for a native job; isolation.require_gvisor; the GPU refusal
with Debian's runsc; the nvproxy path with a fake runsc that records its arguments and bundle."""
import base64
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import ROOT

RUNSC = shutil.which("runsc") or ("/usr/bin/runsc" if os.path.exists("/usr/bin/runsc") else None)
FAKE = os.path.join(ROOT, "tests", "fakes", "runsc_nvproxy.sh")
needs_runsc = pytest.mark.skipif(RUNSC is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")


def b64(s):
    return base64.b64encode(s.encode()).decode()


def wait_until(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(what)


@needs_runsc
def test_gvisor_job_runs_under_runsc_with_uploads_exit_and_logs(fresh_daemon):
    d = fresh_daemon()
    job, out, err = d.run("sh", "-c", "cat /proc/version; cat /work/in.txt; id -u; echo to-stderr >&2; exit 7",
                          isolation="gvisor",
                          uploads=[{"path": "in.txt", "type": "file", "mode": 0o644, "content_b64": b64("uploaded\n")}])
    assert job["exit_code"] == 7, (job, out, err)
    assert job["end_reason"] == "exit", job
    lines = out.splitlines()
    # gVisor's Sentry reports its own kernel, never the host's
    host = open("/proc/version").read().strip()
    assert lines[0] != host and "Linux version 4.4.0" in lines[0], out
    assert lines[1] == "uploaded", out
    assert lines[2] != "0", out  # not root inside
    assert err == "to-stderr\n", err
    # the same command natively sees the host's kernel
    job, out, _ = d.run("cat", "/proc/version")
    assert out.strip() == host
    # the bundle the shim wrote: the job's cgroup and /work bound read-write
    cfg = json.load(open(os.path.join(d.state, "jobs", job_id_of(d, "sh"), "bundle", "config.json")))
    assert cfg["root"]["readonly"] is True
    assert any(m["destination"] == "/work" and "rw" in m["options"] for m in cfg["mounts"])
    assert cfg["linux"]["cgroupsPath"].endswith(job_id_of(d, "sh"))


def job_id_of(d, command):
    return next(j["id"] for j in d.api("GET", "/v1/jobs")[1]["jobs"] if j["command"] == command)


@needs_runsc
def test_gvisor_job_is_oom_killed_at_max_memory(fresh_daemon):
    d = fresh_daemon()
    probe = ("chunks = []\n"
             "for i in range(512):\n"
             "    chunks.append(b'\\x01' * (1 << 20))\n"
             "print('allocated 512 MiB without being killed', flush=True)\n")
    job, out, err = d.run("python3", "-c", probe, isolation="gvisor", max_memory_mb=128, timeout=120)
    assert "without being killed" not in out, (job, out, err)
    assert job["status"] == "FAILED", job
    assert job["end_reason"] == "oom_killed", (job, err)


@needs_runsc
def test_gvisor_job_stop_and_kill(fresh_daemon):
    d = fresh_daemon()
    # stop: SIGTERM reaches the job inside the sandbox (runsc kill), which handles it
    jid = d.submit("sh", "-c", "trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.1; done",
                   isolation="gvisor")
    wait_until(lambda: "ready" in d.output(jid), 30, "the gVisor job never started")
    assert d.rnx("job", "stop", jid).returncode == 0
    job = d.wait(jid, 30)
    assert job["end_reason"] == "stopped", job
    assert "got-term" in d.output(jid)
    # kill: everything at once
    jid = d.submit("sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.1; done", isolation="gvisor")
    wait_until(lambda: "ready" in d.output(jid), 30, "the gVisor job never started")
    assert d.rnx("job", "kill", jid).returncode == 0
    job = d.wait(jid, 30)
    assert job["end_reason"] == "killed", job
    assert job["exit_code"] == 137, job
    # the time limit
    job, _, _ = d.run("sleep", "30", isolation="gvisor", max_runtime_s=1, timeout=30)
    assert job["end_reason"] == "time_limit", job
    # nothing of runsc is left: its state directory holds no container
    left = subprocess.run([RUNSC, f"--root={d.state}/runsc", "list", "-q"], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout


@needs_runsc
def test_gvisor_job_survives_daemon_kill9(fresh_daemon):
    d = fresh_daemon()
    jid = d.submit("sh", "-c", "echo before; sleep 3; echo after; exit 4", isolation="gvisor")
    wait_until(lambda: "before" in d.output(jid), 30, "the gVisor job never started")
    d.kill9()
    time.sleep(0.5)
    d.start()
    job = d.wait(jid, 60)
    assert job["exit_code"] == 4, job
    assert d.output(jid) == "before\nafter\n"


@needs_runsc
def test_require_gvisor_user_gets_gvisor_and_is_refused_native(fresh_daemon):
    d = fresh_daemon("isolation:\n  require_gvisor: nobody\n")
    # as nobody (uid 65534): rnx through the socket, which the daemon identifies by SO_PEERCRED
    os.chmod(d.dir, 0o755)
    def rnx_as_nobody(*args):
        return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               os.path.join(os.environ.get("JOBLET_BUILD", os.path.join(ROOT, "build")), "rnx"),
                               *args], capture_output=True, text=True, timeout=60,
                              env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock})
    p = rnx_as_nobody("job", "run", "--isolation=native", "true")
    assert p.returncode != 0
    assert "isolation.require_gvisor lists 'nobody'" in p.stderr, p.stderr
    p = rnx_as_nobody("--json", "job", "run", "cat", "/proc/version")
    assert p.returncode == 0, p.stderr
    jid = json.loads(p.stdout)["id"]
    job = d.wait(jid)
    p = d.rnx("--json", "job", "status", "--detail", jid, check=True)
    assert '"isolation": "gvisor"' in p.stdout or '"isolation":"gvisor"' in p.stdout, p.stdout
    assert "Linux version 4.4.0" in d.output(jid), d.output(jid)
    # root is not listed: native by default
    job, out, _ = d.run("cat", "/proc/version")
    assert out.strip() == open("/proc/version").read().strip()
