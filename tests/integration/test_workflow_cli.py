"""rnx workflow, the YAML front end of workflows, against the real daemon: files checked before
anything is sent (with FILE:LINE:COL in every message, even with no daemon at all), the daemon's
own refusals shown at the line that caused them, and nothing created by an invalid file; run,
--follow (plain lines, and redrawn in place on a terminal), list, status, cancel, --json.
(The workflow engine itself is tested through the API in test_workflows.py.)"""
import fcntl
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import termios
import time

import pytest

from conftest import BUILD, ROOT

FIX = os.path.join(ROOT, "tests", "fixtures")
EXAMPLES = os.path.join(ROOT, "examples")
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# A job that runs until the test drops a file in its /work.
GATE = "while [ ! -e /work/go ]; do sleep 0.02; done"
LINE_RE = re.compile(r"^\d\d:\d\d:\d\d (\S+) ([A-Z]+)(?: \((.*)\))?$")


def gpu_daemon(fresh_daemon, fixture="a100-pcie-4", extra=""):
    return fresh_daemon(f"gpu:\n  fixture: {FIX}/{fixture}/machine.json\n  scrub: 0\n{extra}")


def write(tmp_path, name, text):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return str(p)


def run_id(d, *args, cwd=None):
    p = rnx(d, "workflow", "run", *args, cwd=cwd)
    assert p.returncode == 0, p.stderr
    wid = p.stdout.strip()
    assert UUID_RE.match(wid), p.stdout
    return wid


