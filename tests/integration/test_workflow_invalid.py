"""Acceptance 3 of the workflow issue: 30 malformed workflow files, each refused by `rnx workflow
run` against the real daemon with its message at FILE:LINE:COL, and not one job or workflow
created. (The parser's own table, 78 files with exact messages, is tests/unit/test_wfparse.c.)"""
import os

MALFORMED = [
    ('jobs:\n  a:\n    command: x\n    command: y\n',
     "4:5: duplicate key 'command' (first given at line 3, column 5)"),
    ('jobs:\n  a:\n    command: x\n    gpus: 2\n',
     "4:5: job 'a': unknown key 'gpus' (did you mean resources: gpu_count?); a job takes command, args, runtime, network, uploads, volumes, environment, secret_environment, workdir, resources, requires, isolation, devices, array"),
    ('jobs:\n  a:\n    command: x\n    args: 3\n',
     '4:11: job \'a\': args: must be a list, e.g. ["train.py", "--epochs", "100"]; got \'3\''),
    ('jobs:\n  a:\n    command: x\n    requires: [c: COMPLETED]\n  b:\n    command: x\n    requires: [a: COMPLETED]\n  c:\n    command: x\n    requires: [b: COMPLETED]\n',
     "7:16: job 'b': dependency cycle: a -> c -> b -> a"),
    ('jobs:\n  a:\n    command: x\n    requires: [nope: COMPLETED]\n',
     "4:16: job 'a': requires 'nope', which is not a job of this workflow; its jobs are a"),
    ('jobs:\n  a:\n    command: x\n  b:\n    command: x\n    requires: [a: DONE]\n',
     "6:19: job 'b': requires: 'DONE' is not a state a job ends in; use COMPLETED, FAILED, STOPPED or CANCELED"),
    ('jobs:\n  a:\n    command: x\n    resources:\n      max_memory: 4 gigs\n',
     "5:19: job 'a': max_memory: '4 gigs' is not a size of at least 4 MB; use megabytes (4096) or a unit: 4096MB, 8GB"),
    ('jobs:\n  a:\n    command: x\n    uploads: [missing.py]\n',
     "4:15: job 'a': uploads: 'missing.py' does not exist"),
    ('jobs:\n  a:\n    command: x\n  bad: [1\n',
     '5:1: flow sequence without a closing bracket'),
    ('name: x\n',
     "1:1: no 'jobs:'; a workflow needs a mapping of job names to jobs"),
    ('jobs: []\n',
     "1:7: jobs: must be a mapping of job names to jobs ('NAME:' lines with 'command:' under each); got a list"),
    ('jobs:\n  a:\n    args: [x]\n',
     "2:3: job 'a': command: missing; give the program to run, e.g. 'command: python3'"),
    ('jobs:\n  a:\n    command: ""\n',
     "3:14: job 'a': command: is empty; give the program to run"),
    ('jobs:\n  a:\n    command: x\n    requires: [a: COMPLETED]\n',
     "4:16: job 'a': requires itself; a job cannot wait for its own end"),
    ('jobs:\n  a:\n    command: x\n    network: Wi/Fi\n',
     "4:14: job 'a': network: 'Wi/Fi' is not accepted; use none (loopback only), host, isolated, bridge or a "
     "network's name"),
    ('jobs:\n  a:\n    command: x\n    network: wifi\n',
     "4:14: job 'a': network: no network 'wifi'; use none, host, isolated, bridge or one that rnx network list shows"),
    ('jobs:\n  a:\n    command: x\n    resources:\n      max_cpu: lots\n',
     "5:16: job 'a': max_cpu: 'lots' must be a CPU percentage from 1 up: a whole number, 100 = one core (e.g. 50, 250)"),
    ('jobs:\n  a:\n    command: x\n    resources:\n      cpu_cores: 0-\n',
     "5:18: job 'a': cpu_cores: '0-' is not a CPU list; use ranges and commas, e.g. 0-3 or 1,3,5"),
    ('jobs:\n  a:\n    command: x\n    resources:\n      gpu_count: -1\n',
     "5:18: job 'a': gpu_count: '-1' must be a number of GPUs from 0 to 64, or all"),
    ('jobs:\n  a:\n    command: x\n    resources:\n      gpu_memory_mb: big\n',
     "5:22: job 'a': gpu_memory_mb: 'big' is not a size of at least 1 MB; use megabytes (4096) or a unit: 4096MB, 8GB"),
    ('jobs:\n  a:\n    command: x\n    resources:\n      priority: 5000\n',
     "5:17: job 'a': priority: '5000' must be a whole number from -1000 to 1000 (higher runs first; default 0)"),
    ('jobs:\n  a:\n    command: x\n    resources:\n      max_runtime: soon\n',
     "5:20: job 'a': max_runtime: 'soon' must be a duration from 1 second to 315360000 seconds (ten years): 90, 30s, 30min, 2h30m, 1d, "
     "or Slurm's H:MIN:SEC, D-H[:MIN[:SEC]]"),
    ('jobs:\n  a:\n    command: x\n    resources:\n      preemptible: maybe\n',
     "5:20: job 'a': preemptible: 'maybe' must be true or false"),
    ('jobs:\n  a:\n    command: x\n    environment: [A=1]\n',
     "4:18: job 'a': environment: must be a mapping, e.g. {LOG_LEVEL: debug}; got a list"),
    ('jobs:\n  a:\n    command: x\n    environment:\n      1BAD: x\n',
     "5:7: job 'a': environment: '1BAD' is not a valid variable name; use letters, digits and '_', not starting with a digit"),
    ('jobs:\n  a:\n    command: x\n    workdir: relative/dir\n',
     "4:14: job 'a': workdir: 'relative/dir' must be an absolute path without '..' (e.g. /work/src)"),
    ('jobs:\n  a:\n    command: x\n    resources:\n      max_io_bps: fast\n',
     "5:19: job 'a': max_io_bps: 'fast' is not a rate of at least 1 byte per second; use 1048576, 512K, 10MB, 1G"),
    ('jobs:\n  a:\n    command: x\n    max_memory: 100\n',
     "4:5: job 'a': 'max_memory' belongs under resources:"),
    ('jobs:\n  "bad name":\n    command: x\n',
     "2:3: job name 'bad name' may hold only letters, digits, '.', '_' and '-' (at most 128)"),
    ('colour: red\njobs:\n  a:\n    command: x\n',
     "1:1: unknown key 'colour'; the top level takes name, description and jobs"),
    ('jobs:\n  a:\n    command: x\n    requires: a\n',
     "4:15: job 'a': requires: must be a list of 'JOB: STATE' items, one per line, e.g. '- build: COMPLETED'; got 'a'"),
]


def test_malformed_workflow_files_create_nothing(daemon, tmp_path):
    before_jobs = daemon.job_count()
    before_wfs = len(daemon.api("GET", "/v1/workflows")[1]["workflows"])
    os.mkdir(tmp_path / "flows")
    for i, (text, want) in enumerate(MALFORMED):
        path = tmp_path / "flows" / f"bad{i}.yaml"
        path.write_text(text)
        p = daemon.rnx("workflow", "run", str(path))
        assert p.returncode == 1 and p.stdout == "", (text, p.stdout, p.stderr)
        assert p.stderr.splitlines()[0].startswith(f"{path}:{want}"), (text, p.stderr)
    assert len(MALFORMED) >= 25
    assert daemon.job_count() == before_jobs
    assert len(daemon.api("GET", "/v1/workflows")[1]["workflows"]) == before_wfs
