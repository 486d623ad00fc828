#!/usr/bin/env python3
"""layering.py [--graph] [BUILD_DIR] — checks the layering of src/ from the compiled objects.

Reads the symbol tables of the objects compiled from src/ in BUILD_DIR (default: build) with
`nm`, and builds the file-level dependency graph: src/a.c -> src/b.c when a.c uses (U) a
symbol that b.c defines (T, D, B, R, ...). It fails (exit 1) when
  (a) files form a cycle (a strongly connected component of two or more files), or
  (b) a file uses a symbol of a file in a higher layer ("upward call"), or one its layer may
      not use (sim), or a file lies in a directory that is not in LAYERS below.
On failure it prints every problem and the whole graph; on success one line. --graph prints
the graph always. There is no list of known exceptions: the check is strict.

The layer of a file is its directory under src/ (src/common/log.c -> common). Arrows inside
one layer are allowed as long as they make no cycle. Types and macros are invisible to nm:
only functions and variables make arrows. docs/architecture.md ("Layering") describes the
same order.
"""
import argparse
import collections
import json
import os
import subprocess
import sys

# The layers, bottom to top. A file may use the files of its own layer (without cycles) and
# those of the layers below it; `uses` narrows that to the layers listed.
#   layer     uses          what
LAYERS = [
    ("common", None),   # err, log, parse, util, b64, jsonx, promtext: no joblet concepts
    ("sched", None),    # pure scheduling decisions and GPU placement
    ("gpu", None),      # GPU discovery, backends (NVML, nvidia-smi, fixtures), XID policy
    ("store", None),    # SQLite persistence
    ("exec", None),     # the shim: cgroups, device filter, seccomp, namespaces, mounts
    ("core", None),     # the daemon's jobs, queue, launch, workflows, GPU bookkeeping, metrics
    ("api", None),      # HTTP server and routes over core
    ("daemon", None),   # joblet's main(): wires everything together
    ("cli", None),      # rnx, the client (a separate program: talks HTTP, links common only)
    ("sim", ("common", "sched", "gpu")),  # joblet-sim, the scheduler simulator (top)
]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}
USES = {name: uses for name, uses in LAYERS}

# nm symbol types that define a global symbol (other lower case ones are local: statics), and
# those that use one (w, v: a weak reference, which needs no definition).
DEFINED_TYPES = set("ABCDGRSTVWiu")
USED_TYPES = set("Uwv")
SKIP_DIRS = ("tests", "bench")  # objects of build/tests/..., build/bench/... are not src/


def layer_of(path):
    """src/core/jobs.c -> 'core'; None when the file is not in a directory of src/."""
    parts = path.split("/")
    if len(parts) < 3 or parts[0] != "src":
        return None
    return parts[1]


# -- reading a build directory -------------------------------------------------------------

def source_root(build_dir):
    """The source directory the build was configured from (meson-info), else this checkout."""
    info = os.path.join(build_dir, "meson-info", "meson-info.json")
    try:
        with open(info) as f:
            return json.load(f)["directories"]["source"]
    except (OSError, ValueError, KeyError):
        return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def src_files(root):
    """Every .c file under src/, as 'src/...' paths."""
    out = []
    for dirpath, _, names in os.walk(os.path.join(root, "src")):
        for n in names:
            if n.endswith(".c"):
                out.append(os.path.relpath(os.path.join(dirpath, n), root).replace(os.sep, "/"))
    return sorted(out)


