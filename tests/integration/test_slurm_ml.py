"""The GPU guide's ML runtime and its distributed training as a Slurm job through joblet's SPANK
plugin (issue 30's acceptance): `srun --joblet-runtime=python-3.11-ml` gives Python 3.11 with
torch, and a torch.distributed training with gloo over loopback, one rank per Slurm task on the
two nodes of the test cluster (slurm_cluster.py), ends with every rank holding the same weights,
equal to one process taking the same step on all the shards.

The runtime comes from the shared build cache (runtime_util.py: test_runtime_ml.py builds it
first on an empty machine; here it installs from the archive), into a joblet daemon on the
same simulated machine as test_slurm_joblet.py's. The tasks have the node's network (the
plugin's default), so the ranks meet on 127.0.0.1."""
import os
import re
import shutil
import socket
import subprocess

import pytest

from runtime_util import build, need_mirror_or_cache, runtime_daemon
from slurm_cluster import cannot_run
from test_slurm_joblet import PLUGIN, USER, joblet_cluster, node_daemon

ML = "python-3.11-ml"


@pytest.fixture(scope="module")
def mld():
    """The node's joblet, with python-3.11-ml built (from the cache when it holds it)."""
    why = cannot_run()
    if why:
        pytest.skip(why)
    if not os.path.exists(PLUGIN):
        pytest.skip("build/joblet.so was not built (no slurm/spank.h: Debian's libslurm-dev)")
    need_mirror_or_cache(ML)
    d, tmp = node_daemon(lambda cfg, env: runtime_daemon(cfg, env=env), "joblet-slurmml-")
    try:
        d.start()
        p = build(d, ML, timeout=1800)
        assert p.returncode == 0, f"building {ML} failed:\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}"
        yield d
    finally:
        d.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(mld):
    c = joblet_cluster(mld)
    c.start()
    try:
        yield c
    finally:
        c.stop()


def srun(cluster, argv, extra_env=None):
    """srun ... as the test user, from /tmp."""
    return subprocess.run(["runuser", "-u", USER, "--", "srun", *argv], env=dict(cluster.env, **(extra_env or {})),
                          cwd="/tmp", capture_output=True, text=True, timeout=600)


def test_ml_runtime_gives_python_311_with_torch(cluster, mld):
    p = srun(cluster, ["-N1", "-n1", "--mem=1G", f"--joblet-runtime={ML}", "python", "-c",
                       "import sys, torch; print(sys.version.split()[0], torch.__version__, "
                       "torch.tensor([[1., 2.]]) @ torch.tensor([[3.], [4.]]))"])
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert re.fullmatch(r"3\.11\.\d+ 1\.13\.\S+ tensor\(\[\[11\.\]\]\)\n", p.stdout), p.stdout


from ml_model import MODEL


def test_distributed_training_across_the_two_nodes(cluster, mld):
    with socket.socket() as s:   # a free port for rank 0's store, on loopback
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "GLOO_SOCKET_IFNAME": "lo"}
    p = srun(cluster, ["-N2", "--ntasks-per-node=2", "--mem-per-cpu=900M", f"--joblet-runtime={ML}",
                       "python", "-c", MODEL], env)
    assert p.returncode == 0, (p.stdout, p.stderr[-4000:])
    ranks = sorted(l for l in p.stdout.splitlines() if l.startswith("rank "))
    got = [re.fullmatch(r"rank (\d) of 4 on (node\d) pid1 (\S+): all_reduce (\S+) params (.+) as one process (\w+)",
                        l) for l in ranks]
    assert len(got) == 4 and all(got), p.stdout
    assert [m[1] for m in got] == ["0", "1", "2", "3"], ranks
    assert sorted(m[2] for m in got) == ["node1", "node1", "node2", "node2"], ranks
    assert {m[3] for m in got} == {"joblet-init"}, ranks      # each rank in a joblet job's PID namespace
    assert {m[4] for m in got} == {"10"}, ranks               # 1 + 2 + 3 + 4 on every rank
    assert len({m[5] for m in got}) == 1, ranks               # the same weights on every rank
    assert {m[6] for m in got} == {"True"}, ranks             # and those of one process on all shards
    st, jobs = mld.api("GET", "/v1/jobs")
    jobs = jobs["jobs"] if isinstance(jobs, dict) else jobs
    ranks_jobs = [j for j in jobs if j.get("slurm") and j["slurm"]["step"] == "0" and j.get("runtime") == ML
                  and j["slurm"]["job"] == max(k["slurm"]["job"] for k in jobs if k.get("slurm"))]
    assert len(ranks_jobs) == 4 and {j["status"] for j in ranks_jobs} == {"COMPLETED"}, ranks_jobs