def rnx(d, *args, cwd=None, timeout=120):
    """d.rnx, run from cwd (the workflow file's paths are as the user typed them)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    p = subprocess.run([os.path.join(BUILD, "rnx"), *args], capture_output=True, text=True, timeout=timeout,
                       env=env, cwd=cwd or ROOT)
    for mark in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        assert mark not in p.stderr, p.stderr
    return p


def wf_get(d, wid):
    code, wf = d.api("GET", f"/v1/workflows/{wid}")
    assert code == 200, wf
    return wf


def wait_wf(d, wid, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        wf = wf_get(d, wid)
        if wf["state"] in ("COMPLETED", "FAILED", "CANCELED") and wf["ended_at"]:
            return wf
        time.sleep(0.05)
    raise AssertionError(f"workflow {wid} did not end: {wf_get(d, wid)}")


def wait_job_state(d, wid, name, state, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        j = next(j for j in wf_get(d, wid)["jobs"] if j["name"] == name)
        if j["status"] == state:
            return j
        time.sleep(0.02)
    raise AssertionError(f"{name} never became {state}: {wf_get(d, wid)}")


def release(d, wid, name):
    j = wait_job_state(d, wid, name, "RUNNING")
    open(os.path.join(d.work(j["job_id"]), "go"), "w").close()


def pipeline_text():
    """examples/ml-training-pipeline.yaml; its 8-CPU training stage fits a smaller machine's
    CPU count (max_cpu is limited to the machine's CPUs)."""
    text = open(os.path.join(EXAMPLES, "ml-training-pipeline.yaml")).read()
    if (os.cpu_count() or 1) < 8:
        text = text.replace("max_cpu: 800", f"max_cpu: {100 * (os.cpu_count() or 1)}")
        text = text.replace("max_cpu: 200", f"max_cpu: {min(200, 100 * (os.cpu_count() or 1))}")
    return text


SEED = """jobs:
  data-preprocessing:
    command: "python3"
    args: ["preprocess.py"]
    runtime: "python-3.11-ml"
    resources:
      max_memory: 4096
      max_cpu: 200
  model-training:
    command: "python3"
    args: ["train.py", "--epochs", "100"]
    runtime: "python-3.11-ml"
    requires:
      - data-preprocessing: "COMPLETED"
    resources:
      max_memory: 16384
      max_cpu: 800
      gpu_count: 2          # Request 2 GPUs
      gpu_memory_mb: 8192   # 8GB minimum per GPU
  model-evaluation:
    command: "python3"
    args: ["evaluate.py"]
    runtime: "python-3.11-ml"
    requires:
      - model-training: "COMPLETED"
    resources:
      max_memory: 8192
      gpu_count: 1
      gpu_memory_mb: 4096
"""


# ---- checked before anything is sent ---------------------------------------------------------

INVALID = [
    ("jobs:\n  a:\n    command: x\n    command: y\n", "4:5: duplicate key 'command' (first given at line 3, column 5)"),
    ("jobs:\n  a:\n    command: x\n    gpus: 2\n", "4:5: job 'a': unknown key 'gpus' (did you mean resources: gpu_count?)"),
    ("jobs:\n  a:\n    command: x\n    args: 3\n", "4:11: job 'a': args: must be a list"),
    ("jobs:\n  a:\n    command: x\n    requires: [c: COMPLETED]\n  b:\n    command: x\n    requires: [a: COMPLETED]\n"
     "  c:\n    command: x\n    requires: [b: COMPLETED]\n", "7:16: job 'b': dependency cycle: a -> c -> b -> a"),
    ("jobs:\n  a:\n    command: x\n    requires: [nope: COMPLETED]\n",
     "4:16: job 'a': requires 'nope', which is not a job of this workflow"),
    ("jobs:\n  a:\n    command: x\n  b:\n    command: x\n    requires: [a: DONE]\n",
     "6:19: job 'b': requires: 'DONE' is not a state a job ends in; use COMPLETED, FAILED, STOPPED or CANCELED"),
    ("jobs:\n  a:\n    command: x\n    resources:\n      max_memory: 4 gigs\n",
     "5:19: job 'a': max_memory: '4 gigs' is not a size"),
    ("jobs:\n  a:\n    command: x\n    uploads: [missing.py]\n",
     "4:15: job 'a': uploads: 'missing.py' does not exist (looked for "),
    ("jobs:\n  a:\n    command: x\n  bad: [1\n", "5:1: flow sequence without a closing bracket"),
]


def test_invalid_files_are_refused_without_a_daemon(tmp_path):
    """Validation happens before rnx connects: every problem prints, positioned, with no daemon."""
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": str(tmp_path / "no-daemon.sock")}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    for i, (text, want) in enumerate(INVALID):
        path = write(tmp_path, f"flows/bad{i}.yaml", text)
        for cmd in ("run", "validate"):
            p = subprocess.run([os.path.join(BUILD, "rnx"), "workflow", cmd, path], capture_output=True, text=True,
                               env=env)
            assert p.returncode == 1, (text, p.stderr)
            assert p.stdout == ""
            assert p.stderr.startswith(f"{path}:{want}"), (text, p.stderr)
            assert "cannot reach joblet" not in p.stderr
    # a valid file gets as far as the socket
    ok = write(tmp_path, "ok.yaml", "jobs:\n  a:\n    command: x\n")
    p = subprocess.run([os.path.join(BUILD, "rnx"), "workflow", "run", ok], capture_output=True, text=True, env=env)
    assert p.returncode == 1 and "cannot reach joblet" in p.stderr
    p = subprocess.run([os.path.join(BUILD, "rnx"), "workflow", "validate", ok], capture_output=True, text=True,
                       env=env)
    assert p.returncode == 0 and p.stdout == f"{ok}: workflow 'ok' is valid: 1 job\n"


def test_every_problem_of_a_file_is_listed_in_file_order(tmp_path):
    path = write(tmp_path, "many.yaml", "jobs:\n  a:\n    command: x\n    network: no/such\n"
                                        "    resources: {max_cpu: lots, gpu_cc: 7}\n  b:\n    requires: [zz: FAILED]\n")
    p = subprocess.run([os.path.join(BUILD, "rnx"), "--socket", str(tmp_path / "none.sock"), "workflow", "run", path],
                       capture_output=True, text=True)
    assert p.returncode == 1
    lines = p.stderr.splitlines()
    assert [l.split(": ")[0] for l in lines] == [f"{path}:4:14", f"{path}:5:26", f"{path}:6:3", f"{path}:7:16"], lines


def test_usage_errors_exit_2(daemon, tmp_path):
    for args in (["workflow"], ["workflow", "run"], ["workflow", "run", "a.yaml", "b.yaml"], ["workflow", "frob"],
                 ["workflow", "run", "--folow", "a.yaml"], ["workflow", "status"], ["workflow", "cancel"],
                 ["workflow", "list", "extra"]):
        p = rnx(daemon, *args)
        assert p.returncode == 2, (args, p.stderr)
        assert p.stderr.startswith("rnx: "), p.stderr
    p = rnx(daemon, "workflow", "run", str(tmp_path / "absent.yaml"))
    assert p.returncode == 1 and p.stderr == f"{tmp_path}/absent.yaml: No such file or directory\n"
    for args in (["workflow", "--help"], ["workflow", "run", "--help"], ["workflow", "status", "-h"]):
        p = rnx(daemon, *args)
        assert p.returncode == 0 and p.stdout.startswith("Usage: rnx workflow"), p.stdout


# ---- the daemon's own checks, shown at the YAML --------------------------------------------

def test_seed_file_with_runtime_is_refused_at_its_runtime_line(fresh_daemon, tmp_path):
    """A machine without the runtime the file names: refused at the runtime line, nothing created;
    validate reports the same problem as run (the daemon checks without creating anything)."""
    d = gpu_daemon(fresh_daemon)
    path = write(tmp_path, "ml-training-pipeline.yaml", SEED)
    want = (f"{path}:5:14: job 'data-preprocessing': runtime: no runtime 'python-3.11-ml' on this "
            "machine; it has none yet (an admin builds one: rnx runtime build runtimes/python-3.11-ml.yml)\n")
    for cmd in ("validate", "run"):
        p = rnx(d, "workflow", cmd, path)
        assert p.returncode == 1 and p.stdout == "", (cmd, p.stdout)
        assert p.stderr == want, (cmd, p.stderr)
    assert d.job_count() == 0 and d.api("GET", "/v1/workflows")[1] == {"workflows": []}


def test_gpu_requests_this_machine_can_never_satisfy(fresh_daemon, tmp_path):
    d = gpu_daemon(fresh_daemon)   # four 40 GB A100s
    path = write(tmp_path, "big.yaml", "jobs:\n  prep:\n    command: 'true'\n  train:\n    command: 'true'\n"
                                       "    requires: [prep: COMPLETED]\n    resources:\n      gpu_count: 5\n")
    p = rnx(d, "workflow", "run", path)
    assert p.returncode == 1
    assert p.stderr == (f"{path}:8:18: job 'train': gpu_count: asks for 5 GPUs; this machine has 4 usable GPUs "
                        "(rnx gpu list)\n")
    path = write(tmp_path, "mem.yaml", "jobs:\n  a:\n    command: 'true'\n    resources:\n      gpu_count: 1\n"
                                       "      gpu_memory_mb: 200GB\n")
    p = rnx(d, "workflow", "run", path)
    assert p.returncode == 1
    # the refusal is the memory's, at its line (issue 26: not blamed on gpu_count)
    assert p.stderr.startswith(f"{path}:6:22: job 'a': gpu_memory_mb: asks for 1 GPU with at least 204800 MB each; "
                               "this machine has 0 such GPUs of 4"), p.stderr
    # a qualifier without a GPU request, where the file does not say gpu_count: at its resources
    path = write(tmp_path, "q.yaml", "jobs:\n  a:\n    command: 'true'\n    resources:\n      max_memory: 64\n"
                                     "      gpu_type: A100\n")
    p = rnx(d, "workflow", "run", path)
    assert p.returncode == 1
    assert p.stderr == (f"{path}:6:17: job 'a': gpu_type: qualifies a GPU request, but the job asks for no GPU; "
                        "add gpu_count\n")
    # the machine's CPUs: max_cpu is the daemon's to check, at the line that asks
    path = write(tmp_path, "cpu.yaml", "jobs:\n  a:\n    command: 'true'\n    resources:\n      max_cpu: 100000\n")
    p = rnx(d, "workflow", "run", path)
    assert p.returncode == 1 and p.stderr.startswith(f"{path}:5:16: job 'a': max_cpu: '100000' must be a CPU percentage from 1 to"), p.stderr
    assert d.job_count() == 0 and d.job_dirs() == []


def test_validate_makes_the_daemons_checks_and_creates_nothing(fresh_daemon, tmp_path):
    """rnx workflow validate asks joblet for every check of a submission (POST /v1/workflows?dry_run=1):
    the same problems as run, at the same YAML line; a good file creates nothing and uses up no
    GPU request of limits.gpu_requests_per_minute."""
    d = gpu_daemon(fresh_daemon, extra="limits:\n  gpu_requests_per_minute: 1\n")
    big = write(tmp_path, "big.yaml", "jobs:\n  prep:\n    command: 'true'\n  train:\n    command: 'true'\n"
                                      "    requires: [prep: COMPLETED]\n    resources:\n      gpu_count: 5\n")
    runs = [rnx(d, "workflow", cmd, big) for cmd in ("validate", "run")]
    assert [p.returncode for p in runs] == [1, 1]
    assert runs[0].stderr == runs[1].stderr == (f"{big}:8:18: job 'train': gpu_count: asks for 5 GPUs; this machine "
                                                "has 4 usable GPUs (rnx gpu list)\n")
    ok = write(tmp_path, "ok.yaml", "jobs:\n  a:\n    command: 'true'\n    resources:\n      gpu_count: 1\n")
    for _ in range(3):   # a dry run takes no token of the one-a-minute bucket
        p = rnx(d, "workflow", "validate", ok)
        assert p.returncode == 0 and p.stdout == f"{ok}: workflow 'ok' is valid: 1 job\n", p.stderr
    assert d.job_count() == 0 and d.api("GET", "/v1/workflows")[1] == {"workflows": []}
    p = rnx(d, "workflow", "run", ok)
    assert p.returncode == 0, p.stderr
    p = rnx(d, "workflow", "run", ok)
    assert p.returncode == 1 and "too many GPU requests" in p.stderr, p.stderr


def test_no_gpu_machine_refuses_gpu_workflows(daemon, tmp_path):
    gpus = daemon.api("GET", "/v1/gpus")[1].get("gpus", [])
    if gpus:
        pytest.skip("this machine has GPUs")
    path = write(tmp_path, "p.yaml", pipeline_text())
    p = rnx(daemon, "workflow", "run", path)
    assert p.returncode == 1
    assert p.stderr.startswith(f"{path}:25:18: job 'model-training': gpu_count: No GPUs available"), p.stderr


# ---- running ---------------------------------------------------------------------------------

def test_seed_pipeline_runs_stage_by_stage_on_four_gpus(fresh_daemon, tmp_path):
    d = gpu_daemon(fresh_daemon)
    path = write(tmp_path, "ml-training-pipeline.yaml", pipeline_text())
    p = rnx(d, "workflow", "run", "--follow", path)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert re.match(r"^workflow ml-training-pipeline COMPLETED in \S+: 3 completed$", lines[-1]), lines
    events = [LINE_RE.match(l).groups() for l in lines[:-1]]
    order = [(name, state) for name, state, _ in events]
    # each stage started only after the one before it completed
    assert order.index(("data-preprocessing", "COMPLETED")) < order.index(("model-training", "RUNNING")) < \
        order.index(("model-training", "COMPLETED")) < order.index(("model-evaluation", "RUNNING"))
    running = {name: extra for name, state, extra in events if state == "RUNNING"}
    assert re.match(r"^GPUs \d,\d$", running["model-training"]), running
    assert re.match(r"^GPU \d$", running["model-evaluation"]), running
    wf = d.api("GET", "/v1/workflows")[1]["workflows"][0]
    assert wf["name"] == "ml-training-pipeline" and wf["source"] == path
    training = next(j for j in wf["jobs"] if j["name"] == "model-training")
    assert len(training["gpus"]) == 2
    # its jobs are ordinary jobs: log and status work, and name the workflow
    p = rnx(d, "job", "log", training["job_id"])
    assert p.returncode == 0 and p.stdout.startswith("training on GPUs ") and p.stdout.endswith("trained\n")
    p = rnx(d, "job", "status", training["job_id"])
    assert f"Workflow: ml-training-pipeline ({wf['id']}), job model-training\n" in p.stdout, p.stdout


def test_uploads_are_read_relative_to_the_file(fresh_daemon, tmp_path):
    d = gpu_daemon(fresh_daemon)
    # the fan-out example, copied with its script, run from elsewhere
    shutil.copytree(EXAMPLES, tmp_path / "ex")
    path = str(tmp_path / "ex" / "fan-out-fan-in.yaml")
    wid = run_id(d, path, cwd="/")
    wf = wait_wf(d, wid)
    assert wf["state"] == "COMPLETED", wf
    s = {j["name"]: j for j in wf["jobs"]}
    assert s["on-shard-failure"]["status"] == "CANCELED" and s["merge"]["status"] == "COMPLETED"
    assert sorted(g for i in range(4) for g in s[f"shard-{i}"]["gpus"]) == [0, 1, 2, 3]
    for i in range(4):
        out = d.output(s[f"shard-{i}"]["job_id"])
        assert out.startswith(f"shard {i} on GPU ") and out.endswith(f"shard {i} done\n"), out


def test_follow_exit_code_and_summary_of_a_failing_workflow(daemon, tmp_path):
    path = write(tmp_path, "fails.yaml", "name: fails\ndescription: the second step fails\njobs:\n"
                                         "  one:\n    command: sh\n    args: [-c, 'exit 0']\n"
                                         "  two:\n    command: sh\n    args: [-c, 'exit 4']\n    requires: [one: COMPLETED]\n"
                                         "  three:\n    command: 'true'\n    requires: [two: COMPLETED]\n")
    p = rnx(daemon, "workflow", "run", "--follow", path)
    assert p.returncode == 1, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert re.match(r"^workflow fails FAILED in \S+: job 'two' ended FAILED \(exit, exit code 4\): "
                    r"1 completed, 1 failed, 1 canceled$", lines[-1]), lines
    parsed = [LINE_RE.match(l) for l in lines[:-1]]
    assert all(parsed), lines
    assert ("two", "FAILED", "exit code 4") in [m.groups() for m in parsed]
    assert ("three", "CANCELED", "needed 'two' to end COMPLETED; it ended FAILED") in [m.groups() for m in parsed]
    # --json --follow: the final object, same exit code
    p = rnx(daemon, "--json", "workflow", "run", "--follow", path)
    assert p.returncode == 1
    wf = json.loads(p.stdout)
    assert wf["state"] == "FAILED" and wf["description"] == "the second step fails"


def test_follow_on_a_terminal_redraws_in_place(daemon, tmp_path):
    path = write(tmp_path, "tty.yaml", "jobs:\n  a:\n    command: sh\n    args: [-c, 'sleep 0.5']\n"
                                       "  b:\n    command: sh\n    args: [-c, 'sleep 0.5']\n    requires: [a: COMPLETED]\n")
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        os.environ["JOBLET_SOCKET"] = daemon.sock
        os.execv(os.path.join(BUILD, "rnx"), ["rnx", "workflow", "run", "--follow", path])
    out = b""
    deadline = time.time() + 60
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 1)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    _, status = os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    assert os.WEXITSTATUS(status) == 0, text
    assert "\x1b[4A" in text, text   # back to the top of the frame: header, table header, two jobs
    assert "\x1b[K" in text
    assert "JOB" in text and "STATUS" in text
    assert re.search(r"workflow tty COMPLETED in \S+: 2 completed\r?\n$", text), text
    assert not re.search(r"^\d\d:\d\d:\d\d ", text, re.M)   # no plain lines on a terminal


