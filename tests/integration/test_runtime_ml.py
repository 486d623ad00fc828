"""The GPU guide's runtime, python-3.11-ml (issue 13, acceptance 2): Debian 12's Python 3.11 with
numpy, scipy, pandas, scikit-learn and PyTorch 1.13 (CPU), built for real by the daemon; inside
it a job computes with torch on the CPU (a matrix product and one optimizer step, checked) and
`python --version` says 3.11.

The guide's distributed-training line (issue 26, item 1), with its flags exactly as written and
--max-memory=16384, on a simulated DGX H100: a 4-rank gloo training (all_reduce, one DDP step on
each rank's shard of the uploaded dataset/) through `python -m torch.distributed.launch` and
through `torchrun`, COMPLETED, every rank agreeing with the others and with the same step taken
in one process; the launchers' default --redirects 0 works (the recipe's customize: patch) and
the job's hostname resolves (no "Unable to resolve hostname").

The slowest test of the suite the first time on a machine (mmdebstrap of ~500 packages, about two
minutes); the build cache (runtime_util.CACHE) makes every later run, the ASan pass included,
install it from its archive instead."""
import json
import os
import re
import subprocess

import pytest

from conftest import BUILD
from gpu_nodes import FIX
from runtime_util import build, need_mirror_or_cache, recipe_sha, runtime_daemon

ML = "python-3.11-ml"

TRAIN = r"""
import torch, numpy, scipy, pandas, sklearn
torch.manual_seed(0)
a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
b = torch.tensor([[5.0, 6.0], [7.0, 8.0]])
assert torch.equal(a @ b, torch.tensor([[19.0, 22.0], [43.0, 50.0]])), a @ b
# one SGD step on a linear model without bias: w = 1, x = 2, y = 8
# loss = (w*x - y)^2 = 36, dloss/dw = 2*(w*x - y)*x = -24, w' = w - 0.1 * -24 = 3.4
model = torch.nn.Linear(1, 1, bias=False)
with torch.no_grad():
    model.weight.fill_(1.0)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.tensor([[2.0]]), torch.tensor([[8.0]])
loss = torch.nn.functional.mse_loss(model(x), y)
opt.zero_grad()
loss.backward()
opt.step()
w = model.weight.item()
assert abs(loss.item() - 36.0) < 1e-6 and abs(w - 3.4) < 1e-6, (loss.item(), w)
print("matmul ok; loss", loss.item(), "w", round(w, 4), "cuda", torch.cuda.is_available())
"""


@pytest.fixture(scope="module")
def ml():
    need_mirror_or_cache(ML)
    # a simulated DGX H100 (8 H100s), as in test_gpu_guide.py: the guide's line asks for 4 GPUs
    d = runtime_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n").start()
    p = build(d, ML, timeout=1800)
    if p.returncode != 0:
        log = d.log()
        d.cleanup()
        pytest.fail(f"building {ML} failed:\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}\n{log[-2000:]}")
    yield d
    d.cleanup()


def test_ml_runtime_provides_the_guide_stack(ml):
    info = json.loads(ml.rnx("--json", "runtime", "info", ML, check=True).stdout)
    assert info["recipe_sha256"] == recipe_sha(ML)
    prov = " | ".join(info["provides"])
    for want in (r"python 3\.11\.\d+", r"numpy 1\.\d+", r"scipy 1\.\d+", r"pandas 1\.\d+", r"scikit-learn 1\.\d+",
                 r"torch 1\.13\.\d+ \(CPU\)"):
        assert re.search(want, prov), (want, prov)


