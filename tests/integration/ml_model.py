"""The GPU guide's distributed training, small: one rank per process (torch's RANK and WORLD_SIZE,
or Slurm's SLURM_PROCID and SLURM_NTASKS). Each rank joins a gloo group, all_reduces rank+1
(1+2+...+world), then takes one DDP step of a small linear model on its own shard (made from its
rank); DDP averages the gradients, so every rank ends with the same weights, equal to one
process's step on all the shards. It prints one line per rank:
"rank R of W on NODE pid1 COMM: all_reduce SUM params P... as one process True|False".
Used by test_slurm_ml.py (ranks are Slurm tasks) and test_networks_ml.py (ranks are jobs on one
network, rank 0 found by name)."""

MODEL = r"""
import os
import socket
import torch
import torch.distributed as dist

torch.set_num_threads(1)
rank = int(os.environ.get("SLURM_PROCID", os.environ.get("RANK", "-1")))
world = int(os.environ.get("SLURM_NTASKS", os.environ.get("WORLD_SIZE", "0")))
node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
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
