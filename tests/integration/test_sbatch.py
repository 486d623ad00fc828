"""Batch scripts written for Slurm, submitted with `rnx job batch` as sbatch submits them, against
the real daemon: the #SBATCH lines up to the first command are sbatch's options, the command
line's win over them, the script runs under its #! interpreter from /work with its arguments, and
the job sees what sbatch tells a job of itself (SLURM_JOB_ID, SLURM_ARRAY_TASK_ID...). Options with
no meaning on one machine are noted, what joblet cannot honour is refused naming the line, and
nothing is submitted then. (The options one by one: tests/unit/test_sbatch.c.)"""
import json
import os
import uuid

import pytest

from conftest import wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures")

# A sweep written for Slurm: `set -u` fails on any variable sbatch would have set and joblet did not.
SWEEP = """#!/bin/bash
#SBATCH --job-name={name}
#SBATCH --array=0-5%2
#SBATCH --time=0:10:00          # ten minutes
#SBATCH --mem=64M
#SBATCH --cpus-per-task=1
#SBATCH --partition=gpu
#SBATCH --output=slurm-%A_%a.out
#SBATCH --mail-type=END

# SBATCH --nodes=4   (a comment: turned off, as Slurm users do)
set -eu
cd "$SLURM_SUBMIT_DIR"
lr=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" params.txt)
port=$((10000 + SLURM_JOB_ID % 50000))
echo "task=$SLURM_ARRAY_TASK_ID of=$SLURM_ARRAY_JOB_ID job=$SLURM_JOB_ID port=$port count=$SLURM_ARRAY_TASK_COUNT name=$SLURM_JOB_NAME" \\
     "cpus=$SLURM_CPUS_PER_TASK mem=$SLURM_MEM_PER_NODE nodes=$SLURM_NNODES lr=$lr args=$*"
#SBATCH --nodes=4
"""


def unique(stem):
    return f"{stem}-{uuid.uuid4().hex[:6]}"   # the shared daemon: a name no other test uses


def write(tmp_path, name, text, params=None):
    path = tmp_path / name
    path.write_text(text)
    if params:
        (tmp_path / "params.txt").write_text("".join(f"{p}\n" for p in params))
    return str(path)


def test_a_sweep_script_written_for_slurm_runs_unchanged(daemon, tmp_path):
    """One command submits the script's whole array with its limits; each task reads its own
    SLURM_ARRAY_TASK_ID and the variables sbatch sets, and the options joblet has no use for are
    noted on stderr, each by its line. The #SBATCH line after the first command is not read."""
    d = daemon
    name = unique("sweep")
    script = write(tmp_path, "sweep.sh", SWEEP.format(name=name), params=[0.1, 0.01, 0.001, 1e-4, 1e-5, 1e-6])
    p = d.rnx("job", "batch", f"--upload={tmp_path}/params.txt", script, "alpha", "beta gamma", check=True)
    aid = p.stdout.strip()
    notes = p.stderr.splitlines()
    assert notes == [
        "rnx: note: line 7: #SBATCH --partition=gpu: has no meaning on one joblet machine; ignored",
        "rnx: note: line 8: #SBATCH --output=slurm-%A_%a.out: joblet keeps the job's output: rnx job log ID "
        "(--stdout, --stderr); ignored",
        "rnx: note: line 9: #SBATCH --mail-type=END: joblet sends no mail (rnx job wait ID waits for the end); "
        "ignored"], p.stderr
    code, a = d.api("GET", f"/v1/jobs/{aid}")
    assert code == 200, a
    assert a["name"] == name and a["array"]["spec"] == "0-5%2", a
    wait_for(lambda: d.api("GET", f"/v1/jobs/{aid}")[1]["array"]["counts"] == {"COMPLETED": 6},
             "every task COMPLETED", timeout=120)
    p = d.rnx("--json", "job", "list", "--expand", "--name", name, check=True)
    tasks = [t for t in json.loads(p.stdout) if (t.get("array") or {}).get("id") == aid]
    assert len(tasks) == 6, p.stdout
    lrs = ["0.1", "0.01", "0.001", "0.0001", "1e-05", "1e-06"]
    for t in tasks:
        task = t["array"]["task"]
        assert t["command"] == "/bin/bash" and t["args"] == ["/work/sweep.sh", "alpha", "beta gamma"], t
        assert t["limits"]["max_runtime_s"] == 600 and t["limits"]["max_memory_mb"] == 64, t["limits"]
        assert t["limits"]["max_cpu"] == 100 and t["slurm_env"] is True, t
        out = d.output(t["id"]).strip()
        n = t["number"]   # Slurm's ids are numbers: the task's own, and its array's
        assert out == (f"task={task} of={a['number']} job={n} port={10000 + n % 50000} count=6 name={name} "
                       f"cpus=1 mem=64 nodes=1 lr={lrs[task]} args=alpha beta gamma"), out
    assert len({t["number"] for t in tasks} | {a["number"]}) == 7, tasks
    p = d.rnx("job", "status", tasks[0]["id"], check=True)
    assert f"SLURM_JOB_ID={tasks[0]['number']}, SLURM_JOB_NAME" in p.stdout, p.stdout
    assert f"SLURM_ARRAY_JOB_ID={a['number']})" in p.stdout, p.stdout
    p = d.rnx("job", "status", aid, check=True)
    assert f"at most 2 at once (SLURM_ARRAY_JOB_ID={a['number']})" in p.stdout, p.stdout


