"""The test Slurm cluster of tests/integration/slurm_cluster.py is a real one (issue 30): two
slurmd on this machine run a step's tasks on both nodes, hand out the test GPUs of gres.conf,
hold --mem through Slurm's memory cgroup, run and cancel batch jobs, and load a SPANK plugin."""
import collections

from slurm_cluster import slurm_cluster  # noqa: F401  (the module's cluster)


def test_srun_two_nodes_four_tasks(slurm_cluster):
    p = slurm_cluster.run(["srun", "-N2", "--ntasks-per-node=2", "sh", "-c", 'echo "$SLURMD_NODENAME $SLURM_PROCID"'])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.split()
    rows = [line.split() for line in p.stdout.splitlines()]
    assert len(rows) == 4, p.stdout
    assert collections.Counter(r[0] for r in rows) == {"node1": 2, "node2": 2}, p.stdout
    assert sorted(int(r[1]) for r in rows) == [0, 1, 2, 3], lines
