"""The GPU/CUDA guide's user journey, as a user follows it (issue 13, acceptance 1): every
`rnx job run` line of the guide (tests/fixtures/gpu-guide/commands.txt, copied from the guide
verbatim) runs as written, with only its script uploaded (`--upload=SCRIPT` added: the guide
assumes the scripts are there), on a simulated DGX H100, in the python-3.11-ml runtime (named by
the line, or the machine's runtimes.default for the lines that name none), and ends COMPLETED;
a line asking for more CPUs or memory than this machine has is refused with the error that
names it. The guide's ml-training-pipeline.yaml runs through `rnx workflow run --follow` with
nothing changed but its three scripts added as uploads and max_cpu values this machine can meet;
exactly as written, it is refused only for the CPUs this machine lacks, and `rnx workflow
validate` says the same as `run`."""
import os
import re
import shlex
import shutil
import subprocess

import pytest

import runtime_util
from conftest import BUILD, ROOT, Daemon
from gpu_nodes import FIX

GUIDE = os.path.join(ROOT, "tests", "fixtures", "gpu-guide")
SCRIPTS = os.path.join(GUIDE, "scripts")
RUNTIME = "python-3.11-ml"


def guide_commands():
    with open(os.path.join(GUIDE, "commands.txt")) as f:
        text = f.read()
    blocks = [b for b in re.split(r"\n\s*\n", text) if b.strip() and not b.lstrip().startswith("#")]
    return [b.strip() for b in blocks]


def machine():
    with open("/proc/meminfo") as f:
        mem_mb = int(f.readline().split()[1]) // 1024
    return os.cpu_count(), mem_mb


