"""README.md's "Using it" block as a new user types it, from a directory holding the files it
names (train.py, nightly.sh, prep.py, sweep.sh), against a real daemon.

a. `rnx job run -f ... python3 train.py`, `--schedule=30min ... ./nightly.sh`, `--volume=...
   python3 prep.py` and `--runtime=... python train.py` sent no file: the first ran into
   `can't open file '/work/train.py'` (exit 2), the second was refused (`command: './nightly.sh'
   is not in the job's /work`); `--gpu=2 ... python3 train.py` alike. Each now sends its file
   with --upload.
b. `rnx job run --after=prep:ok python3 train.py; rnx job wait train` named no job train: the
   wait said `no job named 'train'` (exit 125). The job is named now.
"""
import os
import re
import shlex
import subprocess

from conftest import BUILD, ROOT

README = os.path.join(ROOT, "README.md")


def using_it_lines():
    """The rnx command lines of README.md's "Using it" block, each split at ';' into commands
    (comments dropped)."""
    text = open(README).read()
    block = text.split("## Using it", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    cmds = []
    for line in block.splitlines():
        line = re.split(r"\s#\s", line, maxsplit=1)[0].strip()
        cmds += [c.strip() for c in line.split(";") if c.strip().startswith("rnx ")]
    return cmds


def test_every_local_file_a_readme_job_runs_is_uploaded():
    """A job whose command names a file of the user's directory (x.py, x.sh) sends it: the job's
    /work holds only what --upload sends."""
    for cmd in using_it_lines():
        words = shlex.split(cmd)
        if words[:3] != ["rnx", "job", "run"]:
            continue
        files = [w for w in words if re.fullmatch(r"(\./)?[\w.-]+\.(py|sh)", w)]
        uploads = {w.split("=", 1)[1] for w in words if w.startswith("--upload=")} | \
                  {words[i + 1] for i, w in enumerate(words[:-1]) if w == "--upload"}
        for f in files:
            assert f.removeprefix("./") in uploads, f"README.md: {cmd!r} runs {f} without --upload {f}"


def test_a_job_waited_for_by_name_is_named():
    """`rnx job wait NAME` in a line waits for a job that line names with --name."""
    for line in open(README).read().splitlines():
        for name in re.findall(r"rnx job wait (\w+)", line):
            assert f"--name={name}" in line or f"--name {name}" in line, line


def test_the_readme_jobs_run_as_written(daemon, tmp_path):
    """The block's jobs that need no GPU, runtime or volume, typed in a directory with their
    files: each is accepted, and the followed one exits 0."""
    d = daemon
    (tmp_path / "train.py").write_text("print('trained')\n")
    (tmp_path / "nightly.sh").write_text("#!/bin/sh\necho nightly\n")
    (tmp_path / "nightly.sh").chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock, "API_TOKEN": "t0k"}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x").write_text("x")

    def rnx(cmd):
        words = shlex.split(cmd)
        return subprocess.run([os.path.join(BUILD, "rnx"), *words[1:]], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, env=env)

    assert rnx("rnx job run --name=prep true").returncode == 0
    ran = 0
    for cmd in using_it_lines():
        if not cmd.startswith("rnx job run") or "…" in cmd or any(
                w in cmd for w in ("--gpu", "--volume", "--runtime", "--array")):
            continue
        p = rnx(cmd)
        assert p.returncode == 0, (cmd, p.stdout, p.stderr)
        assert "note:" not in p.stderr, (cmd, p.stderr)
        ran += 1
    assert ran >= 4
    for cmd in using_it_lines():
        if cmd.startswith("rnx job wait"):
            p = rnx(cmd)
            assert p.returncode == 0, (cmd, p.stdout, p.stderr)