def test_the_command_line_wins_over_the_script(daemon, tmp_path):
    """sbatch's rule: an option on the command line replaces the script's (a name, a time limit,
    --export); an rnx job run flag sbatch lacks (--network) passes as it is; --export gives the
    job a variable of this shell by name, and one of the job's own wins over Slurm's."""
    d = daemon
    script = write(tmp_path, "job.sh", "#!/bin/sh\n#SBATCH -J from-script --time=5 --export=A=script\n"
                                       "echo \"$SLURM_JOB_NAME A=${A-unset} B=${B-unset} $0 $#\"\n")
    name = unique("cli")
    p = d.rnx("job", "batch", "-J", name, "--time=1:30", "--export=B,SLURM_JOB_NAME=mine", "--network=none",
              script, env={"B": "from-here"}, check=True)
    jid = p.stdout.strip()
    j = d.wait(jid)
    assert j["status"] == "COMPLETED" and j["name"] == name, j
    assert j["limits"]["max_runtime_s"] == 90, j["limits"]
    assert d.output(jid).strip() == "mine A=unset B=from-here /work/job.sh 0"


def test_wrap_and_gpus(fresh_daemon):
    """--wrap runs a command with no script (named "wrap", as sbatch names it); --gpus=TYPE:N and
    --mem-per-gpu ask for N GPUs of that model and memory for each, which the job sees."""
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx1-v100/machine.json\n  scrub: 0\n")
    p = d.rnx("job", "batch", "--gpus=v100:2", "--mem-per-gpu=1G",
              "--wrap=echo gpus=$SLURM_GPUS mem=$SLURM_MEM_PER_NODE name=$SLURM_JOB_NAME", check=True)
    jid = p.stdout.strip()
    j = d.wait(jid)
    assert j["status"] == "COMPLETED", j
    assert len(j["gpus"]) == 2 and j["limits"]["max_memory_mb"] == 2048, j
    assert d.output(jid).strip() == "gpus=2 mem=2048 name=wrap"
    # steps of such a job: one GPU of its two each, different ones while both run (as Slurm's
    # `srun --gpus=1 a & srun --gpus=1 b &`); one asking for both waits until the first ends;
    # three refused
    p = d.rnx("job", "batch", "--gpus=v100:2", "--wait", "--wrap=" + GPU_STEPS, check=True)
    jid = p.stdout.strip()
    # (--overlap: the first, held or not, as Slurm's steps that share; --export=NONE keeps the step's)
    assert d.output(jid).splitlines() == ["a=0 0", "b=1 1", "o=0", "e=1", "c waits", "c=0,1", "refused"], \
        d.output(jid)
    number = d.job(jid)["number"]
    assert d.output(jid, "stderr").splitlines() == [
        f"srun: Job {number} step creation temporarily disabled, retrying (its 2 GPUs are in other steps' use)",
        "srun: error: --gres=gpu:3: more than the job has (2 GPUs): a step has at most the job's"], \
        d.output(jid, "stderr")


