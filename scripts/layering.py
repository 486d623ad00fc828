#!/usr/bin/env python3
"""layering.py [--graph] [--source DIR] [BUILD_DIR] — checks the layering of src/ from the
compiled objects and the #include lines.

Reads the symbol tables of the objects compiled from src/ in BUILD_DIR (default: build) with
`nm`, and builds the file-level dependency graph: src/a.c -> src/b.c when a.c uses (U) a
symbol that b.c defines (T, D, B, R, ...). It also reads every `#include` line of src/'s .c
and .h files (quoted ones resolved to files of src/), and the symbols the objects of the
tests (BUILD_DIR/tests, BUILD_DIR/bench) use. It fails (exit 1) when
  (a) files form a cycle (a strongly connected component of two or more files), or
  (b) a file uses a symbol of a file in a higher layer ("upward call"), or one its layer may
      not use (sim), or a file lies in a directory that is not in LAYERS below, or
  (c) files include each other in a circle ("include cycle", headers included: what nm cannot
      see, types, macros and inline functions, travels this way), or
  (d) a file includes a header of a higher layer ("upward include": store/ including core/),
      or one its layer may not use, or
  (e) a file outside src/api/ includes microhttpd.h (only the API speaks HTTP), or
  (f) a function of src/ is called only by tests: the tests must test the code that runs.
On failure it prints every problem and the whole graph; on success one line. --graph prints
the graph always. The source tree is the one BUILD_DIR was configured from, or --source.

There is no exception list: the check is strict.

The layer of a file is its directory under src/ (src/common/log.c -> common). Arrows inside
one layer are allowed as long as they make no cycle. docs/architecture.md ("Layering")
describes the same order.
"""
import argparse
import collections
import json
import os
import re
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
    ("sim", ("common", "sched", "gpu")),  # joblet-sim, the scheduler simulator
    ("slurm", ("common",)),  # joblet.so, Slurm's SPANK plugin: talks HTTP to the daemon (top)
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


def find_test_objects(build_dir, root):
    """[object path]: the objects of BUILD_DIR/tests and BUILD_DIR/bench compiled from the
    tests' own sources (not the copies of src/ files some tests compile in), that the build
    still makes when it has a compile_commands.json."""
    srcs = {path.replace("/", "_") + ".o" for path in src_files(root)}
    current = None
    try:
        with open(os.path.join(build_dir, "compile_commands.json")) as f:
            current = {os.path.realpath(os.path.join(build_dir, c["output"])) for c in json.load(f)}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    out = []
    for top in SKIP_DIRS:
        for dirpath, dirnames, names in os.walk(os.path.join(build_dir, top)):
            dirnames.sort()
            for n in sorted(names):
                base = n
                while base.startswith(".._"):
                    base = base[3:]
                path = os.path.join(dirpath, n)
                if not n.endswith(".o") or base in srcs:
                    continue
                if current is not None and os.path.realpath(path) not in current:
                    continue
                out.append(path)
    return out


def nm_symbols(paths, strict=True):
    """{path: [(name, type)]} from `nm -A -P`. Not strict: a file nm cannot read is left out."""
    table = {p: [] for p in paths}
    if not paths:
        return table
    res = subprocess.run(["nm", "-A", "-P"] + sorted(paths), capture_output=True, text=True)
    if res.returncode != 0 and strict:
        raise SystemExit(f"layering: nm failed: {res.stderr.strip()}")
    for line in res.stdout.splitlines():
        # "<object>: <name> <type> [<value> <size>]"
        obj, sep, rest = line.partition(": ")
        fields = rest.split()
        if sep and len(fields) >= 2 and obj in table:
            table[obj].append((fields[0], fields[1]))
    return table


def read_functions(objects):
    """{source path: the functions it defines (nm type T)}."""
    syms = nm_symbols(list(objects.values()))
    return {src: {n for n, k in syms[obj] if k == "T"} for src, obj in objects.items()}


def read_test_uses(build_dir, paths):
    """{test object, relative to BUILD_DIR: the symbols it uses}."""
    syms = nm_symbols(paths, strict=False)
    return {os.path.relpath(p, build_dir): {n for n, k in syms[p] if k in USED_TYPES} for p in paths}


INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def read_includes(root):
    """{file: [(line number, name as written, the src/ file it is or None)]} for every .c and
    .h file under src/. A quoted name is looked for beside the file, then under src/ (the
    tests' include directory); an angle one (<microhttpd.h>) is never a file of src/."""
    files = []
    for dirpath, _, names in os.walk(os.path.join(root, "src")):
        for n in names:
            if n.endswith((".c", ".h")):
                files.append(os.path.relpath(os.path.join(dirpath, n), root).replace(os.sep, "/"))
    known = set(files)
    out = {}
    for path in sorted(files):
        incs = []
        with open(os.path.join(root, path), errors="replace") as f:
            for no, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                name, target = m.group(2).strip(), None
                if m.group(1) == '"':
                    for base in (os.path.dirname(path), "src"):
                        t = os.path.normpath(os.path.join(base, name)).replace(os.sep, "/")
                        if t in known:
                            target = t
                            break
                incs.append((no, name, target))
        out[path] = incs
    return out


def read_sources(root, files):
    """{file: its text} for the given src/ paths (for the test-only rule's own-file uses)."""
    out = {}
    for path in files:
        try:
            with open(os.path.join(root, path), errors="replace") as f:
                out[path] = f.read()
        except OSError:
            out[path] = ""
    return out


def read_symbols(objects):
    """{source path: (defined symbols, used symbols)} from `nm -A -P` of the objects."""
    syms = nm_symbols(list(objects.values()))
    table = {}
    for src, obj in objects.items():
        table[src] = ({n for n, k in syms[obj] if k in DEFINED_TYPES}, {n for n, k in syms[obj] if k in USED_TYPES})
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
        # from the #include lines (when read)
        self.includes = 0             # how many were read
        self.inc_arrows = {}          # {(from, to): [line numbers]}, files of src/ only
        self.inc_cycles = []          # [(component, cycles)] as cycles
        self.inc_violations = []      # [(file, line, included file, why)]
        self.mhd = []                 # [(file, line)]: microhttpd.h outside src/api/
        # from the tests' objects (when read)
        self.test_only = []           # [(file, function, [test objects])]

    @property
    def ok(self):
        return not (self.cycles or self.violations or self.unknown or self.inc_cycles or self.inc_violations
                    or self.mhd or self.test_only)

    def out(self, a):
        return sorted((b, syms) for (x, b), syms in self.arrows.items() if x == a)


def layer_rule(la, lb, verb):
    """Why layer la may not use (verb: 'call'/'include') layer lb, or None when it may."""
    if la not in RANK or lb not in RANK or la == lb:
        return None
    if RANK[lb] > RANK[la]:
        return f"upward {verb}: {la} is below {lb}"
    if USES[la] is not None and lb not in USES[la]:
        return f"{la} may use only {', '.join(USES[la])}"
    return None


def code_only(text):
    """C text without its comments and string and character literals."""
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', " ", text, flags=re.S)


def own_uses(text, name):
    """How many times the code of a file names `name` (its definition is one)."""
    return len(re.findall(r"\b" + re.escape(name) + r"\b", code_only(text)))


