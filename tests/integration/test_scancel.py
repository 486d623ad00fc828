"""Acting on several jobs at once, as Slurm's scancel: `rnx job cancel|stop|kill|delete ID...`,
and `rnx job cancel|stop --name --status --user` choosing the jobs as `rnx job list` does with the
same flags (also `rnx job list --name`), against the real daemon: only what was chosen is touched,
another user's jobs are out of reach, dependents are taken before what they wait for (no cascade
under the command's feet), nothing matching is not an error. And Slurm's job ids: every command
takes a job's number (its SLURM_JOB_ID, `rnx job list`'s NUM) as scancel takes 42 and 42_7."""
import json
import os
import re
from datetime import datetime, timedelta, timezone

from conftest import rnx_as

UID = 4323
GATE = "while [ ! -e /work/go ]; do sleep 0.02; done"


def later():
    return "--schedule=" + (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def run(d, *args):
    return d.rnx("job", "run", *args, check=True).stdout.strip()


def states(d, *ids):
    return [d.job(j)["status"] for j in ids]


def test_several_ids_at_once(daemon):
    d = daemon
    a, b = run(d, later(), "true"), run(d, later(), "true")
    p = d.rnx("job", "cancel", a, "no-such-job-x", b)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert p.stdout.splitlines() == [f"canceled {a}", f"canceled {b}"], p.stdout
    assert "no-such-job-x" in p.stderr
    assert states(d, a, b) == ["CANCELED", "CANCELED"]
    r1, r2 = run(d, "sh", "-c", GATE), run(d, "sh", "-c", GATE)
    d.wait_status(r1, "RUNNING")
    d.wait_status(r2, "RUNNING")
    p = d.rnx("job", "stop", r1, r2)
    assert p.returncode == 0, p.stderr
    assert [d.wait(j)["status"] for j in (r1, r2)] == ["STOPPED", "STOPPED"]
    p = d.rnx("job", "delete", a, b, r1)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [f"deleted {a}", f"deleted {b}", f"deleted {r1}"], p.stdout
    assert d.api("GET", f"/v1/jobs/{a}")[0] == 404


def test_cancel_and_stop_by_name(daemon):
    """cancel --name takes the waiting jobs of that name (an array's waiting tasks too) and no
    other; stop --name takes the running one as well; a dependent of one of them is canceled by
    the command, not by cascade; rnx job list --name shows the same jobs."""
    d = daemon
    name = "sweep-" + os.urandom(3).hex()
    w1, w2 = run(d, f"--name={name}", later(), "true"), run(d, f"--name={name}", later(), "true")
    dep = run(d, f"--name={name}", f"--after={w1}:ok", "true")
    arr = d.api("POST", "/v1/jobs", {"command": "true", "name": name, "array": "0-3",
                                    "schedule_at": later().split("=", 1)[1]})[1]["id"]
    running = run(d, f"--name={name}", "sh", "-c", GATE)
    d.wait_status(running, "RUNNING")
    other = run(d, f"--name={name}-x", later(), "true")
    listed = d.rnx("job", "list", f"--name={name}", "--json", check=True).stdout
    assert sorted(j["id"] for j in json.loads(listed)) == sorted([w1, w2, dep, arr, running])
    p = d.rnx("job", "cancel", f"--name={name}")
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert states(d, w1, w2, dep, running, other) == ["CANCELED", "CANCELED", "CANCELED", "RUNNING", "SCHEDULED"]
    assert d.job(dep)["end_reason"] != "dependency", d.job(dep)   # the command took it first
    assert d.api("GET", f"/v1/jobs/{arr}")[1]["array"]["counts"] == {"CANCELED": 4}
    assert p.stdout.splitlines()[0] == f"canceled 4 tasks of array {arr} (now 4 CANCELED)", p.stdout
    # nothing left to cancel: said, not an error
    p = d.rnx("job", "cancel", f"--name={name}")
    assert p.returncode == 0 and "no job you can see matches" in p.stderr, (p.returncode, p.stderr)
    p = d.rnx("job", "stop", f"--name={name}", "--status=RUNNING")
    assert p.returncode == 0 and p.stdout.strip() == f"stopping {running}", (p.stdout, p.stderr)
    assert d.wait(running)["status"] == "STOPPED"
    assert d.job(other)["status"] == "SCHEDULED"
    d.rnx("job", "cancel", other, check=True)


def test_by_state_takes_an_arrays_tasks_in_that_state(daemon):
    """An array is listed by --status when any of its tasks is in that state (squeue -t PD shows a
    running array's pending tasks), and cancel or stop --status takes those tasks alone (scancel
    -t PENDING 123): a running array's queued tasks are canceled, its running ones go on; stop
    --status=RUNNING stops the running task and the next one starts. What the listing saw is
    checked again when the action comes (?status): a job that started meanwhile is left running."""
    d = daemon
    name = "states-" + os.urandom(3).hex()
    a = d.api("POST", "/v1/jobs", {"command": "sleep", "args": ["600"], "name": name, "array": "0-5%2"})[1]["id"]
    b = d.api("POST", "/v1/jobs", {"command": "sleep", "args": ["600"], "name": name + "-b", "array": "0-3%1"})[1]["id"]
    for arr, running in ((a, 2), (b, 1)):
        for t in range(running):
            d.wait_status(f"{arr}_{t}", "RUNNING")
    counts = d.api("GET", f"/v1/jobs/{a}")[1]["array"]["counts"]
    assert counts == {"RUNNING": 2, "QUEUED": 4}, counts
    for st in ("QUEUED", "RUNNING"):
        listed = json.loads(d.rnx("job", "list", f"--name={name}", f"--status={st}", "--json", check=True).stdout)
        assert [j["id"] for j in listed] == [a], (st, listed)
    assert json.loads(d.rnx("job", "list", f"--name={name}", "--status=HELD", "--json", check=True).stdout) == []
    # one running job: ?status that no longer holds is refused and leaves it as it is
    code, ans = d.api("POST", f"/v1/jobs/{a}_0/stop?status=QUEUED")
    assert code == 409 and "is RUNNING now, not QUEUED" in ans["error"]["message"], (code, ans)
    assert d.job(f"{a}_0")["status"] == "RUNNING"
    code, ans = d.api("POST", f"/v1/jobs/{a}/cancel?status=WAITING")
    assert code == 400 and ans["error"].get("field") == "status", (code, ans)
    code, ans = d.api("POST", f"/v1/jobs/{a}/cancel?status=HELD")
    assert code == 409 and "no task HELD was left to cancel" in ans["error"]["message"], (code, ans)

    p = d.rnx("job", "cancel", f"--name={name}", "--status=QUEUED")
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert p.stdout.splitlines() == [f"canceled 4 tasks of array {a} (now 2 RUNNING, 4 CANCELED)"], p.stdout
    assert [d.job(f"{a}_{t}")["status"] for t in range(2)] == ["RUNNING", "RUNNING"]
    # cancel takes no running task: with --status=RUNNING nothing is left for it
    p = d.rnx("job", "cancel", f"--name={name}", "--status=RUNNING")
    assert p.returncode == 0 and "no job you can see matches" in p.stderr, (p.stdout, p.stderr)

    p = d.rnx("job", "stop", f"--name={name}-b", "--status=RUNNING")
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert p.stdout.startswith(f"stopping or canceled 1 task of array {b}"), p.stdout
    assert d.wait(f"{b}_0")["status"] == "STOPPED"
    d.wait_status(f"{b}_1", "RUNNING")    # its queued tasks go on
    for arr in (a, b):
        d.rnx("job", "stop", arr, check=True)
    assert d.wait(a)["status"] == "STOPPED" and d.wait(b)["status"] == "STOPPED"


def test_status_holds_for_a_signal_and_for_ids_named(daemon):
    """?status=STATE is a condition on kill?signal= too (scancel -t PENDING -s KILL 123): a running
    job sent SIGKILL (or USR1) "only while QUEUED" is left running, 409, and an array's running
    tasks are left while its queued ones go; and rnx job stop|cancel --status holds for the IDs
    named as well as for the jobs it picks (scancel -t PENDING 123: 123's pending tasks only)."""
    d = daemon
    j = run(d, "sleep", "600")
    d.wait_status(j, "RUNNING")
    for sig in ("USR1", "KILL"):
        code, ans = d.api("POST", f"/v1/jobs/{j}/kill?signal={sig}&status=QUEUED")
        assert code == 409 and "is RUNNING now, not QUEUED" in ans["error"]["message"], (sig, code, ans)
    assert d.job(j)["status"] == "RUNNING"
    a = d.api("POST", "/v1/jobs", {"command": "sleep", "args": ["600"], "array": "0-3%1"})[1]["id"]
    d.wait_status(f"{a}_0", "RUNNING")
    code, ans = d.api("POST", f"/v1/jobs/{a}/kill?signal=USR1&status=QUEUED")
    assert code == 409 and "no task QUEUED" in ans["error"]["message"], (code, ans)
    code, ans = d.api("POST", f"/v1/jobs/{a}/kill?signal=KILL&status=QUEUED")
    assert code == 200 and ans["acted"] == 3, (code, ans)
    assert d.job(f"{a}_0")["status"] == "RUNNING"
    assert d.api("GET", f"/v1/jobs/{a}")[1]["array"]["counts"] == {"RUNNING": 1, "CANCELED": 3}
    # the CLI: an ID named with --status is taken only while in that state (said, not an error)
    p = d.rnx("job", "stop", "--status=QUEUED", j)
    assert p.returncode == 0 and "is RUNNING now, not QUEUED" in p.stderr, (p.returncode, p.stdout, p.stderr)
    assert d.job(j)["status"] == "RUNNING"
    b = d.api("POST", "/v1/jobs", {"command": "sleep", "args": ["600"], "array": "0-3%1"})[1]["id"]
    d.wait_status(f"{b}_0", "RUNNING")
    p = d.rnx("job", "stop", "--status=QUEUED", b)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert d.job(f"{b}_0")["status"] == "RUNNING"
    assert d.api("GET", f"/v1/jobs/{b}")[1]["array"]["counts"] == {"RUNNING": 1, "CANCELED": 3}
    for x in (j, a, b):
        d.rnx("job", "stop", x, check=True)
    assert [d.wait(x)["status"] for x in (j, a, b)] == ["STOPPED"] * 3


def test_flags_with_ids_filter_them(daemon):
    """With IDs, --status, --name and --user filter them, as scancel's with job ids: other jobs
    in that state (or of that name or user) are not taken, and an ID that does not match is said
    and left as it is (exit 0); the daemon checks each (?name=, ?user=)."""
    d = daemon
    name = "filter-" + os.urandom(3).hex()
    mine, other = run(d, f"--name={name}", later(), "true"), run(d, f"--name={name}", later(), "true")
    theirs = rnx_as(d, UID, "job", "run", f"--name={name}", later(), "true").stdout.strip()
    p = d.rnx("job", "cancel", "--status=SCHEDULED", mine)
    assert p.returncode == 0 and p.stdout.strip() == f"canceled {mine}", (p.stdout, p.stderr)
    assert states(d, other, theirs) == ["SCHEDULED", "SCHEDULED"]   # not taken with it
    p = d.rnx("job", "cancel", f"--name={name}-x", other)
    assert p.returncode == 0 and f"is named '{name}', not '{name}-x': left as it is" in p.stderr, p.stderr
    p = d.rnx("job", "cancel", f"--user={UID}", other, theirs)
    assert p.returncode == 0 and p.stdout.strip() == f"canceled {theirs}", (p.stdout, p.stderr)
    assert f"is uid 0's, not uid {UID}'s: left as it is" in p.stderr, p.stderr
    assert states(d, other, theirs) == ["SCHEDULED", "CANCELED"]
    # a job of no name, an array: said as what they are
    anon = run(d, later(), "true")
    code, ans = d.api("POST", f"/v1/jobs/{anon}/cancel?name={name}")
    assert code == 409 and ans["error"]["message"] == \
        f"job {anon} has no name, and '{name}' was asked for: left as it is", ans
    arr = run(d, "--array=0-1", f"--name={name}", later(), "true")
    code, ans = d.api("POST", f"/v1/jobs/{arr}/cancel?name={name}-x")
    assert code == 409 and ans["error"]["message"].startswith(f"array {arr} is named '{name}', not"), ans
    d.api("POST", f"/v1/jobs/{anon}/cancel")
    d.api("POST", f"/v1/jobs/{arr}/cancel")
    code, ans = d.api("POST", f"/v1/jobs/{other}/cancel?user=alice")
    assert code == 400 and ans["error"]["field"] == "user", (code, ans)
    d.rnx("job", "cancel", other, check=True)


def test_by_user_and_out_of_reach(daemon):
    """root takes a user's jobs with --user; a user's --name never reaches root's jobs of that name,
    and --user naming another is refused as rnx job list refuses it."""
    d = daemon
    name = "mine-" + os.urandom(3).hex()
    theirs = [rnx_as(d, UID, "job", "run", f"--name={name}", later(), "true") for _ in range(2)]
    assert all(p.returncode == 0 for p in theirs), [p.stderr for p in theirs]
    theirs = [p.stdout.strip() for p in theirs]
    roots = run(d, f"--name={name}", later(), "true")
    p = rnx_as(d, UID, "job", "cancel", f"--name={name}")
    assert p.returncode == 0, p.stderr
    assert states(d, *theirs, roots) == ["CANCELED", "CANCELED", "SCHEDULED"]
    p = rnx_as(d, UID, "job", "cancel", "--user=0")
    assert p.returncode != 0 and states(d, roots) == ["SCHEDULED"], (p.returncode, p.stderr)
    again = rnx_as(d, UID, "job", "run", later(), "true").stdout.strip()
    p = d.rnx("job", "cancel", f"--user={UID}", "--status=SCHEDULED")
    assert p.returncode == 0 and p.stdout.strip() == f"canceled {again}", (p.stdout, p.stderr)
    assert states(d, roots) == ["SCHEDULED"]
    d.rnx("job", "cancel", roots, check=True)


def number(d, ref):
    return d.api("GET", f"/v1/jobs/{ref}")[1]["number"]


def test_numbers_are_references_as_slurms_job_ids(daemon):
    """`rnx job status|cancel|hold|release 42`, `42_7`, `42_[1-2]`, `--after=42:ok`: a job's number
    (its SLURM_JOB_ID) names it wherever an id does; it wins over the id prefix it looks like,
    a job named as another's number is ambiguous, and another user's number matches nothing
    (root's: everyone's)."""
    d = daemon
    a = run(d, later(), "true")
    na = number(d, a)
    # rnx job list's NUM is the number, and the job answers to it
    row = next(ln for ln in d.rnx("job", "list", check=True).stdout.splitlines() if ln.startswith(a[:8] + " "))
    assert row.split()[1] == str(na), row
    assert json.loads(d.rnx("job", "status", "--json", str(na), check=True).stdout)["id"] == a
    # hold and release by number, a dependency by number (Slurm's afterok:42)
    assert d.rnx("job", "hold", str(na), check=True).stdout.strip().startswith(f"held {a}")
    assert d.job(a)["status"] == "HELD"
    d.rnx("job", "release", str(na), check=True)
    dep = run(d, f"--after={na}:ok", "true")
    assert d.job(dep)["after"][0]["job"] == a, d.job(dep)
    # an array: its number and its tasks' (Slurm's 42_7 and 42_[1-2])
    arr = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-3", "schedule_at": later().split("=", 1)[1]})[1]
    nr = arr["number"]
    assert json.loads(d.rnx("job", "status", "--json", str(nr), check=True).stdout)["id"] == arr["id"]
    p = d.rnx("job", "cancel", f"{nr}_[1-2]")
    assert p.returncode == 0, p.stderr
    assert d.api("GET", f"/v1/jobs/{arr['id']}")[1]["array"]["counts"] == {"CANCELED": 2, "SCHEDULED": 2}
    assert json.loads(d.rnx("job", "status", "--json", f"{nr}_3", check=True).stdout)["status"] == "SCHEDULED"
    # several at once, as scancel 42 43
    p = d.rnx("job", "cancel", str(na), str(nr))
    assert p.returncode == 0, p.stderr
    assert states(d, a, dep) == ["CANCELED", "CANCELED"]
    assert d.api("GET", f"/v1/jobs/{arr['id']}")[1]["array"]["counts"] == {"CANCELED": 4}
    # a job named as another's number: neither is taken
    named = run(d, f"--name={na}", later(), "true")
    p = d.rnx("job", "cancel", str(na))
    assert p.returncode != 0, p.stdout
    assert f"'{na}' is the number of job {a[:8]} (CANCELED) and the name of job {named[:8]} (SCHEDULED)" in p.stderr, \
        p.stderr
    assert d.job(named)["status"] == "SCHEDULED"
    d.rnx("job", "cancel", named, check=True)
    # a number wins over the id prefix it looks like: jobs until one's id starts with the digits of
    # another's number (each id's first character is a digit 1-9 with p = 9/16)
    # (on a daemon that numbered many jobs before, the numbers here have two or three digits and a
    # hit takes more jobs: up to 400, each job's number asked once)
    mine, nums = [], {}
    for _ in range(400):
        mine.append(run(d, later(), "true"))
        nums[number(d, mine[-1])] = mine[-1]
        hit = next(((j, int(m.group())) for j in mine if (m := re.match(r"[1-9][0-9]*", j))
                    and int(m.group()) in nums and nums[int(m.group())] != j), None)
        if hit:
            break
    assert hit, "no id started with another job's number in 400 jobs"
    j, n = hit
    assert json.loads(d.rnx("job", "status", "--json", str(n), check=True).stdout)["id"] == nums[n] != j
    assert json.loads(d.rnx("job", "status", "--json", j[:9] if j[8] == "-" else j[:12],
                            check=True).stdout)["id"] == j  # more of the id: the prefix
    # another user's number matches nothing, as its name does; root's number names the user's job
    theirs = rnx_as(d, UID, "job", "run", later(), "true")
    assert theirs.returncode == 0, theirs.stderr
    theirs = theirs.stdout.strip()
    nt = number(d, theirs)
    p = rnx_as(d, UID, "job", "cancel", str(na))
    assert p.returncode != 0 and f"no job matches '{na}' (by number or name; for an id that starts with these " \
        "digits, give more of it)" in p.stderr, p.stderr
    p = rnx_as(d, UID, "job", "status", "--json", str(nt))
    assert p.returncode == 0 and json.loads(p.stdout)["id"] == theirs, p.stderr
    d.rnx("job", "cancel", str(nt), check=True)
    assert states(d, theirs) == ["CANCELED"]
    d.rnx("job", "cancel", *mine, check=True)


def test_usage(daemon):
    p = daemon.rnx("job", "cancel")
    assert p.returncode == 2 and "missing ID" in p.stderr and "--name" in p.stderr, p.stderr
    p = daemon.rnx("job", "stop", "--status=DONE")
    assert p.returncode == 2 and "--status: 'DONE' is not a job state" in p.stderr, p.stderr
    p = daemon.rnx("job", "cancel", "--user=no-such-user-x")
    assert p.returncode == 2 and "--user: no user 'no-such-user-x'" in p.stderr, p.stderr


LOOKED = re.compile(r"a listing of (\w+) looked at (\d+) jobs and (\d+) arrays, picked (\d+)")


def listed(d, status, *flags):
    """The ids `rnx job list --status` prints, and how many jobs the daemon looked at for them (its
    debug line, api/jobs_list.c)."""
    seen = len(d.log())
    out = d.rnx("job", "list", f"--status={status}", "--json", *flags, check=True).stdout
    m = LOOKED.findall(d.log()[seen:])
    assert m and m[-1][0] == status, m
    return sorted(j["id"] for j in json.loads(out)), int(m[-1][1])


def check_listings(d, want):
    """Each waiting state's listing is exactly the jobs in it (by the full listing, and as want
    says), and looks at no other job however many ended ones are kept; an ended state's listing
    is exact too (it looks at every job: they are most of what is kept). want["tasks"]: the array tasks made (listed with --expand alone); want["arrays"]: the
    arrays (each one line, looked at apart from the jobs)."""
    full = json.loads(d.rnx("job", "list", "--json", "--expand", check=True).stdout)
    for st in ("PENDING", "HELD", "COMPLETED", "CANCELED"):
        ids, looked = listed(d, st, "--expand")
        assert ids == sorted(j["id"] for j in full if j["status"] == st), (st, ids)
        if st in want:
            assert ids == sorted(want[st]), (st, ids, want[st])
        # its state's jobs alone, not every job kept (an array is one line, not a job; its tasks
        # not made yet are none)
        if st in ("PENDING", "HELD"):
            assert looked == len(set(ids) - set(want.get("arrays", []))), (st, looked, ids)
    assert listed(d, "PENDING")[0] == sorted(set(want["PENDING"]) - set(want.get("tasks", []))), "no task unexpanded"


def test_waiting_listings_exact_across_changes(fresh_daemon):
    """`rnx job list --status PENDING|HELD` lists exactly the jobs in that state as they are held,
    released, let go by the job they wait for, canceled, and across a kill -9 of the daemon, and
    the daemon looks at those jobs alone (its lists of them, core/jobs.c), not at the ended jobs
    kept beside them (at log level debug it checks those lists against a scan, and stops on a
    difference)."""
    d = fresh_daemon()
    ended = [run(d, "true") for _ in range(12)]
    for j in ended:
        d.wait(j)
    gate = run(d, "sh", "-c", GATE)
    d.wait_status(gate, "RUNNING")
    p1, p2 = run(d, f"--after={gate}:ok", "true"), run(d, f"--after={gate}", "true")
    h1 = run(d, later(), "true")
    h2 = run(d, f"--after={gate}", "true")
    c = run(d, f"--after={gate}", "true")
    arr = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-1", "after": [{"job": gate, "state": "ok"}]})
    assert arr[0] == 201, arr
    arr = arr[1]["id"]
    tasks = [t["id"] for t in json.loads(d.rnx("job", "list", "--json", "--expand", check=True).stdout)
             if t.get("array_id") == arr]
    d.rnx("job", "hold", h1, h2, check=True)
    d.rnx("job", "cancel", c, check=True)
    pending = [p1, p2, arr, *tasks]

    def check(want):
        check_listings(d, {**want, "tasks": tasks, "arrays": [arr]})

    check({"PENDING": pending, "HELD": [h1, h2], "COMPLETED": ended, "CANCELED": [c]})
    d.rnx("job", "release", h2, check=True)   # back to PENDING: its dependency still runs
    d.rnx("job", "release", h1, check=True)   # SCHEDULED: its time lies ahead
    check({"PENDING": [*pending, h2], "HELD": []})
    d.rnx("job", "hold", h1, p1, check=True)
    check({"PENDING": [p2, h2, arr, *tasks], "HELD": [h1, p1]})
    d.kill9()
    d.start()
    check({"PENDING": [p2, h2, arr, *tasks], "HELD": [h1, p1]})
    open(os.path.join(d.work(gate), "go"), "w").close()
    assert d.wait(gate)["status"] == "COMPLETED"
    for j in (p2, h2):
        assert d.wait(j)["status"] == "COMPLETED"
    d.rnx("job", "release", p1, check=True)   # its dependency met meanwhile: it goes
    assert d.wait(p1)["status"] == "COMPLETED"
    check({"PENDING": [], "HELD": [h1], "CANCELED": [c]})
    assert "differ from a scan" not in d.log()