def test_torch_trains_on_the_cpu_in_a_job(ml):
    p = ml.rnx("job", "run", "-f", f"--runtime={ML}", "python", "--version", timeout=120)
    assert p.returncode == 0 and re.fullmatch(r"Python 3\.11\.\d+\n", p.stdout), (p.stdout, p.stderr)
    p = ml.rnx("job", "run", "-f", f"--runtime={ML}", "--max-memory=2GB", "python", "-c", TRAIN, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "matmul ok; loss 36.0 w 3.4 cuda False\n", p.stdout


def test_ml_runtime_test_command(ml):
    p = ml.rnx("runtime", "test", ML, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "x @ x = 2.0" in p.stdout, p.stdout


# The guide's model.py, made real: each of the 4 ranks (one process each, started by the launcher)
# joins a gloo group, all_reduces rank+1 (1+2+3+4 = 10), then takes one DDP step of a small linear
# model on its own shard of the uploaded dataset/ (part-RANK.csv). DDP averages the gradients, so
# every rank ends with the same weights: the same as one process taking the step on all four
# shards at once, which each rank also computes and compares.
MODEL = r"""
import os, sys
import torch
import torch.distributed as dist

torch.set_num_threads(1)  # 4 ranks on a 2-CPU machine
rank, world, local = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
# torch.distributed.launch also passes --local_rank=N (torchrun does not)
argv_rank = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--local_rank=")]
assert argv_rank in ([], [str(local)]), (sys.argv, local)
dist.init_process_group("gloo")
assert (dist.get_rank(), dist.get_world_size()) == (rank, world), (dist.get_rank(), dist.get_world_size())

t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)

def shard(r):
    rows = [[float(v) for v in l.split(",")] for l in open(f"dataset/part-{r}.csv").read().split()]
    d = torch.tensor(rows)
    return d[:, :4], d[:, 4:]

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

# the same step in one process, on all the shards (equal sizes: the mean of the ranks' gradients)
alone = fresh()
xs, ys = zip(*(shard(r) for r in range(world)))
opt1 = torch.optim.SGD(alone.parameters(), lr=0.05)
torch.nn.functional.mse_loss(alone(torch.cat(xs)), torch.cat(ys)).backward()
opt1.step()
expect = torch.cat([p.detach().flatten() for p in alone.parameters()])
same = bool(torch.allclose(params, expect, atol=1e-6))
moved = bool((params != torch.cat([p.detach().flatten() for p in fresh().parameters()])).all())

# one write of one line: the four ranks share the job's stdout
os.write(1, (f"rank {rank} of {world} local {local}: all_reduce {t.item():g} params "
             f"{' '.join(f'{v:.6f}' for v in params.tolist())} as one process {same} moved {moved}\n").encode())
dist.barrier()
dist.destroy_process_group()
"""

GUIDE_FLAGS = ["--gpu=4", "--gpu-memory=16GB", "--max-memory=16384", f"--runtime={ML}", "--upload=model.py",
               "--upload=dataset/"]
LAUNCHERS = {
    "torch.distributed.launch": ["python", "-m", "torch.distributed.launch", "--nproc_per_node=4", "model.py"],
    "torchrun": ["torchrun", "--nproc_per_node=4", "model.py"],
}


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_guide_distributed_training_line_completes(ml, launcher, tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "dataset").mkdir()
    for r in range(4):  # 6 rows of 4 features and a target each, different on every rank
        rows = [[(r * 7 + i * 3 + j) % 11 / 10 for j in range(4)] for i in range(6)]
        (tmp_path / "dataset" / f"part-{r}.csv").write_text(
            "".join(",".join(f"{v:g}" for v in row + [sum(row) * 0.5 - r / 10]) + "\n" for row in rows))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JOBLET_SOCKET": ml.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "run", *GUIDE_FLAGS, *LAUNCHERS[launcher]],
                       cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    jid = p.stdout.strip()
    job = ml.wait(jid, timeout=600)
    out, err = ml.output(jid), ml.output(jid, "stderr")
    assert job["status"] == "COMPLETED", (job, out, err[-4000:])
    assert len(job["gpus"]) == 4 and job["runtime"] == ML, job
    assert "Unable to resolve hostname" not in err, err[-4000:]
    assert "NoneType" not in err, err[-4000:]
    ranks = sorted(l for l in out.splitlines() if l.startswith("rank "))
    assert len(ranks) == 4, out
    got = [re.fullmatch(r"rank (\d) of 4 local (\d): all_reduce (\S+) params (.+) as one process (\w+) "
                        r"moved (\w+)", l) for l in ranks]
    assert all(got), ranks
    assert [(m[1], m[2]) for m in got] == [(str(r), str(r)) for r in range(4)], ranks
    assert {m[3] for m in got} == {"10"}, ranks            # 1 + 2 + 3 + 4 on every rank
    assert len({m[4] for m in got}) == 1, ranks            # the same weights after the step
    assert {(m[5], m[6]) for m in got} == {("True", "True")}, ranks
