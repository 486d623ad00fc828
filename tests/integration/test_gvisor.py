"""gVisor isolation (docs/sandbox.md, issue 17): a job with isolation gvisor runs under the real
runsc from Debian (its kernel is gVisor's), with its uploads, exit code, logs, memory limit,
stop, kill and restart survival as for a native job; isolation.require_gvisor; the GPU refusal
with Debian's runsc; the nvproxy path with a fake runsc that records its arguments and bundle."""
import base64
import json
import os
import pathlib
import shutil
import subprocess
import time

import pytest

from conftest import ROOT, rnx_as, wait_for

RUNSC = shutil.which("runsc") or ("/usr/bin/runsc" if os.path.exists("/usr/bin/runsc") else None)
FAKE = os.path.join(ROOT, "tests", "fakes", "runsc_nvproxy.sh")
needs_runsc = pytest.mark.skipif(RUNSC is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")


def b64(s):
    return base64.b64encode(s.encode()).decode()


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
    assert job["isolation"] == "gvisor"
    p = d.rnx("job", "status", job["id"], check=True)
    assert "Isolation: gvisor (gVisor's runsc" in p.stdout.replace("  ", " ") or "gvisor (gVisor's runsc" in p.stdout
    # the same command natively sees the host's kernel
    job, out, _ = d.run("cat", "/proc/version")
    assert out.strip() == host
    assert job["isolation"] == "native"
    # the bundle the shim wrote (as shown in the job's directory: the environment's names only):
    # the job's cgroup and /work bound read-write
    cfg = json.load(open(os.path.join(d.state, "jobs", job_id_of(d, "sh"), "bundle-config.json")))
    assert "PATH" in cfg["process"]["env"], cfg["process"]["env"]
    assert cfg["root"]["readonly"] is True
    assert any(m["destination"] == "/work" and "rw" in m["options"] for m in cfg["mounts"])
    assert cfg["linux"]["cgroupsPath"].endswith(job_id_of(d, "sh"))


@needs_runsc
def test_gvisor_secrets_stay_off_the_disk(fresh_daemon):
    """The bundle's config.json holds the job's environment, secrets too: it lives beside runsc's
    state on a tmpfs under the state directory, and goes when the job ends; the job's directory
    keeps the config with the variables' names only."""
    d = fresh_daemon()
    secret = "s3cr3t-" + os.urandom(6).hex()
    jid = d.submit("sh", "-c", "echo ready; sleep 30", isolation="gvisor", secret_env={"TOKEN": secret})
    wait_for(lambda: "ready" in d.output(jid), "the gVisor job never started", 30)
    runsc_dir = os.path.join(d.state, "runsc")
    assert os.stat(runsc_dir).st_dev != os.stat(d.state).st_dev
    fstype = [l.split(" - ")[1].split()[0] for l in open("/proc/self/mountinfo") if l.split()[4] == runsc_dir]
    assert fstype == ["tmpfs"], fstype
    bundle = os.path.join(runsc_dir, "bundles", jid, "config.json")
    assert secret in open(bundle).read()  # where runsc reads it: in memory
    for top, dirs, files in os.walk(d.state):
        if top == d.state:
            dirs[:] = [x for x in dirs if x not in ("runsc", "work")]
        for f in files:
            p = os.path.join(top, f)
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as fh:
                    assert secret.encode() not in fh.read(), p
    shown = json.load(open(os.path.join(d.state, "jobs", jid, "bundle-config.json")))
    assert "TOKEN" in shown["process"]["env"]
    assert d.rnx("job", "kill", jid).returncode == 0
    d.wait(jid, 30)
    wait_for(lambda: not os.path.exists(os.path.dirname(bundle)), "the bundle outlived its job", 60)


@needs_runsc
def test_gvisor_start_failure_is_start_failed_with_runscs_words(fresh_daemon):
    """runsc that cannot start the command (exit 128, its error in its log) is a start failure, as a
    native job's exec failure is; a command that exits 128 itself is just that."""
    d = fresh_daemon()
    job, _, err = d.run("/opt/no/such/program", isolation="gvisor")
    assert job["end_reason"] == "start_failed", job
    assert job["exit_code"] == 127, job
    assert job["error"].startswith("runsc: ") and "/opt/no/such/program" in job["error"], job["error"]
    assert "/opt/no/such/program" in err  # runsc's own line, on the job's stderr
    job, _, _ = d.run("sh", "-c", "exit 128", isolation="gvisor")
    assert job["end_reason"] == "exit" and job["exit_code"] == 128, job


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
    wait_for(lambda: "ready" in d.output(jid), "the gVisor job never started", 30)
    listed = subprocess.run([RUNSC, f"--root={d.state}/runsc", "list", "--quiet"], capture_output=True, text=True)
    assert listed.stdout.split() == [jid], (listed.stdout, listed.stderr)  # runsc's own view: one container
    assert d.rnx("job", "stop", jid).returncode == 0
    job = d.wait(jid, 30)
    assert job["end_reason"] == "stopped", job
    assert "got-term" in d.output(jid)
    # kill: everything at once
    jid = d.submit("sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.1; done", isolation="gvisor")
    wait_for(lambda: "ready" in d.output(jid), "the gVisor job never started", 30)
    assert d.rnx("job", "kill", jid).returncode == 0
    job = d.wait(jid, 30)
    assert job["end_reason"] == "killed", job
    assert job["exit_code"] == 137, job
    # the time limit
    job, _, _ = d.run("sleep", "30", isolation="gvisor", max_runtime_s=1, timeout=30)
    assert job["end_reason"] == "time_limit", job
    # nothing of runsc is left: its state directory holds no container (deleted once the end
    # is reported)
    def none_left():
        left = subprocess.run([RUNSC, f"--root={d.state}/runsc", "list", "--quiet"], capture_output=True, text=True)
        assert left.returncode == 0, left.stderr
        return left.stdout.strip() == ""
    wait_for(none_left, "runsc still lists containers of ended jobs", 60)


@needs_runsc
def test_gvisor_job_survives_daemon_kill9(fresh_daemon):
    d = fresh_daemon()
    jid = d.submit("sh", "-c", "echo before; sleep 3; echo after; exit 4", isolation="gvisor")
    long = d.submit("sh", "-c", "trap 'echo got-term; exit 5' TERM; echo up; while :; do sleep 0.1; done",
                    isolation="gvisor")
    wait_for(lambda: "before" in d.output(jid) and "up" in d.output(long), "the gVisor jobs never started", 30)
    d.kill9()
    time.sleep(0.5)
    d.start()
    job = d.wait(jid, 60)
    assert job["exit_code"] == 4, job
    assert d.output(jid) == "before\nafter\n"
    # the re-adopted sandbox is stopped as any job: through its shim, runsc kill
    assert d.job(long)["status"] == "RUNNING"
    assert d.rnx("job", "stop", long).returncode == 0
    job = d.wait(long, 30)
    assert job["end_reason"] == "stopped" and "got-term" in d.output(long), (job, d.output(long))


@needs_runsc
def test_require_gvisor_user_gets_gvisor_and_is_refused_native(fresh_daemon):
    d = fresh_daemon("isolation:\n  require_gvisor: nobody\n")
    # as nobody (uid 65534): rnx through the socket, which the daemon identifies by SO_PEERCRED
    os.chmod(d.dir, 0o755)
    p = rnx_as(d, 65534, "job", "run", "--isolation=native", "true")
    assert p.returncode != 0
    assert "isolation.require_gvisor lists 'nobody'" in p.stderr, p.stderr
    p = rnx_as(d, 65534, "--json", "job", "run", "cat", "/proc/version")
    assert p.returncode == 0, p.stderr
    jid = json.loads(p.stdout)["id"]
    job = d.wait(jid)
    p = d.rnx("--json", "job", "status", "--detail", jid, check=True)
    assert '"isolation": "gvisor"' in p.stdout or '"isolation":"gvisor"' in p.stdout, p.stdout
    assert "Linux version 4.4.0" in d.output(jid), d.output(jid)
    # root is not listed: native by default
    job, out, _ = d.run("cat", "/proc/version")
    assert out.strip() == open("/proc/version").read().strip()


@needs_runsc
def test_require_gvisor_by_group(fresh_daemon):
    d = fresh_daemon("isolation:\n  require_gvisor: \"someone-else, @nogroup\"\n")
    p = rnx_as(d, 65534, "job", "run", "--isolation=native", "true")
    assert p.returncode == 1 and "isolation.require_gvisor lists '@nogroup'" in p.stderr, p.stderr
    # asking with another group (sg, newgrp: here gid 100) leaves nobody a member of its login
    # group all the same (before, only the group it asked with was looked at)
    p = rnx_as(d, (65534, 100), "job", "run", "--isolation=native", "true")
    assert p.returncode == 1 and "isolation.require_gvisor lists '@nogroup'" in p.stderr, (p.returncode, p.stderr)


@needs_runsc
def test_gvisor_job_writes_work_as_its_user_uses_host_network_and_runtimes(fresh_daemon, tmp_path):
    import busybox_runtime
    d = fresh_daemon(start=False)
    busybox_runtime.make(os.path.join(d.state, "runtimes"))
    d.start()
    # files the job writes in /work are its user's on the host, and stay there
    job, out, err = d.run("sh", "-c", "echo result > /work/out.txt; id -u", isolation="gvisor")
    assert job["exit_code"] == 0, (job, err)
    jid = job["id"]
    path = os.path.join(d.work(jid), "out.txt")
    assert open(path).read() == "result\n"
    assert os.stat(path).st_uid == int(out.strip()), (os.stat(path).st_uid, out)
    # network none: loopback only; host: the host's interfaces
    _, out, _ = d.run("cat", "/proc/net/dev", isolation="gvisor")
    ifaces = {l.split(":")[0].strip() for l in out.splitlines()[2:]}
    assert ifaces <= {"lo"}, out
    job, out, err = d.run("cat", "/proc/net/dev", isolation="gvisor", network="host")
    assert job["exit_code"] == 0, err
    assert len({l.split(":")[0].strip() for l in out.splitlines()[2:]} - {"lo"}) >= 1, out
    # a runtime's tree as the root, as natively
    job, out, err = d.run("sh", "-c", "cat /etc/marker; cat /proc/version", isolation="gvisor", runtime="busybox")
    assert job["exit_code"] == 0, (job, err)
    assert out.splitlines()[0] == "busybox runtime" and "4.4.0" in out, out
    # a workflow job: isolation: and the same result
    wf = tmp_path / "wf.yaml"
    wf.write_text("jobs:\n  a:\n    command: cat\n    args: [/proc/version]\n    isolation: gvisor\n")
    p = d.rnx("workflow", "run", "--follow", str(wf))
    assert p.returncode == 0, p.stdout + p.stderr
    wj = [j for j in d.api("GET", "/v1/jobs")[1]["jobs"] if j.get("workflow_id") or j["command"] == "cat"][-1]
    assert "4.4.0" in d.output(wj["id"]), d.output(wj["id"])


def test_gvisor_refused_where_runsc_is_missing(fresh_daemon, tmp_path):
    d = fresh_daemon(f"isolation:\n  runsc: {tmp_path}/no-runsc\n")
    status, body = d.api("POST", "/v1/jobs", {"command": "true", "isolation": "gvisor"})
    assert status == 400 and "gvisor is not available on this machine" in body["error"]["message"], body
    p = d.rnx("--version", check=True)
    assert "isolation gvisor: not available:" in p.stdout and "no-runsc" in p.stdout, p.stdout
    status, body = d.api("POST", "/v1/jobs", {"command": "true", "isolation": "kvm"})
    assert status == 400 and body["error"]["field"] == "isolation", body
    # a configuration that requires gVisor without it stops the daemon at start
    bad = fresh_daemon(f"isolation:\n  runsc: {tmp_path}/no-runsc\n  default: gvisor\n", start=False)
    with pytest.raises(RuntimeError, match="isolation.default asks for gVisor"):
        bad.start()


# ---- GPUs -----------------------------------------------------------------------------------

from gpu_nodes import FAKE_NVML, FIX, machine, make_nodes  # noqa: E402


def gpu_daemon(fresh_daemon, tmp_path, name, runsc=None, env=None):
    dev = tmp_path / "dev"
    make_nodes(dev, name)
    f = os.path.join(FIX, name)
    backend = "nvml" if os.path.exists(FAKE_NVML) else "proc"
    (tmp_path / "nocuda").mkdir()
    iso = f"isolation:\n  runsc: {runsc}\n" if runsc else ""
    return fresh_daemon(f"gpu:\n  backends: [{backend}]\n  nvml_library: {FAKE_NVML}\n  proc_root: {f}/proc\n"
                        f"  sys_root: {f}/sys\n  dev_root: {dev}\n  cuda_search_root: {tmp_path}/nocuda\n{iso}",
                        env={"FAKE_NVML_FIXTURE": f"{f}/machine.json", **(env or {})})


@needs_runsc
def test_gpu_job_under_debians_runsc_is_refused_with_the_version(fresh_daemon, tmp_path):
    d = gpu_daemon(fresh_daemon, tmp_path, "dgx-h100")
    version = subprocess.run([RUNSC, "--version"], capture_output=True, text=True).stdout.split()[2]
    status, body = d.api("POST", "/v1/jobs", {"command": "true", "gpu_count": 1, "isolation": "gvisor"})
    assert status == 400, body
    msg = body["error"]["message"]
    assert body["error"]["field"] == "isolation"
    assert f"runsc {version}" in msg and "nvproxy" in msg, msg
    p = d.rnx("job", "run", "--isolation=gvisor", "--gpu=1", "true")
    assert p.returncode != 0 and f"runsc {version}" in p.stderr, p.stderr
    # the same job natively is fine, and a gVisor job without GPUs too
    assert d.api("POST", "/v1/jobs", {"command": "true", "gpu_count": 1})[0] == 201
    p = d.rnx("--version", check=True)
    assert f"isolation gvisor: available: runsc {version}" in p.stdout, p.stdout
    assert "refused (this runsc has no nvproxy)" in p.stdout, p.stdout
    p = d.rnx("gpu", "list", check=True)
    assert f"Under gVisor: refused (runsc {version} has no nvproxy)" in p.stdout, p.stdout


def test_gpu_job_with_nvproxy_runsc_gets_nvproxy_and_exactly_its_gpus(fresh_daemon, tmp_path):
    d = gpu_daemon(fresh_daemon, tmp_path, "dgx-h100", runsc=FAKE)
    record = pathlib.Path(d.state) / "runsc" / "bundles"
    p = d.rnx("--version", check=True)
    assert "isolation gvisor: available: runsc release-20240101.0-fake, platform systrap, GPUs through nvproxy" \
        in p.stdout, p.stdout
    p = d.rnx("gpu", "list", check=True)
    assert "Under gVisor: through nvproxy (runsc release-20240101.0-fake)" in p.stdout, p.stdout
    jid = d.submit("true", gpu_count=2, isolation="gvisor")  # this host has no nvidia-smi: refused at submission
    job = d.wait(jid)
    assert job["exit_code"] == 0, job
    assert d.output(jid) == "fake runsc ran the bundle\n"
    argv = (record / f"{jid}.argv").read_text().splitlines()
    assert "--nvproxy=true" in argv, argv
    assert "--platform=systrap" in argv and "--network=none" in argv, argv
    assert argv[-4:] == ["run", "--bundle", os.path.join(d.state, "runsc", "bundles", jid), jid], argv
    assert f"--root={d.state}/runsc" in argv, argv
    cfg = json.loads((record / f"{jid}.config.json").read_text())
    granted = sorted(g["minor"] for g in job["gpus"])
    assert len(granted) == 2
    gpu_nodes = sorted(x["minor"] for x in cfg["linux"]["devices"]
                       if x["path"].startswith("/dev/nvidia") and x["path"][11:].isdigit())
    assert gpu_nodes == granted, cfg["linux"]["devices"]
    assert all(x["major"] == 195 for x in cfg["linux"]["devices"] if x["path"][11:].isdigit())
    assert {"/dev/nvidiactl", "/dev/nvidia-uvm"} <= {x["path"] for x in cfg["linux"]["devices"]}
    # the job's GPUs by CDI name, in the annotation
    want = ",".join(f"nvidia.com/gpu={g['uuid']}" for g in job["gpus"])
    assert cfg["annotations"]["cdi.k8s.io/joblet"] == want
    assert any(e.startswith("NVIDIA_VISIBLE_DEVICES=") or e.startswith("CUDA_VISIBLE_DEVICES=")
               for e in cfg["process"]["env"]), cfg["process"]["env"]
    # a job without GPUs: no nvproxy
    jid = d.submit("true", isolation="gvisor")
    d.wait(jid)
    argv = (record / f"{jid}.argv").read_text().splitlines()
    assert "--nvproxy=true" not in argv, argv


def test_device_flag_grants_that_gpu(fresh_daemon, tmp_path):
    d = gpu_daemon(fresh_daemon, tmp_path, "dgx-h100")
    gpus = {g["index"]: g for g in machine("dgx-h100")["gpus"]}
    p = d.rnx("--json", "job", "run", "--device=nvidia.com/gpu=1", "ls", "/dev", check=True)
    jid = json.loads(p.stdout)["id"]
    job = d.wait(jid)
    assert job["status"] == "COMPLETED", job
    assert [g["uuid"] for g in job["gpus"]] == [gpus[1]["uuid"]], job["gpus"]
    nodes = sorted(n for n in d.output(jid).split() if n.startswith("nvidia") and n[6:].isdigit())
    assert nodes == [f"nvidia{gpus[1]['minor']}"], d.output(jid)
    # two by index, or by UUID
    jid = d.submit("true", devices=["nvidia.com/gpu=0", f"nvidia.com/gpu={gpus[3]['uuid']}"])
    job = d.wait(jid)
    assert sorted(g["index"] for g in job["gpus"]) == [0, 3], job["gpus"]
    # with gpu_count besides: refused
    status, body = d.api("POST", "/v1/jobs", {"command": "true", "devices": ["nvidia.com/gpu=0"], "gpu_count": 1})
    assert status == 400 and body["error"]["field"] == "devices", body
    p = d.rnx("job", "run", "--device=amd.com/gpu=0", "true")
    assert p.returncode == 2 and "--device: 'amd.com/gpu=0'" in p.stderr, p.stderr
    # devices: in a workflow job
    wf = tmp_path / "wf.yaml"
    wf.write_text("jobs:\n  a:\n    command: 'true'\n    devices: [nvidia.com/gpu=2]\n")
    p = d.rnx("workflow", "run", "--follow", str(wf))
    assert p.returncode == 0, p.stdout + p.stderr
    wj = [j for j in d.api("GET", "/v1/jobs")[1]["jobs"] if j.get("workflow")]
    assert len(wj) == 1 and [g["uuid"] for g in wj[0]["gpus"]] == [gpus[2]["uuid"]], wj
    wf.write_text("jobs:\n  a:\n    command: 'true'\n    devices: [nvidia.com/gpu=x]\n")
    p = d.rnx("workflow", "run", str(wf))
    assert p.returncode != 0 and "wf.yaml:4:15: job 'a': devices: 'nvidia.com/gpu=x'" in p.stderr, p.stderr


@needs_runsc
def test_gvisor_job_hostname_resolves_to_loopback(fresh_daemon):
    """Under gVisor as natively: the job's own /etc/hosts and /etc/hostname, bound read-only over
    the tree's (the host's, then a runtime's), so its hostname resolves to the loopback; the
    trees' files stay as they are. A tree without /etc/hosts (one not built by this joblet) gets
    none: runsc would make the mount point in the tree itself."""
    import busybox_runtime
    d = fresh_daemon(start=False)
    root = busybox_runtime.make(os.path.join(d.state, "runtimes"))
    d.start()
    host_files = {p: open(p).read() for p in ("/etc/hosts", "/etc/hostname")}
    code = ("import socket; n = socket.gethostname(); print(n, socket.gethostbyname(n), "
            "socket.gethostbyname('localhost')); print(open('/etc/hostname').read(), end='')")
    for network in ("none", "host"):
        job, out, err = d.run("python3", "-c", code, isolation="gvisor", network=network)
        assert job["exit_code"] == 0, (job, out, err)
        name = job["hostname"]
        assert out == f"{name} 127.0.0.1 127.0.0.1\n{name}\n", (network, out)
    assert {p: open(p).read() for p in host_files} == host_files
    probe = "cat /etc/hosts /etc/marker; cat /etc/hostname 2>&1; touch /etc/hosts 2>&1; true"
    job, out, err = d.run("sh", "-c", probe, isolation="gvisor", runtime="busybox")
    assert job["exit_code"] == 0, (job, out, err)
    assert out.startswith("busybox runtime\n") and "No such file or directory" in out, out
    assert not os.path.exists(os.path.join(root, "etc", "hosts"))
    assert not os.path.exists(os.path.join(root, "etc", "hostname"))
    # a tree with both files, as a runtime built by this joblet has
    for f, text in (("hosts", "127.0.0.1 localhost\n"), ("hostname", "builder\n")):
        with open(os.path.join(root, "etc", f), "w") as fh:
            fh.write(text)
    job, out, err = d.run("sh", "-c", probe, isolation="gvisor", runtime="busybox")
    assert job["exit_code"] == 0, (job, out, err)
    name = job["hostname"]
    assert f"\n127.0.0.1\t{name}\n" in out and f"busybox runtime\n{name}\n" in out, out
    assert "touch: /etc/hosts: Read-only file system" in out or "touch: /etc/hosts: Permission denied" in out, out
    assert open(os.path.join(root, "etc", "hosts")).read() == "127.0.0.1 localhost\n"
    assert open(os.path.join(root, "etc", "hostname")).read() == "builder\n"


@needs_runsc
def test_a_known_fault_of_this_runsc_is_told_where_jobs_meet_it(fresh_daemon, tmp_path):
    """Debian 12's runsc (0.0~20221219.0) refuses AT_NO_AUTOMOUNT in statx and fstatat (gVisor
    fixed it in release-20231030), so coreutils' `ls -l` and `stat` fail inside every gVisor job.
    joblet tells the operator (its log, `rnx --version`) when the release it found has the fault,
    and only then: the claim is checked against what a job of this runsc really meets."""
    d = fresh_daemon()
    job, out, err = d.run("sh", "-c", "stat -c %s /etc/hostname", isolation="gvisor")
    meets = job["exit_code"] != 0 and "Invalid argument" in err
    assert meets or job["exit_code"] == 0, (job, out, err)
    p = d.rnx("--version", check=True)
    told = "known fault of this runsc: statx() and fstatat() with AT_NO_AUTOMOUNT" in p.stdout
    assert told == meets, (p.stdout, job, err)
    assert ("with AT_NO_AUTOMOUNT fail with EINVAL" in d.log()) == meets
    # a release after the fix (the fake runsc reports release-20240101.0) is told no fault, and a
    # machine that requires gVisor starts on it
    other = fresh_daemon(f"isolation:\n  runsc: {FAKE}\n  default: gvisor\n")
    p = other.rnx("--version", check=True)
    assert "release-20240101.0-fake" in p.stdout and "known fault" not in p.stdout, p.stdout
