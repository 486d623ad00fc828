"""docs/batch.md, docs/workflows.md and docs/api.md as a new user types them (a Slurm and Docker
user), on a simulated DGX H100 (gpu.fixture): what differed from the docs.

a. batch.md's first examples, `rnx job run --array=1,3,7 ./eval.sh` and `--array=0-99%8 ...
   python3 train.py`, and its `--after` examples (`python3 prep.py`...) sent no file: the first
   was refused (`command: './eval.sh' is not in the job's /work`), the others ran every task
   and job into `can't open file '/work/train.py'`. The examples now send them with --upload,
   and run as written (each array COMPLETED, the chain prep -> train runs).
b. `rnx job batch sweep.sh` whose `#SBATCH --cpus-per-task=4` this machine cannot give was
   refused by joblet as `rnx: --max-cpu: '400' must be ...`: a flag and a value the user never
   wrote, no line named (sbatch's own refusals name the line). joblet's refusal of a field now
   names the script's line and option that set it, then the flag it became; one set on the
   command line, that option.
c. workflows.md's "Arrays in a workflow" file was refused as written (`arr.yaml:3:14: job 'prep':
   command: './prepare.sh' is not in the job's /work`); with its uploads it runs, COMPLETED.
d. api.md's list of the fields `update` takes lacked `after_any`, which it takes (batch.md:
   `rnx job update --after=a1?b2`)."""
import os
import re
import shlex
import subprocess

import pytest

from conftest import BUILD, ROOT, Daemon, need_root

FIX = os.path.join(ROOT, "tests", "fixtures")
DOCS = os.path.join(ROOT, "docs")


@pytest.fixture(scope="module")
def dgx():
    need_root()
    d = Daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n"
               "limits:\n  max_queued_per_user: 0\n  max_jobs_per_user: 0\n").start()
    yield d
    d.cleanup()