GPU_STEPS = """srun --gpus=1 sh -c 'echo a=$CUDA_VISIBLE_DEVICES $SLURM_STEP_GPUS; touch /tmp/a-up
  while [ ! -e /tmp/a-go ]; do sleep 0.05; done' &
while [ ! -e /tmp/a-up ]; do sleep 0.05; done
srun --gres=gpu:1 sh -c 'echo b=$CUDA_VISIBLE_DEVICES $GPU_DEVICE_ORDINAL'
srun --overlap --gpus=1 sh -c 'echo o=$CUDA_VISIBLE_DEVICES'
srun --export=NONE --gpus=2 --gpus=1 sh -c 'echo e=$CUDA_VISIBLE_DEVICES'
srun --gpus=2 sh -c 'echo c=$CUDA_VISIBLE_DEVICES; touch /tmp/c-ran' &
sleep 1; if [ -e /tmp/c-ran ]; then echo "c ran at once"; else echo "c waits"; fi
touch /tmp/a-go; wait
srun --gres=gpu:3 true || echo refused"""


# A batch script's steps, as Slurm users write them: srun runs each as the job's one task.
STEPS = """#!/bin/bash
#SBATCH --array=0-1
#SBATCH -c 1
#SBATCH --mem=64M
set -eu
echo "which=$(command -v srun)"
srun -l bash -c 'echo "procid=$SLURM_PROCID ntasks=$SLURM_NTASKS nodes=$SLURM_STEP_NUM_NODES" \\
                      "node=$SLURMD_NODENAME task=$SLURM_ARRAY_TASK_ID step=$SLURM_STEP_ID"; echo to-stderr >&2'
srun --cpus-per-task=1 --mem=64M --mpi=none --cpu-bind=cores -o "step_%A_%a_%J.out" \\
     bash -c 'echo in-file; echo err-in-file >&2'
cat "step_${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}_${SLURM_JOB_ID}.1.out"
A=mine B=named srun --export=NONE,KEEP=1,B bash -c 'echo "none: KEEP=$KEEP A=${A-unset} B=$B job=${SLURM_JOB_ID:+set} step=$SLURM_STEP_ID"'
srun -D /tmp pwd
srun -o "par_%s.out" sh -c 'sleep 0.2; echo $SLURM_STEPID' & srun -o "par_%s.out" sh -c 'echo $SLURM_STEPID' &
wait; cat par_4.out par_5.out
if srun -n 2 true; then echo "two tasks ran"; else echo "two tasks: $?"; fi
if srun --gpus=1 true; then echo "a GPU step ran"; else echo "a GPU step: $?"; fi
srun -t 5 sh -c 'exit 7' || echo "step exit: $?"
nodes=( $(scontrol show hostnames "$SLURM_JOB_NODELIST") )   # torchrun's head node, as Slurm scripts find it
ip=$(srun --nodes=1 --ntasks=1 -w "${nodes[0]}" hostname --ip-address)
echo "head=${nodes[0]} ip=$ip of=${#nodes[@]}"
scontrol show job "$SLURM_JOB_ID" || echo "scontrol: $?"
"""


