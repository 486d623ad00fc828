"""The GPU guide's distributed training as two jobs on one named network (issue 31's acceptance):
torch.distributed with gloo between two joblet jobs in the python-3.11-ml runtime, rank 0 found by
its name (MASTER_ADDR=rank0, through the network's /etc/hosts), the traffic on the jobs' eth0.
Both ranks end with the same weights, equal to one process taking the step on both shards.
The runtime comes from the shared build cache (runtime_util.py). Addresses only on this machine:
the jobs' own namespaces."""
import json
import os
import re
import subprocess

import pytest

from conftest import BUILD
from ml_model import MODEL
from runtime_util import build, need_mirror_or_cache, runtime_daemon
from test_networks import CONFIG, free_net, joblet_links

ML = "python-3.11-ml"


@pytest.fixture(scope="module")
def mld():
    if not os.access(os.path.join(BUILD, "joblet-net"), os.X_OK):
        pytest.skip("joblet-net is not built")
    if subprocess.run(["nft", "--version"], capture_output=True).returncode != 0:
        pytest.skip("nft (Debian's nftables) is not installed: job networks need it")
    need_mirror_or_cache(ML)
    assert not joblet_links(), f"joblet links exist before the test: {joblet_links()}"
    for c in ("10.226.0.0/24", "10.227.0.0/24", "10.235.0.0/24"):
        free_net([c])
    d = runtime_daemon(CONFIG)
    try:
        d.start()
        p = build(d, ML, timeout=1800)
        assert p.returncode == 0, f"building {ML} failed:\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}"
        yield d
    finally:
        d.cleanup()
        subprocess.run([os.path.join(BUILD, "joblet-net"), "down"], capture_output=True)


def test_distributed_training_between_two_jobs_by_name(mld):
    d = mld
    p = d.rnx("network", "create", "ntml", "--cidr=10.235.0.0/24")
    assert p.returncode == 0, p.stderr
    try:
        env = {"MASTER_ADDR": "rank0", "MASTER_PORT": "29500", "WORLD_SIZE": "2", "GLOO_SOCKET_IFNAME": "eth0"}
        ids = []
        for rank in (0, 1):
            st, job = d.api("POST", "/v1/jobs", {
                "command": "python", "args": ["-c", MODEL], "name": f"rank{rank}", "network": "ntml",
                "runtime": ML, "env": {**env, "RANK": str(rank)}, "max_memory_mb": 1500})
            assert st == 201, job
            ids.append(job["id"])
        lines = []
        for jid in ids:
            job = d.wait(jid, timeout=600)
            out = d.output(jid)
            assert job["status"] == "COMPLETED", (job, out, d.output(jid, "stderr")[-3000:])
            lines += [l for l in out.splitlines() if l.startswith("rank ")]
        got = [re.fullmatch(r"rank (\d) of 2 on (\S+) pid1 (\S+): all_reduce (\S+) params (.+) as one process (\w+)", l)
               for l in sorted(lines)]
        assert len(got) == 2 and all(got), lines
        assert [m[1] for m in got] == ["0", "1"], lines
        assert {m[3] for m in got} == {"joblet-init"}, lines   # each rank in a joblet job
        assert {m[4] for m in got} == {"3"}, lines             # 1 + 2 on both ranks
        assert len({m[5] for m in got}) == 1, lines            # the same weights on both
        assert {m[6] for m in got} == {"True"}, lines          # and those of one process on both shards
        # they met over the network: each rank's hostname is its job's, on the network's list
        net = next(n for n in json.loads(d.rnx("--json", "network", "list").stdout)["networks"]
                   if n["name"] == "ntml")
        assert net["jobs_count"] == 0, net
    finally:
        d.rnx("network", "remove", "ntml")
