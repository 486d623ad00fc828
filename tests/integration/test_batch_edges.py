"""Edges of the batch features found by a hostile review (docs/batch.md): an array's task named
before it is made (`rnx job wait ID_T`, `--after=ID_T`), a task updated by its own id, and
another user's array out of reach by a task reference exactly as by any other."""
from conftest import wait_for


def run(d, *args):
    return d.rnx("job", "run", *args, check=True).stdout.strip()


def test_update_of_a_task_is_reported_as_the_task(daemon):
    """rnx job update ID_T of a made task printed `updated array ... (?)`: the task's job, which
    names its array, was read as an array's answer."""
    d = daemon
    aid = run(d, "--array=0-1", "sleep", "1000")
    wait_for(lambda: d.api("GET", f"/v1/jobs/{aid[:8]}_0")[1].get("status") == "RUNNING", "task 0 to run")
    tid = d.api("GET", f"/v1/jobs/{aid[:8]}_0")[1]["id"]
    p = d.rnx("job", "update", f"{aid[:8]}_0", "--max-runtime=2h", check=True)
    assert p.stdout.strip() == f"updated {tid} (RUNNING)", p.stdout
    assert d.job(tid)["limits"]["max_runtime_s"] == 7200
    p = d.rnx("job", "update", aid, "--max-runtime=3h", check=True)
    assert p.stdout.startswith(f"updated array {aid} ({aid[:8]}_[0-1])"), p.stdout
    d.rnx("job", "stop", aid, check=True)