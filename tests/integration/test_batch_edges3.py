"""Refusals of `rnx job batch` and of an array's %N, as docs/batch.md says them: an #SBATCH option
refused for what it became (`--array=5-3`, a priority out of range, a GPU count past what a job may
ask) names the script's line, and a %N too large says the bound it broke. The first two tests are
the hostile tester's (h-batchtest, tests/integration/test_batch_hostile.py)."""
import pytest


def test_a_batch_scripts_array_refused_names_its_line(daemon, tmp_path):
    """docs/batch.md, rnx job batch: refused "the message naming the line: ... and whatever rnx
    job run refuses in what the options became (--array=5-3)". What the run's own parser
    refuses (--array, --priority) is said as if given on rnx's command line, without the
    script's line, so a user with a long #SBATCH block is not told where it is."""
    d = daemon
    for opt in ("--array=5-3", "--array=0-3%0", "--priority=5000"):
        script = tmp_path / "bad.sh"
        script.write_text(f"#!/bin/sh\n# a sweep\n#SBATCH {opt}\ntrue\n")
        p = d.rnx("job", "batch", str(script))
        assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout, p.stderr)
        assert f"line 3: #SBATCH {opt}" in p.stderr, p.stderr


def test_a_throttle_too_large_is_refused_saying_the_bound(daemon):
    """--array=0-3%4000001 is refused with "%N ... N is a whole number from 1", which it is: the
    message does not say the bound it broke (4000000), which `rnx job update --throttle` names
    ("from 1 to 4000000"). core: common/arrayspec.c arrayspec_parse."""
    d = daemon
    p = d.rnx("job", "run", "--array=0-3%4000001", "true")
    assert p.returncode == 2 and "4000000" in p.stderr, p.stderr


# Every option sbatch.c passes on, refused for what it became, and what the message must say
# besides the line: (the #SBATCH line's option(s), a word of the refusal).
REFUSED = [
    ("--gpus=65", "from 0 to 64"),                       # sbatch takes 1..1024, a job 64 at most
    ("--gres=gpu:a100:100", "from 0 to 64"),
    ("--job-name=" + "x" * 200, "longer than 128"),
    ("--time=100000000", "ten years"),
    ("--chdir=rel", "absolute path"),
    ("--dependency=afterok:", "afterok:"),
    ("--signal=USR1@60", "run-time limit"),              # a rule between fields: the signal's line
    ("--export=A=1,A=2", "given twice"),
    ("--array=", "not a task list"),
    ("--priority=", "from -1000 to 1000"),
    ("--max-memory=lots", "size"),                       # rnx job run's own flags, taken as they are
    ("--volume=%%", "volume names"),
    ("--env=A", "KEY=VALUE"),
    ("--upload=/nonexistent-sbfix", "No such file"),
]


@pytest.mark.parametrize("opt,says", REFUSED, ids=[o[:24] for o, _ in REFUSED])
def test_each_refused_option_names_its_line(daemon, tmp_path, opt, says):
    script = tmp_path / "bad.sh"
    script.write_text(f"#!/bin/sh\n#SBATCH -J fine\n\n#SBATCH {opt}\ntrue\n")
    before = daemon.job_count()
    p = daemon.rnx("job", "batch", str(script))
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout, p.stderr)
    assert f"line 4: #SBATCH {opt[:40]}" in p.stderr and says in p.stderr, p.stderr
    assert daemon.job_count() == before, "nothing is submitted"


def test_a_rule_between_lines_names_the_line_it_refuses(daemon, tmp_path):
    """--dependency=singleton with an array is refused (give %1): the dependency's line is named."""
    script = tmp_path / "sweep.sh"
    script.write_text("#!/bin/sh\n#SBATCH --array=0-3\n#SBATCH --dependency=singleton\ntrue\n")
    p = daemon.rnx("job", "batch", str(script))
    assert p.returncode == 2 and "line 3: #SBATCH --dependency=singleton" in p.stderr, p.stderr


def test_the_command_line_refused_names_the_option_and_wins_over_the_script(daemon, tmp_path):
    """The command line's options name themselves (no line); and one given there replaces the
    script's, so a script's bad value the command line overrides is not refused."""
    d = daemon
    script = tmp_path / "ok.sh"
    script.write_text("#!/bin/sh\n#SBATCH --array=5-3\n#SBATCH --priority=5000\necho ran\n")
    p = d.rnx("job", "batch", "--array=0-3%4000001", str(script))
    assert p.returncode == 2 and "--array=0-3%4000001" in p.stderr and "4000000" in p.stderr, p.stderr
    assert "line " not in p.stderr, p.stderr
    p = d.rnx("job", "batch", "--array=0-1", "--priority=7", str(script))
    assert p.returncode == 0, p.stderr
    aid = p.stdout.strip()
    d.wait(aid)
    job = d.job(aid)
    assert job["status"] == "COMPLETED" and job["request"]["priority"] == 7, job


def test_a_script_upload_clashing_with_the_script_names_its_line(daemon, tmp_path):
    """The script travels as an upload of its own name: an #SBATCH --upload of another file of
    that name would land on it."""
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "job.sh").write_text("x\n")
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/sh\n#SBATCH --upload={tmp_path}/other/job.sh\ntrue\n")
    p = daemon.rnx("job", "batch", str(script))
    assert p.returncode == 2 and "line 2: #SBATCH --upload=" in p.stderr and "both be" in p.stderr, p.stderr