def analyze(table, includes=None, functions=None, test_uses=None, sources=None):
    """table: {file: (defined symbols, used symbols)} -> Result. Optional: includes
    {file: [(line, name, src file or None)]} (read_includes); functions {file: functions it
    defines}, test_uses {test object: symbols it uses} and sources {file: text} for the
    test-only rule (a function no file of src/ uses, not even its own, that a test uses).

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
        why = layer_rule(layer_of(a), layer_of(b), "call")
        if why:
            for s in syms:
                r.violations.append((a, s, b, why))

    for comp in strongly_connected(r.files, r.arrows):
        if len(comp) > 1:
            r.cycles.append((comp, cycles_in(comp, r.arrows)))

    if includes is not None:
        check_includes(r, includes)
    if functions is not None and test_uses is not None:
        check_test_only(r, table, functions, test_uses, sources or {})
    return r


def check_includes(r, includes):
    """The rules of the #include lines: cycles, upward includes, microhttpd.h outside api/."""
    arrows = collections.defaultdict(list)
    for f in sorted(includes):
        for line, name, target in includes[f]:
            r.includes += 1
            if target is not None and target != f:
                arrows[(f, target)].append(line)
                why = layer_rule(layer_of(f), layer_of(target), "include")
                if why:
                    r.inc_violations.append((f, line, target, why))
            if os.path.basename(name) == "microhttpd.h" and layer_of(f) != "api":
                r.mhd.append((f, line))
    r.inc_arrows = dict(sorted(arrows.items()))
    for comp in strongly_connected(sorted(includes), r.inc_arrows):
        if len(comp) > 1:
            r.inc_cycles.append((comp, cycles_in(comp, r.inc_arrows)))


def check_test_only(r, table, functions, test_uses, sources):
    """A function of src/ that no object of src/ uses and its own file does not name again
    (a call, or its address taken), while a test uses it."""
    used = set()
    for f in table:
        used |= table[f][1]
    for f in sorted(functions):
        for name in sorted(functions[f]):
            if name in used:
                continue
            callers = sorted(t for t, u in test_uses.items() if name in u)
            if not callers or own_uses(sources.get(f, ""), name) > 1:
                continue
            r.test_only.append((f, name, callers))


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
    for comp, cycles in r.inc_cycles:
        lines.append(f"include cycle: {len(comp)} files include each other: {', '.join(comp)}")
        for c in cycles:
            lines.append("  " + " -> ".join(c + [c[0]]))
            for a, b in zip(c, c[1:] + c[:1]):
                lines.append(f"      {a}:{','.join(map(str, r.inc_arrows[(a, b)]))} includes {b}")
    for f, line, target, why in r.inc_violations:
        lines.append(f"include violation: {f}:{line} includes {target} ({why})")
    for f, line in r.mhd:
        lines.append(f"http outside the API: {f}:{line} includes microhttpd.h (only src/api/ may)")
    for f, name, callers in r.test_only:
        lines.append(f"test-only function: {name} ({f}) is called by no file of src/, only by {', '.join(callers)}")
    return lines


def summary(r):
    """One line: the symbols' graph; then, when #include lines were read, theirs; and the
    count of each other problem."""
    line = (f"layering: {len(r.files)} files, {len(r.arrows)} arrows, "
            f"{'no cycles' if not r.cycles else f'{len(r.cycles)} cycles'}, "
            f"{'no upward calls' if not r.violations else f'{len(r.violations)} layer violations'}"
            + (f", {len(r.unknown)} files in unknown layers" if r.unknown else ""))
    if r.includes:
        line += (f"; includes: {r.includes} read, "
                 f"{'no cycles' if not r.inc_cycles else f'{len(r.inc_cycles)} include cycles'}, "
                 f"{'none upward' if not r.inc_violations else f'{len(r.inc_violations)} include violations'}"
                 + (f", {len(r.mhd)} microhttpd.h outside api/" if r.mhd else ""))
    if r.test_only:
        line += f", {len(r.test_only)} test-only functions"
    return line


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
    ap.add_argument("--source", help="the source tree whose #include lines and files are read "
                    "(default: the one BUILD_DIR was configured from)")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.build_dir):
        print(f"layering: no build directory {args.build_dir}", file=sys.stderr)
        return 2
    root = args.source or source_root(args.build_dir)
    objects = find_objects(args.build_dir, root)
    if not objects:
        print(f"layering: no objects of src/ in {args.build_dir} (not built?)", file=sys.stderr)
        return 2
    table = read_symbols(objects)
    tests = find_test_objects(args.build_dir, root)
    r = analyze(table, includes=read_includes(root), functions=read_functions(objects),
                test_uses=read_test_uses(args.build_dir, tests), sources=read_sources(root, sorted(objects)))
    rc, lines = report(r, args.graph)
    print("\n".join(lines))
    return rc


if __name__ == "__main__":
    sys.exit(main())
