#!/usr/bin/python3
"""Which lines and branches of joblet's C each integration test module reaches, and what it
costs under the sanitizers: the data behind the sanitizer pass's choice of modules
(SANITIZER_PASS_SKIPS in tests/integration/conftest.py).

    scripts/coverage_by_file.py collect OUT [PYTEST ARGS...]   # as root: the suite on coverage builds
    scripts/coverage_by_file.py choose OUT [JUNIT]             # what each reaches, what the pass misses
    scripts/coverage_by_file.py unreached OUT [PREFIX...]      # the lines no module nor unit test reaches

collect makes one coverage build (gcc --coverage) per pytest-xdist worker, build-cov-0.., and
runs the suite as scripts/test.sh does (JOBLET_TEST_WORKERS workers, 3 by default), each worker
on its own build (JOBLET_BUILD_PER_WORKER=build-cov-@WORKER@); after each module, conftest.py moves the
counters its processes wrote (the daemon, rnx, the shim and helpers: whatever exits normally
where it can write its build) to OUT/<module>/ (coverage_by_module). The modules' times are in
OUT/junit.xml. Then the unit tests, on build-cov-0: their counters go to OUT/_unit/ (they run in
both passes; what they reach, the sanitizer pass reaches).

choose reads the counters with gcov (once: OUT/items.json keeps what it read) and prints each
module with its cost, the items it reaches (a line run, or one direction of a branch taken) and
those no other module reaches; the lines the sanitizer pass (every module but
SANITIZER_PASS_SKIPS', and the unit tests) does not reach; and, for comparison, a cover: the modules that reach
every line and branch direction the pass may reach (the modules skipped for testing tools other
than joblet left out) in the fewest seconds, by a greedy choice. The cost of a module is its time
in JUNIT, the sanitizer pass's integration-junit.xml (build-asan/), else OUT/junit.xml.

unreached (after choose, which writes OUT/items.json) prints the lines of src/ that no module and
no unit test reached, by file and function, those of files under a PREFIX only (src/core/ ...):
where the suite tests nothing. A process writes its counters when it exits normally, so the
lines of a process that execs or is killed (the shim, the job's init, the helpers before their
exec, rnx's keeper, the SPANK plugin in slurmstepd) show unreached though they ran; the
daemon's and rnx's are exact."""
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from unit_seconds import junit_seconds  # noqa: E402 (scripts/, beside this file)


def gcda_files(top):
    for dp, _, fs in os.walk(top):
        for f in fs:
            if f.endswith(".gcda"):
                yield os.path.join(dp, f)


def collect(out, args):
    if out == "/work" or out.startswith("/work/"):
        # a helper in a job's mount namespace (a copy's) would write its counters under the job's
        # own /work (test_job_cp then found a 'work' directory it did not make)
        sys.exit(f"{out}: under /work, which is every job's own /work too: collect elsewhere (/var/tmp/...)")
    workers = int(os.environ.get("JOBLET_TEST_WORKERS", "3"))
    for i in range(workers):
        build = os.path.join(ROOT, f"build-cov-{i}")
        subprocess.run(["bash", "scripts/build.sh", build, "-Db_coverage=true"], cwd=ROOT, check=True)
        for f in gcda_files(build):
            os.unlink(f)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    env = dict(os.environ, JOBLET_BUILD_PER_WORKER=os.path.join(ROOT, "build-cov-@WORKER@"), JOBLET_COVERAGE_OUT=out)
    env.pop("JOBLET_PASS", None)
    p = subprocess.run(["/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers),
                        "--dist", "loadgroup", "--junitxml", os.path.join(out, "junit.xml"),
                        "tests/integration", "tests/gpu", *args], cwd=ROOT, env=env)
    print(f"pytest exited {p.returncode}; counters in {out}/<module>/")
    # the unit tests run in both passes (meson test): what they reach, the pass reaches
    build = os.path.join(ROOT, "build-cov-0")
    for f in gcda_files(build):
        os.unlink(f)
    subprocess.run(["meson", "test", "-C", build], cwd=ROOT, capture_output=True)
    for f in gcda_files(build):
        to = os.path.join(out, "_unit", "build-cov-0", os.path.relpath(f, build))
        os.makedirs(os.path.dirname(to), exist_ok=True)
        shutil.move(f, to)