def test_list_status_cancel_and_json(daemon, tmp_path):
    d = daemon
    path = write(tmp_path, "long.yaml", f"name: long\njobs:\n  first:\n    command: sh\n    args: [-c, '{GATE}']\n"
                                        f"  second:\n    command: 'true'\n    requires:\n      - first: COMPLETED\n")
    wid = run_id(d, path)
    wait_job_state(d, wid, "first", "RUNNING")
    p = rnx(d, "workflow", "list")
    assert p.returncode == 0
    rows = [l for l in p.stdout.splitlines() if l.startswith(wid[:8])]
    assert len(rows) == 1 and re.match(rf"^{wid[:8]}\s+long\s+RUNNING\s+0/2\s", rows[0]), p.stdout
    p = rnx(d, "--json", "workflow", "list")
    assert wid in [w["id"] for w in json.loads(p.stdout)]
    p = rnx(d, "workflow", "status", wid[:8])
    assert p.returncode == 0
    assert f"ID:           {wid}\n" in p.stdout and "State:        RUNNING\n" in p.stdout
    assert re.search(r"^second\s+PENDING\s+-\s+-\s+-\s+[0-9a-f]{8}\s+waiting for first$", p.stdout, re.M), p.stdout
    assert "long.yaml" in p.stdout and "Workflow file" not in p.stdout
    p = rnx(d, "workflow", "status", "--detail", wid)
    assert "second waits for first COMPLETED\n" in p.stdout
    assert p.stdout.endswith(f"Workflow file {path}:\n" + open(path).read()), p.stdout
    p = rnx(d, "workflow", "status", "--json", wid)
    got = json.loads(p.stdout)
    assert got["id"] == wid and got["yaml"] == open(path).read() and got["source"] == path
    p = rnx(d, "workflow", "cancel", wid[:8])
    assert p.returncode == 0 and p.stdout.startswith(f"canceled {wid}"), p.stdout
    wf = wait_wf(d, wid)
    assert wf["state"] == "CANCELED"
    assert {j["name"]: j["status"] for j in wf["jobs"]} == {"first": "STOPPED", "second": "CANCELED"}
    p = rnx(d, "workflow", "cancel", wid)
    assert p.returncode == 1 and p.stderr == f"rnx: workflow {wid} is CANCELED already\n"
    p = rnx(d, "workflow", "status", "ffffffff")
    assert p.returncode == 1 and p.stderr == "rnx: no workflow matches 'ffffffff' (by id, id prefix or name)\n"


def test_follow_waits_out_a_daemon_restart(fresh_daemon, tmp_path):
    d = fresh_daemon()
    path = write(tmp_path, "restart.yaml", f"jobs:\n  a:\n    command: sh\n    args: [-c, '{GATE}']\n"
                                           f"  b:\n    command: 'true'\n    requires: [a: COMPLETED]\n")
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    p = subprocess.Popen([os.path.join(BUILD, "rnx"), "workflow", "run", "--follow", path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 30
    while not d.api("GET", "/v1/workflows")[1]["workflows"] and time.time() < deadline:
        time.sleep(0.05)
    wid = d.api("GET", "/v1/workflows")[1]["workflows"][0]["id"]
    wait_job_state(d, wid, "a", "RUNNING")
    d.kill9()
    time.sleep(0.5)
    d.start()
    release(d, wid, "a")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, out + err
    assert "waiting for it to come back" in err
    assert out.splitlines()[-1].startswith("workflow restart COMPLETED in ")
