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


# One rank per Slurm task: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID as torch's RANK, WORLD_SIZE,
# LOCAL_RANK; each rank joins a gloo group, all_reduces rank+1 (1+2+3+4 = 10), then takes one DDP
# step of a small linear model on its own shard (made from its rank); DDP averages the gradients,
# so every rank ends with the same weights, equal to one process's step on all four shards.
MODEL = r"""
import os
import torch
import torch.distributed as dist

torch.set_num_threads(1)
rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
node = os.environ["SLURMD_NODENAME"]
dist.init_process_group("gloo", rank=rank, world_size=world)
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)

def shard(r):
    x = torch.tensor([[(r * 7 + i * 3 + j) % 11 / 10 for j in range(4)] for i in range(6)])
    return x, x.sum(dim=1, keepdim=True) * 0.5 - r / 10

def fresh():
    torch.manual_seed(0)
    return torch.nn.Linear(4, 1)

model = torch.nn.parallel.DistributedDataParallel(fresh())
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = shard(rank)
loss = torch.nn.functional.mse_loss(model(x), y)
opt.zero_grad()
loss.backward()
opt.step()
params = torch.cat([p.detach().flatten() for p in model.module.parameters()])
alone = fresh()
xs, ys = zip(*(shard(r) for r in range(world)))
opt1 = torch.optim.SGD(alone.parameters(), lr=0.05)
torch.nn.functional.mse_loss(alone(torch.cat(xs)), torch.cat(ys)).backward()
opt1.step()
expect = torch.cat([p.detach().flatten() for p in alone.parameters()])
same = bool(torch.allclose(params, expect, atol=1e-6))
print(f"rank {rank} of {world} on {node} pid1 {open('/proc/1/comm').read().strip()}: all_reduce {t.item():g} "
      f"params {' '.join(f'{v:.6f}' for v in params.tolist())} as one process {same}", flush=True)
dist.barrier()
dist.destroy_process_group()
"""


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
