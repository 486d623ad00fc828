#!/usr/bin/env python3
"""Placement strategies side by side: generate a trace (bench/gen_trace.py), replay it with
build/joblet-sim through topology, pack, spread and a first-fit baseline on the DGX-1 V100 and
DGX H100 fixtures, on one machine and on N identical ones, and print one table.

Python 3 standard library only. Deterministic: the same arguments give the same table.

    python3 bench/simulate.py                  # seeds 1-10, 2,000 jobs each, offered load 0.8
    python3 bench/simulate.py --seeds 7 --load 0.7 --machines 8 --markdown
    python3 bench/simulate.py --exact-runtimes --json sim.json

Each figure is the mean over the seeds (one trace per seed). With several seeds, two more rows
per setup show how much of a difference between strategies is noise: "wait avg vs firstfit",
the mean over the seeds of (the strategy's average wait / firstfit's on the same trace - 1),
with on how many traces the strategy waited less; and the lowest and highest average wait. The trace for N machines is generated with the same seed and load
for N times the GPUs, so both setups are offered the same load per GPU.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STRATEGIES = ["topology", "pack", "spread", "firstfit"]
MACHINES = ["dgx1-v100", "dgx-h100"]


def human(ms):
    s = ms / 1000.0
    if s < 120:
        return f"{s:.1f}s"
    if s < 7200:
        return f"{s / 60:.1f}m"
    return f"{s / 3600:.2f}h"


ROWS = [
    ("utilization", lambda r: f"{100 * r['utilization']:.1f}%"),
    ("wait avg", lambda r: human(r["wait_avg_ms"])),
    ("wait p95", lambda r: human(r["wait_p95_ms"])),
    ("completion avg", lambda r: human(r["completion_avg_ms"])),
    ("completion p95", lambda r: human(r["completion_p95_ms"])),
    ("makespan", lambda r: human(r["makespan_ms"])),
    ("fragmentation", lambda r: f"{100 * r['fragmentation']:.1f}%"),
    ("placement score", lambda r: "-" if r["placement_score"] is None else f"{r['placement_score']:.3f}"),
]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.environ.get("JOBLET_BUILD", os.path.join(ROOT, "build")))
    p.add_argument("--seeds", default="1,2,3,4,5,6,7,8,9,10", help="comma-separated trace seeds")
    p.add_argument("--jobs", type=int, default=2000)
    p.add_argument("--load", type=float, default=0.8)
    p.add_argument("--machines", type=int, default=4, help="N for the N-identical-machines rows")
    p.add_argument("--exact-runtimes", action="store_true", help="passed to joblet-sim")
    p.add_argument("--keep", metavar="DIR", help="write the generated traces here (default: a temporary directory)")
    p.add_argument("--markdown", action="store_true", help="a Markdown table")
    p.add_argument("--json", metavar="FILE", help="also write every joblet-sim result here")
    a = p.parse_args()
    sim = os.path.join(a.build, "joblet-sim")
    if not os.path.exists(sim):
        sys.exit(f"simulate.py: {sim} not found (ninja -C {a.build} joblet-sim)")

    try:
        seeds = [int(x) for x in a.seeds.split(",")]
    except ValueError:
        p.error("--seeds: a comma-separated list of whole numbers")
    tmp = None
    out_dir = a.keep
    if not out_dir:
        tmp = tempfile.TemporaryDirectory(prefix="joblet-sim-")
        out_dir = tmp.name
    os.makedirs(out_dir, exist_ok=True)
    sizes = sorted({1, a.machines})
    runs = []     # every joblet-sim answer
    by = {}       # (n, machine) -> strategy -> [result per seed]
    for seed in seeds:
        for n in sizes:
            trace = os.path.join(out_dir, f"trace-seed{seed}-{8 * n}gpus.csv")
            subprocess.run([sys.executable, os.path.join(HERE, "gen_trace.py"), "--seed", str(seed), "--jobs",
                            str(a.jobs), "--gpus", str(8 * n), "--load", str(a.load), "-o", trace], check=True)
            for m in MACHINES:
                cmd = [sim, "--json", "--machine", m, "--machines", str(n), trace]
                if a.exact_runtimes:
                    cmd.insert(1, "--exact-runtimes")
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode:
                    sys.exit(f"simulate.py: {' '.join(cmd)} exited {r.returncode}:\n{r.stderr}")
                d = json.loads(r.stdout)
                d["seed"] = seed
                runs.append(d)
                for res in d["results"]:
                    by.setdefault((n, m), {}).setdefault(res["strategy"], []).append(res)

    def mean(results, key):
        vals = [r[key] for r in results]
        if any(v is None for v in vals):
            return None
        return sum(vals) / len(vals)

    print(f"# {a.jobs} jobs per trace, seeds {','.join(map(str, seeds))} (figures: mean over them), offered load "
          f"{a.load}, runtimes known to the scheduler: "
          f"{'exact' if a.exact_runtimes else 'declared limits (80 % of jobs)'}")
    head = ["setup", "metric"] + STRATEGIES
    rows = []
    for n in sizes:
        for m in MACHINES:
            per = by[(n, m)]
            avg = {s: {k: mean(per[s], k) for k in per[s][0] if k != "strategy"} for s in STRATEGIES}
            setup = f"{m} x{n} ({8 * n} GPUs)"
            for i, (name, fmt) in enumerate(ROWS):
                rows.append([setup if i == 0 else "", name] + [fmt(avg[s]) for s in STRATEGIES])
            if any(avg[s]["preemptions"] for s in STRATEGIES):
                rows.append(["", "preemptions"] + [f"{avg[s]['preemptions']:.1f}" for s in STRATEGIES])
            if len(seeds) > 1:
                # paired by seed: each strategy's average wait against firstfit's on the same trace
                rel = {}
                for s in STRATEGIES[:-1]:
                    d = [x["wait_avg_ms"] / b["wait_avg_ms"] - 1 for x, b in zip(per[s], per["firstfit"])
                         if b["wait_avg_ms"]]
                    rel[s] = f"{100 * sum(d) / len(d):+.1f}% ({sum(1 for v in d if v < 0)}/{len(d)})" if d else "-"
                rows.append(["", "wait avg vs firstfit"] + [rel[s] for s in STRATEGIES[:-1]] + ["-"])
                rows.append(["", "wait avg min-max"] +
                            [human(min(r["wait_avg_ms"] for r in per[s])) + "-" +
                             human(max(r["wait_avg_ms"] for r in per[s])) for s in STRATEGIES])
            if not a.markdown:
                rows.append(None)
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(x) for x in [h] + [r[i] for r in rows if r]) for i, h in enumerate(head)]
        line = lambda r: "  ".join(x.ljust(w[i]) if i < 2 else x.rjust(w[i]) for i, x in enumerate(r))
        print(line(head))
        for r in rows:
            print(line(r) if r else "")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"seeds": seeds, "jobs": a.jobs, "load": a.load, "exact_runtimes": a.exact_runtimes,
                       "runs": runs}, f, indent=2)
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