def find_objects(build_dir, root):
    """{source path: object path}: one object per src/ file (the same source compiled into
    several targets gives identical symbols; the first is kept). Meson names an object after
    its source's path relative to the target's directory, '/' -> '_', '..' kept:
    joblet.p/src_core_jobs.c.o, libjcommon.a.p/src_common_util.c.o. When the build has a
    compile_commands.json, only the objects it lists count."""
    by_mangled = {}
    for path in src_files(root):
        mangled = path.replace("/", "_") + ".o"
        if mangled in by_mangled:
            raise SystemExit(f"layering: {path} and {by_mangled[mangled]} give the same object name")
        by_mangled[mangled] = path
    # Objects the build still makes (compile_commands.json): not one left behind by a source
    # taken out of meson.build.
    current = None
    try:
        with open(os.path.join(build_dir, "compile_commands.json")) as f:
            current = {os.path.realpath(os.path.join(build_dir, c["output"])) for c in json.load(f)}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    objects = {}
    for dirpath, dirnames, names in os.walk(build_dir):
        rel = os.path.relpath(dirpath, build_dir)
        if rel == ".":
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("meson-"))
        else:
            dirnames.sort()
        for n in sorted(names):
            if not n.endswith(".o"):
                continue
            base = n
            while base.startswith(".._"):
                base = base[3:]
            src = by_mangled.get(base)
            if current is not None and os.path.realpath(os.path.join(dirpath, n)) not in current:
                continue
            if src is not None and src not in objects:
                objects[src] = os.path.join(dirpath, n)
    return objects


def read_symbols(objects):
    """{source path: (defined symbols, used symbols)} from `nm -A -P` of the objects."""
    obj_to_src = {obj: src for src, obj in objects.items()}
    table = {src: (set(), set()) for src in objects}
    if not objects:
        return table
    res = subprocess.run(["nm", "-A", "-P"] + sorted(obj_to_src), capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"layering: nm failed: {res.stderr.strip()}")
    for line in res.stdout.splitlines():
        # "<object>: <name> <type> [<value> <size>]"
        obj, sep, rest = line.partition(": ")
        fields = rest.split()
        if not sep or len(fields) < 2 or obj not in obj_to_src:
            continue
        name, kind = fields[0], fields[1]
        defined, used = table[obj_to_src[obj]]
        if kind in USED_TYPES:
            used.add(name)
        elif kind in DEFINED_TYPES:
            defined.add(name)
    return table


# -- the analysis --------------------------------------------------------------------------

class Result:
    def __init__(self):
        self.files = []          # every file, sorted
        self.arrows = {}         # {(from, to): sorted symbols}
        self.cycles = []         # [(component: [files], cycles: [[files...]])]
        self.violations = []     # [(user, symbol, definer, why)]
        self.unknown = []        # files outside the layers of LAYERS
        self.duplicates = {}     # {symbol: [definers]} for symbols defined in several files

    @property
    def ok(self):
        return not (self.cycles or self.violations or self.unknown)

    def out(self, a):
        return sorted((b, syms) for (x, b), syms in self.arrows.items() if x == a)


def analyze(table):
    """table: {file: (defined symbols, used symbols)} -> Result.

    A symbol defined in several files (main, or the same name in two programs) is resolved
    to the definer in the user's own directory when there is one (that is the one its
    program links); otherwise every definer gets an arrow (strict)."""
    r = Result()
    r.files = sorted(table)
    definers = collections.defaultdict(list)
    for f in r.files:
        for s in table[f][0]:
            definers[s].append(f)
    r.duplicates = {s: fs for s, fs in sorted(definers.items()) if len(fs) > 1}

    arrows = collections.defaultdict(set)
    for f in r.files:
        for s in table[f][1]:
            ds = [d for d in definers.get(s, ()) if d != f]
            if len(ds) > 1:
                same_dir = [d for d in ds if os.path.dirname(d) == os.path.dirname(f)]
                if same_dir:
                    ds = same_dir
            for d in ds:
                arrows[(f, d)].add(s)
    r.arrows = {k: sorted(v) for k, v in sorted(arrows.items())}

    for f in r.files:
        if layer_of(f) not in RANK:
            r.unknown.append(f)
    for (a, b), syms in r.arrows.items():
        la, lb = layer_of(a), layer_of(b)
        if la not in RANK or lb not in RANK or la == lb:
            continue
        if RANK[lb] > RANK[la]:
            why = f"upward call: {la} is below {lb}"
        elif USES[la] is not None and lb not in USES[la]:
            why = f"{la} may use only {', '.join(USES[la])}"
        else:
            continue
        for s in syms:
            r.violations.append((a, s, b, why))

    for comp in strongly_connected(r.files, r.arrows):
        if len(comp) > 1:
            r.cycles.append((comp, cycles_in(comp, r.arrows)))
    return r