def test_srun_runs_a_step_as_the_jobs_one_task(daemon, tmp_path):
    """A batch script's srun lines run unchanged: the job's PATH finds joblet's srun first (not the
    host's Slurm, which CI installs), which runs the step as the job's one task with what srun tells
    a task of itself, labels its lines (-l), writes its files (-o with srun's %A_%a), honours
    --export=NONE and -D, gives the step's exit code, refuses two tasks and a GPU the job does not
    have, and notes a step's own time limit; `scontrol show hostnames $SLURM_JOB_NODELIST` names
    the job's host (the head node a torchrun line is given), other scontrol commands are refused.
    A job without Slurm's variables has no such srun."""
    d = daemon
    script = write(tmp_path, "steps.sh", STEPS)
    aid = d.rnx("job", "batch", "--wait", script, check=True).stdout.strip()
    tasks = [t for t in json.loads(d.rnx("--json", "job", "list", "--expand", check=True).stdout)
             if (t.get("array") or {}).get("id") == aid]
    assert sorted(t["array"]["task"] for t in tasks) == [0, 1], tasks
    for t in tasks:
        task = t["array"]["task"]
        host = f"job-{t['id'][:8]}"
        assert t["status"] == "COMPLETED", t
        assert d.output(t["id"]).splitlines() == [
            "which=/run/joblet/bin/srun",
            f"0: procid=0 ntasks=1 nodes=1 node={host} task={task} step=0",
            "in-file", "err-in-file",
            "none: KEEP=1 A=unset B=named job=set step=2",
            "/tmp",
            "4", "5",   # two steps started at once: a number each
            "two tasks: 1", "a GPU step: 1",
            "step exit: 7",
            f"head={host} ip=127.0.0.1 of=1",
            "scontrol: 1"], d.output(t["id"])
        assert d.output(t["id"], "stderr").splitlines() == [
            "0: to-stderr",
            "srun: error: --ntasks=2: a joblet job is one task with no Slurm of its own; this needs Slurm itself "
            "(docs/slurm.md)",
            "srun: error: --gpus=1: more than the job has (0 GPUs): a step has at most the job's",
            "srun: joblet: --time=5: a step runs within the job's time limit, not one of its own",
            "scontrol: error: a joblet job has no Slurm controller: only 'scontrol show hostnames [LIST]' is "
            "answered in it (rnx job status ID tells of a job from outside)"], \
            d.output(t["id"], "stderr")
    # without Slurm's variables, no srun of joblet's (the host's, if it has Slurm, is what /usr has)
    j, out, _ = d.run("sh", "-c", "test -e /run/joblet/bin/srun && echo joblet || echo none; "
                                  "command -v srun || true")
    assert j["status"] == "COMPLETED", j
    lines = out.splitlines()
    assert lines[0] == "none" and lines[1:] in ([], ["/usr/bin/srun"]), out


def test_a_stop_reaches_a_labeled_step(daemon, tmp_path):
    """rnx job stop signals every process of the job, the step under srun -l too, whose handler
    runs and whose lines keep their labels to the end; the batch shell traps it (or its end would
    end the job at once). srun passes on the signals it gets, but not this one, which the step has
    already (forward() in srun_main.c); a program's handler sees one SIGTERM either way here,
    since the kernel and Python fold a second that comes while the first is pending, so this test
    does not tell the two apart."""
    d = daemon
    script = write(tmp_path, "step.sh", """#!/bin/bash
trap 'echo batch-term' TERM
cat > /work/step_inner.py <<'END'
import os, signal, time
n = 0
def term(sig, frame):
    global n
    n += 1
    print("term", n, flush=True)
signal.signal(signal.SIGTERM, term)
print("ready", flush=True)
while not os.path.exists("/work/over"):
    time.sleep(0.02)
time.sleep(0.5)
print(f"n={n}", flush=True)
END
srun -l python3 /work/step_inner.py
""")
    jid = d.rnx("job", "batch", script, check=True).stdout.strip()
    wait_for(lambda: "0: ready" in d.output(jid), "the step's first line")
    d.rnx("job", "stop", jid, check=True)
    wait_for(lambda: "0: term 1" in d.output(jid), "the step's trap")
    open(os.path.join(d.work(jid), "over"), "w").close()
    d.wait(jid)
    assert d.output(jid).splitlines() == ["0: ready", "0: term 1", "0: n=1", "batch-term"], d.output(jid)


def test_slurm_variables_follow_an_update(daemon):
    """--slurm-env's variables come from the request as it is when the job starts: a memory
    limit changed while the job waited is what SLURM_MEM_PER_NODE says."""
    d = daemon
    gate = d.rnx("job", "run", "sh", "-c", "while [ ! -e /work/go ]; do sleep 0.02; done", check=True).stdout.strip()
    jid = d.rnx("job", "run", "--slurm-env", f"--after={gate}", "--max-memory=100", "--max-cpu=150", "sh", "-c",
                "echo $SLURM_MEM_PER_NODE $SLURM_CPUS_PER_TASK", check=True).stdout.strip()
    d.rnx("job", "update", jid, "--max-memory=200", check=True)
    open(os.path.join(d.work(gate), "go"), "w").close()
    assert d.wait(jid)["status"] == "COMPLETED"
    assert d.output(jid).strip() == "200 2"
    # without --slurm-env: none of them
    j, out, _ = d.run("sh", "-c", "env | grep -c ^SLURM_ || true")
    assert j["slurm_env"] is False and out.strip() == "0", (j, out)