@pytest.fixture(scope="module")
def guide():
    runtime_util.need_mirror_or_cache(RUNTIME)
    os.makedirs(runtime_util.CACHE, mode=0o700, exist_ok=True)
    d = Daemon(f"runtimes:\n  cache_dir: {runtime_util.CACHE}\n  cache_keep: 8\n  default: {RUNTIME}\n"
               f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n")
    d.start()
    try:
        p = runtime_util.build(d, RUNTIME, timeout=1800)
        assert p.returncode == 0, p.stdout + p.stderr
        for name, size in (("data-lake", "64MB"), ("images", "16MB")):
            d.rnx("volume", "create", name, f"--size={size}", check=True)
        yield d
    finally:
        for j in d.api("GET", "/v1/jobs")[1]["jobs"]:
            if j["status"] in ("RUNNING", "QUEUED", "SCHEDULED", "PENDING"):
                d.api("POST", f"/v1/jobs/{j['id']}/stop")
        d.stop()
        d.cleanup() if hasattr(d, "cleanup") else None


def with_upload(argv):
    """The line's argv with `--upload=SCRIPT` for the script it runs, unless it uploads already."""
    if any(a.startswith("--upload") for a in argv):
        return argv
    script = next(a for a in argv if a.endswith(".py"))
    return argv[:3] + [f"--upload={script}"] + argv[3:]


def refusal(argv, ncpu, mem_mb):
    """The flags asking for more than this machine has, as rnx names them (empty if none)."""
    too_much = []
    for a in argv:
        m = re.match(r"--max-cpu=(\d+)$", a)
        if m and int(m.group(1)) > ncpu * 100:
            too_much.append("--max-cpu")
        m = re.match(r"--max-memory=(\d+)$", a)
        if m and int(m.group(1)) > mem_mb:
            too_much.append("--max-memory")
    return too_much


@pytest.mark.parametrize("line", guide_commands(), ids=lambda l: " ".join(l.split()[3:])[:60])
def test_guide_line(guide, line):
    d = guide
    ncpu, mem_mb = machine()
    argv = shlex.split(line.replace("\\\n", " "))
    assert argv[:3] == ["rnx", "job", "run"]
    argv = with_upload(argv)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    p = subprocess.run([os.path.join(BUILD, "rnx")] + argv[1:], cwd=SCRIPTS, capture_output=True, text=True,
                       env=env, timeout=120)
    why = refusal(argv, ncpu, mem_mb)
    if why:
        # the flag that asks for too much is named, with what this machine has
        assert p.returncode != 0 and any(p.stderr.startswith(f"rnx: {flag}:") for flag in why), p.stderr
        assert "this machine" in p.stderr, p.stderr
        return
    assert p.returncode == 0, p.stderr
    jid = p.stdout.strip()
    job = d.wait(jid, timeout=300)
    out, err = d.output(jid), d.output(jid, "stderr")
    assert job["status"] == "COMPLETED", (job, out, err)
    assert job["runtime"] == RUNTIME
    gpus = next((int(a.split("=")[1]) for a in argv if a.startswith("--gpu=")), 0)
    assert len(job["gpus"]) == gpus, job["gpus"]
    script = next(a for a in argv if a.endswith(".py") and not a.startswith("--"))
    if script == "model.py":   # torch.distributed.launch: one process per --nproc_per_node
        assert sorted(l.split(",")[0] for l in out.splitlines() if l.startswith("model.py")) == \
            [f"model.py: rank {r} of 4" for r in range(4)], out
    elif script == "gpu_hello.py":
        assert out.startswith("hello from 3.11"), out
    else:
        assert out.startswith(f"{script}:"), (out, err)


def write_pipeline(tmp_path, text):
    for s in ("preprocess.py", "train.py", "evaluate.py"):
        shutil.copy(os.path.join(SCRIPTS, s), tmp_path / s)
    path = tmp_path / "ml-training-pipeline.yaml"
    path.write_text(text)
    return str(path)


def test_guide_pipeline_as_written_is_refused_only_for_cpus(guide, tmp_path):
    d = guide
    with open(os.path.join(GUIDE, "ml-training-pipeline.yaml")) as f:
        text = f.read()
    path = write_pipeline(tmp_path, text)
    ncpu, _ = machine()
    runs = [d.rnx("workflow", cmd, path) for cmd in ("validate", "run")]
    if ncpu * 100 >= 800:
        pytest.skip("this machine has the 8 CPUs the file asks for")
    # run also notes the scripts beside the file that its jobs do not upload (the guide's file has
    # no uploads: each job's python3 would find no script in /work); validate sends nothing
    notes = [l for l in runs[1].stderr.splitlines() if l.startswith("rnx: note:")]
    assert [re.search(r"'(\w+\.py)'", l).group(1) for l in notes] == ["preprocess.py", "train.py", "evaluate.py"], \
        runs[1].stderr
    errs = ["".join(l for l in p.stderr.splitlines(True) if not l.startswith("rnx: note:")) for p in runs]
    for p, err in zip(runs, errs):
        assert p.returncode == 1, p.stdout
        assert re.match(rf"{re.escape(path)}:\d+:\d+: job '(data-preprocessing|model-training)': max_cpu: "
                        r"'\d+' must be a CPU percentage from 1 to \d+", err), err
    assert errs[0] == errs[1]


def test_guide_pipeline_runs(guide, tmp_path):
    d = guide
    with open(os.path.join(GUIDE, "ml-training-pipeline.yaml")) as f:
        text = f.read()
    ncpu, _ = machine()
    cpu = min(200, ncpu * 100)
    text = re.sub(r"max_cpu: \d+", f"max_cpu: {cpu}", text)
    for job, script in (("data-preprocessing", "preprocess.py"), ("model-training", "train.py"),
                        ("model-evaluation", "evaluate.py")):
        text = text.replace(f"  {job}:\n", f"  {job}:\n    uploads: [{script}]\n", 1)
    path = write_pipeline(tmp_path, text)
    p = d.rnx("workflow", "run", "--follow", path, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "COMPLETED" in p.stdout.splitlines()[-1], p.stdout
    wfs = d.api("GET", "/v1/workflows")[1]["workflows"]
    wf = d.api("GET", f"/v1/workflows/{wfs[-1]['id']}")[1]
    assert [j["status"] for j in wf["jobs"]] == ["COMPLETED"] * 3, wf
    for j in wf["jobs"]:
        job = d.job(j["job_id"])
        assert job["runtime"] == RUNTIME
    train = d.job(wf["jobs"][1]["job_id"])
    assert len(train["gpus"]) == 2 and "loss" in d.output(train["id"])
