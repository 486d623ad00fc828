#!/usr/bin/env python3
"""Generate a sample job trace for joblet-sim (docs/simulator.md). Python 3 standard library only.

Deterministic: the same arguments (--seed included) give the same file, byte for byte.

The trace mimics a shared GPU cluster:
  - sizes 1, 2, 3, 4, 6 and 8 GPUs (weights 40/20/5/18/2/15 %), none above --max-gpus;
  - run times log-normal around a median of --median-min minutes (sigma 1.2), 30 s to 24 h;
  - Poisson arrivals at the rate that offers --load times the capacity of --gpus GPUs
    (requested GPU-time / (GPUs x submission span)), so the queue grows when load > 1;
  - --limit-frac of the jobs declare a limit (max_runtime_s) of 1.1-3x their run time, rounded
    up to 5 minutes; the rest declare none;
  - --numa-frac of the jobs of 2 to --numa-max GPUs ask for all their GPUs on one NUMA node;
  - --high-frac of the jobs run at priority 10, the rest at 0; --preemptible-frac of the
    priority-0 jobs are preemptible;
  - --users users with Zipf-like shares (user k submits in proportion to 1/k).
"""
import argparse
import math
import random
import sys

SIZES = [(1, 40), (2, 20), (3, 5), (4, 18), (6, 2), (8, 15)]
HEADER = "submit,duration,gpus,memory_mb,priority,user,limit,preemptible,single_numa"


def pick(r, weighted):
    """A weighted choice built on random() alone, so it cannot change between Python versions."""
    total = sum(w for _, w in weighted)
    x = r.random() * total
    for v, w in weighted:
        if x < w:
            return v
        x -= w
    return weighted[-1][0]


def generate(a):
    r = random.Random(a.seed)
    sizes = [(g, w) for g, w in SIZES if g <= a.max_gpus]
    if not sizes:
        raise SystemExit("gen_trace.py: --max-gpus must be at least 1")
    users = [(f"user{k + 1}", 1.0 / (k + 1)) for k in range(a.users)]
    jobs = []
    for _ in range(a.jobs):
        g = pick(r, sizes)
        d = r.lognormvariate(math.log(a.median_min * 60), 1.2)
        d = int(min(max(d, 30), 86400))
        limit = ""
        if r.random() < a.limit_frac:
            limit = str(int(math.ceil(d * r.uniform(1.1, 3.0) / 300.0)) * 300)
        prio = 10 if r.random() < a.high_frac else 0
        pre = 1 if prio == 0 and r.random() < a.preemptible_frac else 0
        numa = 1 if 2 <= g <= a.numa_max and r.random() < a.numa_frac else 0
        jobs.append([g, d, limit, prio, pick(r, users), pre, numa])
    gpu_s = sum(j[0] * j[1] for j in jobs)
    mean_gap = gpu_s / (len(jobs) * a.load * a.gpus)
    t = 0.0
    lines = [f"# gen_trace.py --seed {a.seed} --jobs {a.jobs} --gpus {a.gpus} --max-gpus {a.max_gpus} "
             f"--load {a.load} --median-min {a.median_min} --users {a.users} --limit-frac {a.limit_frac} "
             f"--numa-frac {a.numa_frac} --numa-max {a.numa_max} --high-frac {a.high_frac} "
             f"--preemptible-frac {a.preemptible_frac}",
             HEADER]
    for i, (g, d, limit, prio, user, pre, numa) in enumerate(jobs):
        if i:
            t += r.expovariate(1.0 / mean_gap)
        lines.append(f"{int(t)},{d},{g},0,{prio},{user},{limit},{pre},{numa}")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=2000)
    p.add_argument("--gpus", type=int, default=8, help="capacity the load is computed for (GPUs in all machines)")
    p.add_argument("--max-gpus", type=int, default=8, help="largest job")
    p.add_argument("--load", type=float, default=0.8, help="offered load: requested GPU-time / capacity")
    p.add_argument("--median-min", type=float, default=20.0, help="median run time, minutes")
    p.add_argument("--users", type=int, default=8)
    p.add_argument("--limit-frac", type=float, default=0.8)
    p.add_argument("--numa-frac", type=float, default=0.5)
    p.add_argument("--numa-max", type=int, default=4)
    p.add_argument("--high-frac", type=float, default=0.1)
    p.add_argument("--preemptible-frac", type=float, default=0.0)
    p.add_argument("-o", "--output", help="file to write (default: stdout)")
    a = p.parse_args()
    if a.jobs < 1 or a.gpus < 1 or a.load <= 0 or a.users < 1 or a.median_min <= 0:
        p.error("--jobs, --gpus, --users must be at least 1; --load and --median-min above 0")
    text = "\n".join(generate(a)) + "\n"
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