# A step against what the job has: more memory or CPUs than it has is refused, its own fits.
CHECKS = ("echo \"mem=${{SLURM_MEM_PER_NODE-unset}} cpus=${{SLURM_CPUS_ON_NODE-unset}} nproc=$(nproc)\"; "
          "srun --mem={over}M true || echo mem-refused; srun --mem={mem}M true && echo mem-fits; "
          "srun -c $(($(nproc) + 1)) true || echo cpus-refused")


def test_a_default_memory_limit_is_the_jobs_memory(fresh_daemon):
    """A job that gives no memory limit runs under jobs.default_memory_percent's, and is told it as
    a Slurm job is told the partition's default: SLURM_MEM_PER_NODE is that limit, and a step
    asking for more is refused; its CPUs (SLURM_CPUS_ON_NODE, all it may run on) likewise. With
    no limit at all (default_memory_percent 0) the job is told none, and a step's memory is
    noted, not refused."""
    d = fresh_daemon("jobs:\n  default_memory_percent: 10\n")
    p = d.rnx("job", "batch", "--wait", "--wrap=" + CHECKS.format(over=1 << 30, mem="${SLURM_MEM_PER_NODE}"),
              check=True)
    jid = p.stdout.strip().splitlines()[0]
    j = d.job(jid)
    mem = j["limits"]["max_memory_mb"]
    assert j["status"] == "COMPLETED" and mem, j
    nproc = d.output(jid).split()[2].split("=")[1]
    assert d.output(jid).splitlines() == [f"mem={mem} cpus={nproc} nproc={nproc}", "mem-refused", "mem-fits",
                                          "cpus-refused"], d.output(jid)
    assert d.output(jid, "stderr").splitlines() == [
        f"srun: error: --mem={1 << 30}M: more than the job has ({mem} MB): a step has at most the job's",
        f"srun: error: --cpus-per-task={int(nproc) + 1}: more than the job has ({nproc} CPUs): a step has at most "
        "the job's"], d.output(jid, "stderr")
    # no limit at all: none told, the step's memory noted
    d2 = fresh_daemon("jobs:\n  default_memory_percent: 0\n")
    p = d2.rnx("job", "batch", "--wait", "--wrap=" + CHECKS.format(over=1 << 30, mem=64), check=True)
    jid = p.stdout.strip().splitlines()[0]
    assert d2.job(jid)["limits"]["max_memory_mb"] is None, d2.job(jid)
    out = d2.output(jid).splitlines()
    assert out[0].startswith("mem=unset cpus=") and out[1:] == ["mem-fits", "cpus-refused"], out
    assert d2.output(jid, "stderr").splitlines()[:2] == [
        f"srun: joblet: --mem={1 << 30}M: a step has the job's memory, not a share: the task has all of the job's",
        "srun: joblet: --mem=64M: a step has the job's memory, not a share: the task has all of the job's"], \
        d2.output(jid, "stderr")


def test_wait_exits_with_the_jobs_code(daemon, tmp_path):
    """sbatch --wait (-W, and rnx job run --wait): the id is printed at once, rnx returns once the
    job ended, with its exit code; an array's: the highest of its tasks'. --wait with --follow is
    refused (following waits already)."""
    d = daemon
    script = write(tmp_path, "fails.sh", "#!/bin/sh\n#SBATCH -W\nsleep 0.3; exit 3\n")
    p = d.rnx("job", "batch", script)
    assert p.returncode == 3, (p.returncode, p.stderr)
    jid = p.stdout.strip()
    assert d.job(jid)["status"] == "FAILED" and d.job(jid)["exit_code"] == 3
    script = write(tmp_path, "arr.sh", "#!/bin/sh\nexit $SLURM_ARRAY_TASK_ID\n")
    p = d.rnx("job", "batch", "--wait", "--array=0-4%2", script)
    assert p.returncode == 4, (p.returncode, p.stderr)
    aid = p.stdout.strip()
    assert d.api("GET", f"/v1/jobs/{aid}")[1]["array"]["counts"] == {"COMPLETED": 1, "FAILED": 4}
    p = d.rnx("job", "run", "--wait", "sh", "-c", "exit 0")
    assert p.returncode == 0 and len(p.stdout.strip()) == 36, (p.returncode, p.stdout, p.stderr)
    p = d.rnx("job", "run", "--wait", "-f", "true")
    assert p.returncode == 2 and "--wait: not with --follow" in p.stderr, p.stderr


