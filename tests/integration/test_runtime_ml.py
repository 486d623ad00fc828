"""The GPU guide's runtime, python-3.11-ml (issue 13, acceptance 2): Debian 12's Python 3.11 with
numpy, scipy, pandas, scikit-learn and PyTorch 1.13 (CPU), built for real by the daemon; inside
it a job computes with torch on the CPU (a matrix product and one optimizer step, checked) and
`python --version` says 3.11.

The slowest test of the suite the first time on a machine (mmdebstrap of ~500 packages, about two
minutes); the build cache (runtime_util.CACHE) makes every later run, the ASan pass included,
install it from its archive instead."""
import json
import re
import time

import pytest

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
    d = runtime_daemon().start()
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