def strongly_connected(nodes, arrows):
    """Tarjan's algorithm (iterative); each component sorted, components in file order."""
    succ = collections.defaultdict(list)
    for a, b in arrows:
        succ[a].append(b)
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(succ[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(succ[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(sorted(comp))
    return sorted(comps)


def cycles_in(comp, arrows):
    """The shortest cycle through each arrow of the component, without repeats: every arrow
    that ties the component together appears in at least one of them."""
    members = set(comp)
    succ = collections.defaultdict(list)
    for a, b in arrows:
        if a in members and b in members:
            succ[a].append(b)
    found, seen = [], set()
    for a, b in sorted((a, b) for a, b in arrows if a in members and b in members):
        # shortest path b -> a (breadth first), closing the cycle a -> b -> ... -> a
        prev, queue = {b: None}, collections.deque([b])
        while queue and a not in prev:
            v = queue.popleft()
            for w in sorted(succ[v]):
                if w not in prev:
                    prev[w] = v
                    queue.append(w)
        path, v = [], a
        while v is not None:
            path.append(v)
            v = prev[v]
        cycle = [a] + path[::-1][:-1]  # a, b, ..., (not a again)
        i = cycle.index(min(cycle))
        key = tuple(cycle[i:] + cycle[:i])
        if key not in seen:
            seen.add(key)
            found.append(list(key))
    return sorted(found, key=lambda c: (len(c), c))


# -- output --------------------------------------------------------------------------------

def format_graph(r):
    lines = ["graph (file -> file it uses: symbols), by layer, bottom to top:"]
    order = [name for name, _ in LAYERS] + sorted({layer_of(f) or "?" for f in r.unknown})
    for layer in order:
        files = [f for f in r.files if (layer_of(f) or "?") == layer]
        if not files:
            continue
        lines.append(f"[{layer}]")
        for f in files:
            lines.append(f"  {f}")
            for b, syms in r.out(f):
                lines.append(f"    -> {b}: {', '.join(syms)}")
    return lines


def format_problems(r):
    lines = []
    for f in r.unknown:
        lines.append(f"unknown layer: {f} (directory {layer_of(f)!r} is not in LAYERS of scripts/layering.py)")
    for comp, cycles in r.cycles:
        lines.append(f"cycle: {len(comp)} files tie each other: {', '.join(comp)}")
        for c in cycles:
            lines.append("  " + " -> ".join(c + [c[0]]))
            for a, b in zip(c, c[1:] + c[:1]):
                lines.append(f"      {a} -> {b}: {', '.join(r.arrows[(a, b)])}")
    for a, s, b, why in r.violations:
        lines.append(f"layer violation: {a} uses {s} defined in {b} ({why})")
    return lines


def summary(r):
    return (f"layering: {len(r.files)} files, {len(r.arrows)} arrows, "
            f"{'no cycles' if not r.cycles else f'{len(r.cycles)} cycles'}, "
            f"{'no upward calls' if not r.violations else f'{len(r.violations)} layer violations'}"
            + (f", {len(r.unknown)} files in unknown layers" if r.unknown else ""))


def report(r, graph=False):
    """(exit status, output lines) for a Result: the graph when it fails or when asked, the
    problems, and the summary line."""
    lines = []
    if not r.ok or graph:
        lines += format_graph(r)
    if not r.ok:
        lines += format_problems(r)
    lines.append(summary(r))
    return (0 if r.ok else 1), lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build_dir", nargs="?", default="build")
    ap.add_argument("--graph", action="store_true", help="print the graph even when the check passes")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.build_dir):
        print(f"layering: no build directory {args.build_dir}", file=sys.stderr)
        return 2
    objects = find_objects(args.build_dir, source_root(args.build_dir))
    if not objects:
        print(f"layering: no objects of src/ in {args.build_dir} (not built?)", file=sys.stderr)
        return 2
    r = analyze(read_symbols(objects))
    rc, lines = report(r, args.graph)
    print("\n".join(lines))
    return rc


if __name__ == "__main__":
    sys.exit(main())