def test_submitted_held(daemon, tmp_path):
    """sbatch -H (rnx job run --hold): the job is HELD from its submission (an event says so) and
    runs once released; an array makes no task until released; held with --after, its release
    leaves it PENDING until the job it waits for ended."""
    d = daemon
    script = write(tmp_path, "held.sh", "#!/bin/sh\n#SBATCH -H\necho ran\n")
    jid = d.rnx("job", "batch", script, check=True).stdout.strip()
    j = d.job(jid)
    assert j["status"] == "HELD", j
    assert ("held", "held at its submission by uid 0 (--hold): it waits until released") in d.events(jid)
    d.rnx("job", "release", jid, check=True)
    assert d.wait(jid)["status"] == "COMPLETED" and d.output(jid) == "ran\n"
    aid = d.rnx("job", "run", "--hold", "--array=0-3", "true", check=True).stdout.strip()
    a = d.api("GET", f"/v1/jobs/{aid}")[1]
    assert a["status"] == "HELD" and a["array"]["held"] is True and a["array"]["made"] == 0, a
    d.rnx("job", "release", aid, check=True)
    wait_for(lambda: d.api("GET", f"/v1/jobs/{aid}")[1]["array"]["counts"] == {"COMPLETED": 4}, "the array's tasks")
    gate = d.rnx("job", "run", "sh", "-c", "while [ ! -e /work/go ]; do sleep 0.02; done", check=True).stdout.strip()
    dep = d.rnx("job", "run", "--hold", f"--after={gate}:ok", "true", check=True).stdout.strip()
    assert d.job(dep)["status"] == "HELD"
    d.rnx("job", "release", dep, check=True)
    assert d.job(dep)["status"] == "PENDING"
    open(os.path.join(d.work(gate), "go"), "w").close()
    assert d.wait(dep)["status"] == "COMPLETED"
    code, r = d.api("POST", "/v1/workflows", {"name": "w", "jobs": [{"name": "a", "request": {"command": "true",
                                                                                            "hold": True}}]})
    assert code == 400 and "hold: not accepted in a workflow's job" in json.dumps(r), r


@pytest.mark.parametrize("text,args,why", [
    ("echo hi\n", [], "this does not look like a batch script: its first line must start with #!"),
    ("#!/bin/sh\r\necho hi\r\n", [], "DOS line breaks"),
    ("#!/bin/sh\n#SBATCH --nodes=2\ntrue\n", [], "line 2: #SBATCH --nodes=2: 2: joblet runs a job as one task on "
                                                 "one machine"),
    ("#!/bin/sh\n\n#SBATCH --tim=10\ntrue\n", [], "line 3: #SBATCH --tim: not an option of sbatch's that joblet "
                                                  "reads"),
    ("#!/bin/sh\n#SBATCH --uid=7\ntrue\n", [], "line 2: #SBATCH --uid=7: a job runs as the user who submits it"),
    ("#!/bin/sh\n#SBATCH --mem=lots\ntrue\n", [], "'lots': memory is a number of megabytes"),
    ("#!/bin/sh\ntrue\n", ["--test-only"], "--test-only: joblet has no test-only submission"),
    ("#!/bin/sh\ntrue\n", ["--wrap=ls"], "--wrap runs its COMMAND and takes no SCRIPT"),
    ("#!/bin/sh\n#SBATCH --array=5-3\ntrue\n", [], "line 2: #SBATCH --array=5-3: '5-3': a range runs from a lower "
                                                 "id to a higher one"),
])
def test_refusals_submit_nothing(daemon, tmp_path, text, args, why):
    """Each refusal names what is wrong (the line for the script's), exits 2 and submits nothing."""
    d = daemon
    script = write(tmp_path, "bad.sh", text)
    before = d.job_count()
    p = d.rnx("job", "batch", *args, script)
    assert p.returncode == 2 and why in p.stderr, (p.returncode, p.stderr)
    assert p.stdout == ""
    assert d.job_count() == before
