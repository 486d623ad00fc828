#!/usr/bin/python3
"""Which lines of joblet's C each integration test file reaches, and what it costs: the data
behind the sanitizer pass's choice of files (SANITIZER_PASS_SKIPS in tests/integration/conftest.py).

    scripts/coverage_by_file.py collect OUT [FILE...]  # as root: a coverage build, each test file alone
    scripts/coverage_by_file.py choose OUT             # what each reaches, and what the pass misses

collect builds build-cov (gcc --coverage), runs each test file in its own pytest with
JOBLET_BUILD=build-cov, times it, and moves the counters its processes wrote (the daemon, rnx,
the shim: whatever exits normally where it can write build-cov) to OUT/<file>/. choose reads
them with gcov and prints: each file with its time, the lines it reaches and those no other file
reaches; the lines the sanitizer pass (every file but SANITIZER_PASS_SKIPS') does not reach; and,
for comparison, the files a greedy cover (new lines per second) would need to reach every line
the whole suite reaches."""
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COV = os.path.join(ROOT, "build-cov")


def test_files():
    out = []
    for d in ("tests/integration", "tests/gpu"):
        out += sorted(os.path.join(d, f) for f in os.listdir(os.path.join(ROOT, d))
                      if f.startswith("test_") and f.endswith(".py"))
    return out


def gcda_files(top):
    for dp, _, fs in os.walk(top):
        for f in fs:
            if f.endswith(".gcda"):
                yield os.path.join(dp, f)


def collect(out, only=()):
    subprocess.run(["bash", "scripts/build.sh", "build-cov", "-Db_coverage=true"], cwd=ROOT, check=True)
    for f in gcda_files(COV):
        os.unlink(f)
    os.makedirs(out, exist_ok=True)
    times = {}
    for t in only or test_files():
        name = os.path.basename(t)
        t0 = time.monotonic()
        p = subprocess.run(["/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", t], cwd=ROOT,
                           env=dict(os.environ, JOBLET_BUILD=COV), capture_output=True, text=True)
        times[name] = {"seconds": round(time.monotonic() - t0, 1), "rc": p.returncode,
                       "summary": (p.stdout.strip().splitlines() or [""])[-1]}
        print(f"{name}: {times[name]['seconds']} s, {times[name]['summary']}", flush=True)
        dest = os.path.join(out, name)
        for f in gcda_files(COV):
            rel = os.path.relpath(f, COV)
            os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
            shutil.move(f, os.path.join(dest, rel))
        with open(os.path.join(out, "times.json"), "w") as fp:
            json.dump(times, fp, indent=1)


def lines_of(covdir):
    """{(source, line)} that covdir's counters reached: gcov's JSON, run on a copy of each
    object's notes file beside its counters."""
    hit = set()
    for gcda in gcda_files(covdir):
        rel = os.path.relpath(gcda, covdir)
        gcno = os.path.join(COV, rel[:-5] + ".gcno")
        if not os.path.exists(gcno):
            continue
        shutil.copy(gcno, gcda[:-5] + ".gcno")
        p = subprocess.run(["gcov", "--json-format", "--stdout", gcda], cwd=os.path.join(COV),
                           capture_output=True, text=True)
        for doc in p.stdout.splitlines():
            if not doc.startswith("{"):
                continue
            for f in json.loads(doc).get("files", []):
                src = os.path.normpath(os.path.join(COV, f["file"]))
                if not src.startswith(os.path.join(ROOT, "src")):
                    continue
                for ln in f["lines"]:
                    if ln["count"] > 0:
                        hit.add((os.path.relpath(src, ROOT), ln["line_number"]))
    return hit


def choose(out):
    with open(os.path.join(out, "times.json")) as fp:
        times = json.load(fp)
    lines = {name: lines_of(os.path.join(out, name)) for name in times if os.path.isdir(os.path.join(out, name))}
    everything = set().union(*lines.values())
    seen = {}
    for v in lines.values():
        for ln in v:
            seen[ln] = seen.get(ln, 0) + 1
    for n in sorted(lines, key=lambda n: -times[n]["seconds"]):
        only = sum(1 for ln in lines[n] if seen[ln] == 1)
        print(f"{n}: {times[n]['seconds']} s, {len(lines[n])} lines, {only} no other file reaches")
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    from conftest import SANITIZER_PASS_SKIPS
    run = set().union(*(v for n, v in lines.items() if n not in SANITIZER_PASS_SKIPS))
    missed = sorted(everything - run)
    print(f"\nthe sanitizer pass ({len(SANITIZER_PASS_SKIPS)} files skipped) reaches {len(run)} of "
          f"{len(everything)} lines; not:")
    for src, ln in missed:
        with open(os.path.join(ROOT, src)) as f:
            print(f"  {src}:{ln}: {f.read().splitlines()[ln - 1].strip()[:100]}")
    print("\na greedy cover of every line, by new lines per second:")
    left = set(everything)
    chosen = []
    while left:
        name = max((n for n in lines if n not in chosen),
                   key=lambda n: len(lines[n] & left) / max(times[n]["seconds"], 1.0))
        new = lines[name] & left
        if not new:
            break
        chosen.append(name)
        print(f"{name}: {times[name]['seconds']} s, {len(new)} lines no file before it reaches")
        left -= new
    spent = sum(times[n]["seconds"] for n in chosen)
    print(f"\nchosen: {len(chosen)} files, {spent:.0f} s, {len(everything)} lines (all the suite reaches)")
    rest = sorted((n for n in times if n not in chosen), key=lambda n: -times[n]["seconds"])
    print(f"left out: {len(rest)} files, {sum(times[n]['seconds'] for n in rest):.0f} s")
    for n in rest:
        print(f"  {n}: {times[n]['seconds']} s")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("collect", "choose"):
        sys.exit(__doc__)
    if sys.argv[1] == "collect":
        collect(os.path.abspath(sys.argv[2]), sys.argv[3:])   # test files named: only those
    else:
        choose(os.path.abspath(sys.argv[2]))