def rnx_in(d, cwd, *args, timeout=120):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    return subprocess.run([os.path.join(BUILD, "rnx"), *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def doc_block(name, after, fence="```sh\n"):
    text = open(os.path.join(DOCS, name)).read()
    return text.split(after, 1)[1].split(fence, 1)[1].split("```", 1)[0]


def doc_lines(block):
    return [shlex.split(ln.split("  #", 1)[0]) for ln in block.splitlines() if ln.strip()]


def test_the_array_examples_run_as_written(dgx, tmp_path):
    (tmp_path / "train.py").write_text("import os\nprint('train', os.environ['SLURM_ARRAY_TASK_ID'])\n")
    (tmp_path / "eval.sh").write_text("#!/bin/sh\necho eval $SLURM_ARRAY_TASK_ID\n")
    (tmp_path / "eval.sh").chmod(0o755)
    (tmp_path / "sweep.sh").write_text("echo sweep $SLURM_ARRAY_TASK_ID\n")
    lines = doc_lines(doc_block("batch.md", "## Job arrays"))
    assert len(lines) == 3 and all(ln[:3] == ["rnx", "job", "run"] for ln in lines), lines
    ids = []
    for ln in lines:
        p = rnx_in(dgx, tmp_path, *ln[1:])
        assert p.returncode == 0, (ln, p.stderr)
        ids.append(p.stdout.strip())
    for aid, tasks in zip(ids, (100, 3, 4)):
        p = rnx_in(dgx, tmp_path, "job", "wait", "-q", aid, timeout=300)
        assert p.returncode == 0, (aid, p.stderr)
        arr = dgx.job(aid)["array"]
        assert arr["counts"].get("COMPLETED") == tasks, arr
    p = rnx_in(dgx, tmp_path, "job", "log", ids[1] + "_7")
    assert p.stdout == "eval 7\n", p.stdout


def test_the_after_examples_run_as_written(dgx, tmp_path):
    for f, text in (("prep.py", "print('prep')\n"), ("train.py", "print('train')\n"),
                    ("notify.sh", "echo notify\n")):
        (tmp_path / f).write_text(text)
    block = doc_block("batch.md", "## Waiting for other jobs", fence="```\n")
    lines = doc_lines(block)[:3]   # the others name jobs of the doc's own (5d1e0a2b, a1, b2)
    assert [ln[3] for ln in lines] == ["--name=prep", "--name=train", "--after=train:notok"], lines
    ids = []
    for ln in lines:
        p = rnx_in(dgx, tmp_path, *ln[1:])
        assert p.returncode == 0, (ln, p.stderr)
        ids.append(p.stdout.strip())
    p = rnx_in(dgx, tmp_path, "job", "wait", *ids, timeout=120)
    ends = [dgx.job(i)["status"] for i in ids]
    assert ends == ["COMPLETED", "COMPLETED", "CANCELED"], (ends, p.stdout)
    assert dgx.output(ids[1]) == "train\n"


SCRIPT = """#!/bin/bash
#SBATCH --job-name=big
#SBATCH --time=10
#SBATCH --cpus-per-task={cpus}
#SBATCH --partition=gpu
echo never
"""


def test_a_refusal_by_joblet_names_the_sbatch_line(dgx, tmp_path):
    cpus = os.cpu_count() + 1
    (tmp_path / "big.sh").write_text(SCRIPT.format(cpus=cpus))
    before = dgx.job_count()
    p = rnx_in(dgx, tmp_path, "job", "batch", "big.sh")
    assert p.returncode == 1, p.stderr
    last = p.stderr.splitlines()[-1]
    assert last.startswith(f"rnx: job batch: big.sh: line 4: #SBATCH --cpus-per-task={cpus}: --max-cpu: "
                           f"'{cpus * 100}' must be a CPU percentage"), p.stderr
    # the command line's option, as given there; its memory beyond the machine's too
    p = rnx_in(dgx, tmp_path, "job", "batch", "--mem=16T", "--cpus-per-task=1", "big.sh")
    assert p.returncode == 1, p.stderr
    assert re.search(r"^rnx: job batch: --mem=16T: --max-memory: '16777216' is more than this machine's memory",
                     p.stderr, re.M), p.stderr
    assert dgx.job_count() == before
    # rnx job run is worded as before
    p = rnx_in(dgx, tmp_path, "job", "run", f"--max-cpu={cpus * 100}", "true")
    assert p.returncode == 1 and p.stderr.startswith(f"rnx: --max-cpu: '{cpus * 100}' must be"), p.stderr


def test_the_sweep_script_runs_as_written(dgx, tmp_path):
    """batch.md's sweep.sh, its --cpus-per-task and --mem fitted to this machine (what it asks
    is refused above otherwise)."""
    text = open(os.path.join(DOCS, "batch.md")).read()
    script = text.split("$ cat sweep.sh\n", 1)[1].split("$ rnx job batch", 1)[0]
    script = script.replace("--cpus-per-task=4", "--cpus-per-task=1").replace("--mem=16G", "--mem=256M")
    script = script.replace("--array=0-99%8", "--array=0-3%2")
    (tmp_path / "sweep.sh").write_text(script)
    (tmp_path / "train.py").write_text("import sys\nprint(' '.join(sys.argv[1:]))\n")
    (tmp_path / "lrs.txt").write_text("0.1\n0.01\n0.001\n0.0001\n")
    cmd = text.split("$ rnx job batch ", 1)[1].split("\n", 1)[0]
    p = rnx_in(dgx, tmp_path, "job", "batch", *shlex.split(cmd))
    assert p.returncode == 0, p.stderr
    aid = p.stdout.strip()
    assert "line 8: #SBATCH --partition=gpu: has no meaning" in p.stderr, p.stderr
    assert rnx_in(dgx, tmp_path, "job", "wait", "-q", aid, timeout=120).returncode == 0
    task = dgx.job(aid + "_1")
    assert dgx.output(task["id"]) == f"--lr 0.01 --out runs/{task['number']}\n"


def test_the_workflow_array_example_runs_as_written(dgx, tmp_path):
    text = open(os.path.join(DOCS, "workflows.md")).read()
    yml = text.split("## Arrays in a workflow", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    yml = yml.replace("0-99%8", "0-3%2")
    (tmp_path / "arr.yaml").write_text(yml)
    for f in ("prepare.sh", "train.sh", "report.sh"):
        (tmp_path / f).write_text(f"#!/bin/sh\necho {f} $JOBLET_ARRAY_TASK_ID\n")
        (tmp_path / f).chmod(0o755)
    p = rnx_in(dgx, tmp_path, "workflow", "run", "--follow", "arr.yaml", timeout=180)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert "COMPLETED" in p.stdout.splitlines()[-1], p.stdout


def test_update_takes_after_any_as_api_md_lists_it(dgx):
    a = dgx.submit("sleep", "30", schedule_at="2030-01-01T00:00:00Z")
    b = dgx.submit("sleep", "30", schedule_at="2030-01-01T00:00:00Z")
    w = dgx.submit("true", schedule_at="2030-01-01T00:00:00Z")
    code, job = dgx.api("POST", f"/v1/jobs/{w}/update",
                        {"after": [{"job": a, "state": "ok"}, {"job": b, "state": "ok"}], "after_any": True})
    assert code == 200 and job["after_any"] is True and job["status"] == "PENDING", (code, job)
    text = open(os.path.join(DOCS, "api.md")).read()
    fields = text.split("- `update`: a body", 1)[1].split("each checked as at submission", 1)[0]
    assert "`after_any`" in fields, fields
    for j in (w, a, b):
        dgx.api("POST", f"/v1/jobs/{j}/cancel")


def test_a_file_here_that_is_not_uploaded_is_named(dgx, tmp_path):
    """A Slurm user's habit (the job sees the submit directory) costs a whole array: rnx says so
    before the job is sent when the command or an argument is a file of the current directory
    that --upload does not send, and only then."""
    (tmp_path / "train.py").write_text("print('ran')\n")
    (tmp_path / "data").mkdir()
    p = rnx_in(dgx, tmp_path, "job", "run", "--array=0-1", "python3", "train.py", "--data", "data")
    assert p.returncode == 0, p.stderr
    assert "rnx: note: 'train.py' is a file here, but the job's /work holds only what --upload sends " \
           "(add --upload train.py)" in p.stderr, p.stderr
    for args in (["--upload", "train.py", "python3", "train.py"], ["--upload", "train.py", "python3", "./train.py"],
                 ["--upload", str(tmp_path / "train.py"), "python3", "train.py"],
                 ["--workdir", "/tmp", "python3", "train.py"], ["python3", "-c", "print(1)"], ["python3", "nothere.py"]):
        p = rnx_in(dgx, tmp_path, "job", "run", *args)
        assert p.returncode == 0 and "note:" not in p.stderr, (args, p.stderr)
    # the command itself: the daemon refuses it; the note said why first
    (tmp_path / "eval.sh").write_text("#!/bin/sh\necho hi\n")
    (tmp_path / "eval.sh").chmod(0o755)
    p = rnx_in(dgx, tmp_path, "job", "run", "./eval.sh")
    assert p.returncode != 0 and "note: './eval.sh' is a file here" in p.stderr, p.stderr
