"""Review of the day's commits (rnx refusing a one-value flag given twice, the requeue's wait for
its owner's account): what they broke or left open."""
import os
import threading
import time
import uuid

from conftest import api_as
from test_hostile_nss import SLOW_UID, slow_nss  # noqa: F401 (the fixture)


def _unique(stem):
    return f"{stem}-{uuid.uuid4().hex[:6]}"


def _script(tmp_path, lines):
    path = tmp_path / "job.sh"
    path.write_text("#!/bin/bash\n" + "".join(f"#SBATCH {line}\n" for line in lines) + "true\n")
    return str(path)


def test_batch_command_line_rnx_flag_wins_over_the_scripts_sbatch_option(daemon, tmp_path):
    """sbatch's command line wins over the script's #SBATCH lines, the same option said either
    way (-J in the script, rnx job run's --name on the command line; --time and --max-runtime):
    since rnx refuses a flag given twice, both went to rnx job run and the submission was
    refused ("flag '--name' given twice")."""
    d = daemon
    name = _unique("cl")
    script = _script(tmp_path, ["-J from-script", "--time=10"])
    p = d.rnx("job", "batch", f"--name={name}", "--max-runtime=5m", "--hold", script)
    assert p.returncode == 0, p.stderr
    j = d.job(p.stdout.strip())
    assert j["name"] == name, j
    assert j["limits"]["max_runtime_s"] == 300, j


def test_batch_command_line_sbatch_option_wins_over_the_scripts_rnx_flag(daemon, tmp_path):
    """The other way round: --name and --max-runtime (rnx job run's) on #SBATCH lines, -J and
    --time on the command line."""
    d = daemon
    name = _unique("cl2")
    script = _script(tmp_path, ["--name=from-script", "--max-runtime=10m"])
    p = d.rnx("job", "batch", "-J", name, "--time=5", "--hold", script)
    assert p.returncode == 0, p.stderr
    j = d.job(p.stdout.strip())
    assert j["name"] == name and j["limits"]["max_runtime_s"] == 300, j


def test_batch_scripts_rnx_name_is_not_doubled_by_sbatchs_default_name(daemon, tmp_path):
    """A script naming its job with rnx job run's --name (no -J): sbatch's default name (the
    script's file name) went too, and rnx refused --name as given twice."""
    d = daemon
    name = _unique("scr")
    script = _script(tmp_path, [f"--name={name}"])
    p = d.rnx("job", "batch", "--hold", script)
    assert p.returncode == 0, p.stderr
    assert d.job(p.stdout.strip())["name"] == name


def _lookups_entered(log):
    try:
        return log.read_text().split()[0::3].count("enter")
    except FileNotFoundError:
        return 0


def test_a_requeue_by_name_waiting_for_the_owners_account_acts_on_the_job_it_named(fresh_daemon, slow_nss):
    """rnx job requeue NAME of an ended job waits for its owner's account (e4ab6eb), and the
    request runs again once it is known: its name was resolved again then, so a job of that name
    started meanwhile (a running one, which a name of an action prefers) was requeued instead,
    its run killed, and the ended job the request had named was left as it was."""
    env, log = slow_nss
    d = fresh_daemon("server:\n  account_cache_s: 1\n", env=env)
    os.chmod(d.dir, 0o755)
    name = _unique("twice")
    code, job = api_as(d, (SLOW_UID, SLOW_UID), "POST", "/v1/jobs", {"command": "true", "name": name})
    assert code == 201, job
    ended = job["id"]
    assert d.wait(ended)["status"] == "COMPLETED"
    # every look-up done and its answer expired: the requeue waits for the owner's
    deadline = time.time() + 30
    while time.time() < deadline:
        words = log.read_text().split() if log.exists() else []
        if words[0::3].count("enter") == words[0::3].count("leave") and time.time() - float(words[-1]) > 2:
            break
        time.sleep(0.1)
    before = _lookups_entered(log)
    out = {}
    th = threading.Thread(target=lambda: out.update(r=d.api("POST", f"/v1/jobs/{name}/requeue", timeout=60)))
    th.start()
    deadline = time.time() + 20
    while _lookups_entered(log) == before and time.time() < deadline:
        time.sleep(0.02)
    assert _lookups_entered(log) > before, "the requeue did not wait for the owner's account"
    # meanwhile (the look-up takes seconds): root starts a job of the same name
    code, other = d.api("POST", "/v1/jobs", {"command": "sleep", "args": ["300"], "name": name})
    assert code == 201, other
    d.wait_status(other["id"], "RUNNING")
    th.join(60)
    assert "r" in out, "the requeue was never answered"
    code, answer = out["r"]
    assert code == 200, answer
    assert answer["id"] == ended, answer
    assert d.job(other["id"])["status"] == "RUNNING", d.job(other["id"])
    assert d.job(ended)["preemptions"] == 1, d.job(ended)  # (it ran again: it may have ended again already)