def items_of(moddir):
    """{(source, line)} for the lines moddir's counters show run, and {(source, line, n)} for the
    directions of branches they show taken: gcov's JSON, run with the notes file of the build that
    wrote each counter file (a copy beside it)."""
    hit = set()
    for build in os.listdir(moddir):
        bdir = os.path.join(ROOT, build)
        files = []
        for gcda in gcda_files(os.path.join(moddir, build)):
            gcno = os.path.join(bdir, os.path.relpath(gcda, os.path.join(moddir, build)))[:-5] + ".gcno"
            if os.path.exists(gcno):
                shutil.copy(gcno, gcda[:-5] + ".gcno")
                files.append(gcda)
        if not files:
            continue
        p = subprocess.run(["gcov", "--json-format", "--branch-probabilities", "--stdout", *files], cwd=bdir, capture_output=True, text=True)
        for doc in p.stdout.splitlines():
            if not doc.startswith("{"):
                continue
            for f in json.loads(doc).get("files", []):
                src = os.path.normpath(os.path.join(bdir, f["file"]))
                if not src.startswith(os.path.join(ROOT, "src") + "/"):
                    continue
                src = os.path.relpath(src, ROOT)
                for ln in f["lines"]:
                    if ln["count"] > 0:
                        hit.add((src, ln["line_number"]))
                    for n, br in enumerate(ln.get("branches", [])):
                        if br["count"] > 0:
                            hit.add((src, ln["line_number"], n))
    return hit


def costs(out, junit):
    """{module: seconds}: its time in junit; for a module junit did not run (skipped there), its time
    in OUT/junit.xml times the ratio of the two files' times over the modules both ran."""
    normal = junit_seconds(os.path.join(out, "junit.xml"))
    if not junit:
        return normal
    there = junit_seconds(junit)
    both = [m for m in there if m in normal]
    ratio = sum(there[m] for m in both) / max(sum(normal[m] for m in both), 1.0)
    print(f"(modules {junit} did not run: their time in {out}/junit.xml x {ratio:.2f})")
    return {**{m: s * ratio for m, s in normal.items()}, **there}


def choose(out, junit=None):
    from conftest import SANITIZER_PASS_SKIPS
    cost = costs(out, junit)
    mods = sorted(m for m in os.listdir(out) if m.endswith(".py") and os.path.isdir(os.path.join(out, m)))
    cache = os.path.join(out, "items.json")   # gcov over every module takes minutes: read once
    if os.path.exists(cache):
        with open(cache) as fp:
            items = {m: {tuple(it) for it in v} for m, v in json.load(fp).items()}
    else:
        items = {m: items_of(os.path.join(out, m)) for m in mods + ["_unit"] if os.path.isdir(os.path.join(out, m))}
        with open(cache, "w") as fp:
            json.dump({m: sorted(v) for m, v in items.items()}, fp)
    unit = items.pop("_unit", set())
    seen = {}
    for v in items.values():
        for it in v:
            seen[it] = seen.get(it, 0) + 1

    def lines(v):
        return sum(1 for it in v if len(it) == 2)
    for m in sorted(mods, key=lambda m: -cost.get(m, 0)):
        only = sum(1 for it in items[m] if seen[it] == 1)
        print(f"{m}: {cost.get(m, 0):.1f} s, {lines(items[m])} lines, {len(items[m]) - lines(items[m])} branch "
              f"directions, {only} items no other module reaches")
    between = os.path.join(out, "_between")
    if os.path.isdir(between):
        print(f"(between modules, not counted: {len(items_of(between))} items)")

    eligible = [m for m in mods if "coverage_by_file" in SANITIZER_PASS_SKIPS.get(m, "coverage_by_file")]
    goal = set().union(*(items[m] for m in eligible)) - unit
    run = set().union(unit, *(items[m] for m in eligible if m not in SANITIZER_PASS_SKIPS))
    missed = sorted(it for it in set().union(*items.values()) - run if len(it) == 2)
    print(f"\nthe sanitizer pass ({len(SANITIZER_PASS_SKIPS)} modules skipped) reaches {lines(run)} lines; not:")
    for src, ln in missed:
        with open(os.path.join(ROOT, src)) as f:
            print(f"  {src}:{ln}: {f.read().splitlines()[ln - 1].strip()[:100]}")
    # for comparison: the fewest seconds that reach it all, by a greedy choice (new items per second
    # of cost), then each chosen module dropped again, the costliest first, when the rest reach it all
    left, chosen = set(goal), []
    while left:
        m = max((m for m in eligible if m not in chosen),
                key=lambda m: len(items[m] & left) / max(cost.get(m, 0), 1.0))
        if not items[m] & left:
            break
        chosen.append(m)
        left -= items[m]
    for m in sorted(chosen, key=lambda m: -cost.get(m, 0)):
        if items[m] - unit <= set().union(*(items[o] for o in chosen if o != m)):
            chosen.remove(m)
    rest = sorted(set(eligible) - set(chosen), key=lambda m: -cost.get(m, 0))
    spent, saved = sum(cost.get(m, 0) for m in chosen), sum(cost.get(m, 0) for m in rest)
    print(f"\na cover of every line and branch direction the pass may reach: {len(chosen)} of {len(eligible)} "
          f"modules, {spent:.0f} s of {spent + saved:.0f}; left out: {len(rest)} modules, {saved:.0f} s")
    for m in rest:
        print(f"  {m}: {cost.get(m, 0):.1f} s")


def unreached(out, prefixes):
    """The lines of src/ no module nor unit test reached (OUT/items.json), by file and function:
    every line the notes files of build-cov-0 know (gcov without counters: all 0) less those."""
    with open(os.path.join(out, "items.json")) as fp:
        hit = {(it[0], it[1]) for v in json.load(fp).values() for it in v if len(it) == 2}
    # and those written between modules: a module's daemon stopped after its counters were moved
    # (its module's attribution is lost, not its lines)
    between = os.path.join(out, "_between")
    if os.path.isdir(between):
        hit |= {it for it in items_of(between) if len(it) == 2}
    build = os.path.join(ROOT, "build-cov-0")
    gcnos = [os.path.join(dp, f) for dp, _, fs in os.walk(build) for f in fs if f.endswith(".gcno")]
    lines, funcs = {}, {}
    for gcno in gcnos:
        p = subprocess.run(["gcov", "--json-format", "--stdout", gcno], cwd=build, capture_output=True, text=True)
        for doc in p.stdout.splitlines():
            if not doc.startswith("{"):
                continue
            for f in json.loads(doc).get("files", []):
                src = os.path.normpath(os.path.join(build, f["file"]))
                if not src.startswith(os.path.join(ROOT, "src") + "/"):
                    continue
                src = os.path.relpath(src, ROOT)
                if prefixes and not src.startswith(tuple(prefixes)):
                    continue
                funcs.setdefault(src, set()).update((fn["start_line"], fn["end_line"], fn["name"])
                                                    for fn in f.get("functions", []))
                lines.setdefault(src, set()).update(ln["line_number"] for ln in f["lines"])
    total = sum(len(v) for v in lines.values())
    missed = {src: sorted(n for n in v if (src, n) not in hit) for src, v in sorted(lines.items())}
    print(f"{sum(len(v) for v in missed.values())} of {total} lines no module nor unit test reaches")
    parts = {}
    for src, v in lines.items():
        part = parts.setdefault(os.path.dirname(src), [0, 0])
        part[0] += len(v)
        part[1] += len(missed[src])
    for part, (n, m) in sorted(parts.items()):
        print(f"  {part}/: {n} lines, {m} not reached, {100 * (n - m) / max(n, 1):.1f} % reached")
    for src, nums in missed.items():
        if not nums:
            continue
        with open(os.path.join(ROOT, src)) as f:
            text = f.read().splitlines()
        by_fn = {}
        for n in nums:
            fn = min((fn for fn in funcs[src] if fn[0] <= n <= fn[1]), key=lambda fn: fn[1] - fn[0],
                     default=(0, 0, "(outside functions)"))
            by_fn.setdefault(fn[2], []).append(n)
        for name, ns in by_fn.items():
            print(f"== {src} {name}: {len(ns)} lines")
            for n in ns:
                print(f"   {n}: {text[n - 1].strip()[:110]}")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("collect", "choose", "unreached"):
        sys.exit(__doc__)
    if sys.argv[1] == "unreached":
        unreached(os.path.abspath(sys.argv[2]), sys.argv[3:])
    elif sys.argv[1] == "collect":
        collect(os.path.abspath(sys.argv[2]), sys.argv[3:])
    else:
        choose(os.path.abspath(sys.argv[2]), *sys.argv[3:4])
