#!/usr/bin/env python3
"""Start latency: wall time to launch /bin/true in isolation and see it finish.

Runs each command N times (after warm-ups), interleaved so that drifts in machine load hit
every command alike, and prints one table with the median and 95th percentile in ms:

  rnx       rnx --socket SOCK job run --follow /bin/true    (joblet; skipped if unavailable)
  runc      runc run --bundle B <unique id>                  (minimal bundle built here)
  bwrap     bwrap --unshare-all ... /bin/true
  unshare   unshare -fp --mount-proc /bin/true
  direct    /bin/true                                        (no isolation: the spawn floor)

Two builds of joblet side by side: --target NAME=RNX:SOCKET (repeatable) replaces the rnx row
by one row per target, each its own rnx against its own daemon, interleaved like the rest;
the figures of every target are also given relative to the first one:

  start_latency.py --only rnx --runs 300 \
      --target before=/work/wt-before/build/rnx:/tmp/bench-before/sock \
      --target after=/work/wt-after/build/rnx:/tmp/bench-after/sock

Standard library only. runc needs root.
"""

import argparse
import gc
import http.client
import json
import math
import os
import platform
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

TRUE = "/bin/true"


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a unix socket (the daemon's API)."""

    def __init__(self, path, timeout=10.0):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.unix_path)
        except OSError:
            s.close()
            raise
        self.sock = s


def api(sock_path, method, path, timeout=10.0):
    conn = UnixHTTPConnection(sock_path, timeout)
    try:
        conn.request(method, path, headers={"Accept": "application/json"})
        r = conn.getresponse()
        body = r.read()
        return r.status, (json.loads(body) if body else None)
    finally:
        conn.close()


def tail(text, n=300):
    text = (text or "").strip()
    return text if len(text) <= n else "..." + text[-n:]


class Runner:
    def __init__(self, name, argv, isolation):
        self.name = name
        self.argv = argv              # list, or a callable(i) -> list for per-run arguments
        self.isolation = isolation
        self.skipped = None           # reason, when it cannot run here
        self.samples_ns = []

    def args(self, i):
        return self.argv(i) if callable(self.argv) else self.argv

    def display(self):
        a = self.args("N")
        return " ".join(shlex.quote(x) for x in a)

    def run_once(self, i):
        """Returns elapsed ns, or raises RuntimeError with the failure."""
        argv = self.args(i)
        t0 = time.perf_counter_ns()
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        dt = time.perf_counter_ns() - t0
        if p.returncode != 0:
            raise RuntimeError(f"exit {p.returncode}: {tail(p.stderr.decode(errors='replace'))}")
        return dt


# ---- runners ------------------------------------------------------------------------------

def find_rnx(opt):
    if opt:
        return opt if os.access(opt, os.X_OK) else None
    found = shutil.which("rnx")
    if found:
        return found
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in ("build/rnx", "builddir/rnx", "_build/rnx"):
        p = os.path.join(os.path.dirname(here), cand)
        if os.access(p, os.X_OK):
            return p
    return None


def parse_target(text):
    """--target NAME=RNX:SOCKET -> (name, rnx path, socket path)."""
    name, eq, rest = text.partition("=")
    rnx, colon, sock = rest.rpartition(":")
    if not eq or not colon or not name or not rnx or not sock:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=RNX_PATH:SOCKET")
    return name, rnx, sock


def make_rnx(args, name="rnx", rnx_path=None, sock=None):
    sock = sock or args.socket
    rnx = find_rnx(rnx_path or args.rnx)
    extra = [a.replace("{socket}", sock) for a in shlex.split(args.rnx_args)]
    r = Runner(name, ([rnx] if rnx else [rnx_path or "rnx"]) + extra + [TRUE],
               "joblet job: its namespaces, cgroup, log capture; the CLI follows to the end")
    r.socket = sock
    if not rnx:
        r.skipped = (f"{rnx_path} is not executable" if rnx_path else
                     "rnx not found (give --rnx PATH, put it on PATH, or build into ./build)")
        return r
    try:
        st = os.stat(sock)
    except OSError as ex:
        r.skipped = f"daemon socket {sock}: {ex.strerror} (is joblet running? --socket)"
        return r
    import stat as stat_mod
    if not stat_mod.S_ISSOCK(st.st_mode):
        r.skipped = f"{sock} is not a socket"
        return r
    try:
        code, body = api(sock, "GET", "/v1/version")
        if code != 200:
            r.skipped = f"GET /v1/version answered {code}: {body}"
            return r
    except (OSError, http.client.HTTPException, ValueError) as ex:
        r.skipped = f"cannot talk to joblet at {sock}: {ex}"
        return r
    return r


def job_ids(sock_path):
    code, body = api(sock_path, "GET", "/v1/jobs", timeout=60)
    if code != 200:
        raise RuntimeError(f"GET /v1/jobs answered {code}: {body}")
    return {j["id"]: j for j in body.get("jobs", [])}


def cleanup(sock_path, before):
    """Deletes the terminal /bin/true jobs that appeared since `before` was taken."""
    try:
        new = [j for i, j in job_ids(sock_path).items() if i not in before
               and j.get("command") == TRUE and j.get("status") in ("COMPLETED", "FAILED", "STOPPED", "CANCELED")]
        failed = 0
        for j in new:
            code, _ = api(sock_path, "DELETE", "/v1/jobs/" + j["id"], timeout=30)
            failed += code not in (200, 204)
        print(f"cleanup: deleted {len(new) - failed} jobs" + (f", {failed} refused" if failed else ""))
    except (OSError, http.client.HTTPException, ValueError, RuntimeError) as ex:
        print(f"cleanup failed: {ex}", file=sys.stderr)


def build_runc_bundle(tmp):
    """rootfs with /bin/true and the libraries ldd names; config.json from `runc spec`."""
    bundle = os.path.join(tmp, "bundle")
    rootfs = os.path.join(bundle, "rootfs")
    os.makedirs(rootfs)

    def copy_in(path):
        dest = os.path.join(rootfs, path.lstrip("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(os.path.realpath(path), dest)   # the file's content, at the path asked for

    copy_in(TRUE)
    out = subprocess.run(["ldd", TRUE], capture_output=True, text=True)
    if out.returncode == 0:
        for line in out.stdout.splitlines():
            parts = line.split()
            # "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux... (0x...)"
            path = parts[2] if len(parts) >= 3 and parts[1] == "=>" else parts[0] if parts else ""
            if path.startswith("/"):
                copy_in(path)
    elif "not a dynamic executable" not in (out.stdout + out.stderr):
        raise RuntimeError(f"ldd {TRUE}: {tail(out.stderr)}")

    p = subprocess.run(["runc", "spec", "--bundle", bundle], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"runc spec: {tail(p.stderr)}")
    cfg_path = os.path.join(bundle, "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    cfg["process"]["args"] = [TRUE]
    cfg["process"]["terminal"] = False
    cfg["root"]["readonly"] = True
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=2)
    return bundle


def make_runc(args, tmp):
    state = os.path.join(tmp, "runc-state")
    prefix = f"jbench-{os.getpid()}"
    holder = {}
    r = Runner("runc", lambda i: ["runc", "--root", state, "run", "--bundle", holder.get("b", "BUNDLE"),
                                  f"{prefix}-{i}"],
               "runc 'runc spec' defaults: pid, net, ipc, uts, mount ns; cgroup; read-only rootfs")
    if not shutil.which("runc"):
        r.skipped = "runc not found on PATH"
    elif os.geteuid() != 0:
        r.skipped = "runc needs root (this bundle is not rootless)"
    else:
        try:
            holder["b"] = build_runc_bundle(tmp)
        except (OSError, RuntimeError) as ex:
            r.skipped = f"cannot build the bundle: {ex}"
    return r


def make_bwrap(args):
    r = Runner("bwrap", ["bwrap", "--unshare-all", "--ro-bind", "/usr", "/usr",
                         "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/lib", "/lib",
                         "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", TRUE],
               "bubblewrap --unshare-all: user, pid, net, ipc, uts, cgroup ns; new root")
    if not shutil.which("bwrap"):
        r.skipped = "bwrap not found on PATH"
    return r


def make_unshare(args):
    r = Runner("unshare", ["unshare", "-fp", "--mount-proc", TRUE],
               "util-linux unshare: pid + mount ns, fresh /proc")
    if not shutil.which("unshare"):
        r.skipped = "unshare not found on PATH"
    return r


def make_direct(args):
    return Runner("direct", [TRUE], "no isolation: fork+exec floor of this harness")


# ---- statistics ---------------------------------------------------------------------------

def pctl(sorted_vals, p):
    """Nearest-rank percentile."""
    if not sorted_vals:
        return float("nan")
    k = max(1, math.ceil(p / 100.0 * len(sorted_vals)))
    return sorted_vals[k - 1]


def summarize(r):
    ms = sorted(x / 1e6 for x in r.samples_ns)
    return {
        "n": len(ms),
        "median_ms": statistics.median(ms),
        "p95_ms": pctl(ms, 95),
        "min_ms": ms[0],
        "max_ms": ms[-1],
        "mean_ms": statistics.fmean(ms),
    }


def first_line(argv):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (p.stdout or p.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=200, help="timed runs per command (default 200)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed runs per command first (default 10)")
    ap.add_argument("--socket", default="/run/joblet/joblet.sock", help="joblet's unix socket")
    ap.add_argument("--rnx", help="path of rnx (default: PATH, then ./build/rnx)")
    ap.add_argument("--rnx-args", default="--socket {socket} job run --follow",
                    help="rnx arguments before /bin/true; {socket} is replaced (default: %(default)r)")
    ap.add_argument("--target", action="append", type=parse_target, metavar="NAME=RNX:SOCKET",
                    help="repeatable: an rnx row per target, this rnx against this socket, instead of "
                         "the one from --rnx/--socket; ratios are given to the first target")
    ap.add_argument("--only", help="comma-separated subset of: rnx,runc,bwrap,unshare,direct "
                                   "(rnx means every --target)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures (and raw samples) to FILE")
    ap.add_argument("--cleanup", action="store_true",
                    help="afterwards delete the finished /bin/true jobs the rnx runs created")
    args = ap.parse_args()
    if args.runs < 1 or args.warmup < 0:
        ap.error("--runs must be at least 1 and --warmup at least 0")

    names = ["rnx", "runc", "bwrap", "unshare", "direct"]
    if args.only:
        want = [n.strip() for n in args.only.split(",") if n.strip()]
        bad = [n for n in want if n not in names]
        if bad:
            ap.error(f"--only: unknown {', '.join(bad)}; choose from {', '.join(names)}")
        names = [n for n in names if n in want]
    targets = args.target or []
    tnames = [t[0] for t in targets]
    clash = sorted({n for n in tnames if tnames.count(n) > 1 or n in ("runc", "bwrap", "unshare", "direct")})
    if clash:
        ap.error(f"--target: name {', '.join(clash)} used twice or taken by a peer")

    tmp = tempfile.mkdtemp(prefix="joblet-bench-")
    try:
        makers = {"rnx": lambda: make_rnx(args), "runc": lambda: make_runc(args, tmp),
                  "bwrap": lambda: make_bwrap(args), "unshare": lambda: make_unshare(args),
                  "direct": lambda: make_direct(args)}
        runners = []
        for n in names:
            if n == "rnx" and targets:
                runners += [make_rnx(args, *t) for t in targets]
            else:
                runners.append(makers[n]())
        rnx_rows = [r for r in runners if hasattr(r, "socket")]
        before = {}                               # socket -> its jobs before the run
        if args.cleanup:
            for sock in dict.fromkeys(r.socket for r in rnx_rows if not r.skipped):
                try:
                    before[sock] = job_ids(sock)
                except (OSError, http.client.HTTPException, ValueError, RuntimeError) as ex:
                    print(f"--cleanup: cannot list jobs on {sock}, nothing will be deleted there: {ex}",
                          file=sys.stderr)

        # Warm-ups double as the availability check: a command that fails is skipped with why.
        for r in runners:
            if r.skipped:
                continue
            try:
                for w in range(max(1, args.warmup)):
                    r.run_once(f"w{w}")
            except RuntimeError as ex:
                r.skipped = f"{r.display()} failed: {ex}"
        live = [r for r in runners if not r.skipped]

        print(f"start latency of {TRUE}: {args.runs} runs each after {args.warmup} warm-ups, interleaved; "
              f"{os.cpu_count()} CPUs, kernel {platform.release()}", flush=True)
        gc.disable()
        try:
            for i in range(args.runs):
                k = i % len(live) if live else 0
                for r in live[k:] + live[:k]:     # rotate the order each round
                    if r.skipped:
                        continue
                    try:
                        r.samples_ns.append(r.run_once(i))
                    except RuntimeError as ex:
                        r.skipped = f"run {i} failed: {ex}"
                if sys.stderr.isatty() and (i + 1) % 20 == 0:
                    print(f"\r  {i + 1}/{args.runs}", end="", file=sys.stderr, flush=True)
        finally:
            gc.enable()
            if sys.stderr.isatty():
                print("\r" + " " * 20 + "\r", end="", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    stats = {r.name: summarize(r) for r in runners if not r.skipped and r.samples_ns}
    runc = stats.get("runc")

    # ---- the table
    print()
    w = max([9] + [len(r.name) for r in runners])
    hdr = (f"{'command':<{w}} {'runs':>5} {'median ms':>10} {'p95 ms':>9} {'min ms':>8} {'max ms':>8} "
           f"{'median/runc':>12}")
    print(hdr)
    print("-" * len(hdr))
    for r in runners:
        s = stats.get(r.name)
        if not s:
            print(f"{r.name:<{w}} {'-':>5}  skipped: {r.skipped}")
            continue
        rel = f"{s['median_ms'] / runc['median_ms']:.2f}x" if runc else "-"
        print(f"{r.name:<{w}} {s['n']:>5} {s['median_ms']:>10.2f} {s['p95_ms']:>9.2f} "
              f"{s['min_ms']:>8.2f} {s['max_ms']:>8.2f} {rel:>12}")
    print()

    def ratio(a, b):
        return {"median": stats[a]["median_ms"] / stats[b]["median_ms"],
                "p95": stats[a]["p95_ms"] / stats[b]["p95_ms"]}

    ratios = None
    ratios_targets = {}
    if targets:
        base = tnames[0]
        for n in tnames[1:]:
            if n in stats and base in stats:
                ratios_targets[n] = ratio(n, base)
                print(f"{n}/{base}: median {ratios_targets[n]['median']:.3f}x, "
                      f"p95 {ratios_targets[n]['p95']:.3f}x")
            else:
                print(f"{n}/{base}: n/a ({n if n not in stats else base} skipped)")
        if runc:
            for n in tnames:
                if n in stats:
                    rr = ratio(n, "runc")
                    print(f"{n}/runc: median {rr['median']:.2f}x, p95 {rr['p95']:.2f}x")
    elif "rnx" in stats and runc:
        ratios = ratio("rnx", "runc")
        print(f"rnx/runc: median {ratios['median']:.2f}x, p95 {ratios['p95']:.2f}x")
    else:
        why = "rnx skipped" if "rnx" not in stats else "runc skipped"
        print(f"rnx/runc: n/a ({why})")
    print()
    for r in runners:
        print(f"  {r.name:<8} {r.display()}")
        print(f"  {'':<8} isolation: {r.isolation}")

    if before:
        print()
        for sock, jobs in before.items():
            cleanup(sock, jobs)

    if args.json:
        doc = {
            "benchmark": "start_latency",
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": {"cpus": os.cpu_count(), "kernel": platform.release(), "machine": platform.machine(),
                     "python": platform.python_version(),
                     "runc": first_line(["runc", "--version"]) if shutil.which("runc") else None,
                     "bwrap": first_line(["bwrap", "--version"]) if shutil.which("bwrap") else None,
                     "unshare": first_line(["unshare", "--version"]) if shutil.which("unshare") else None},
            "runs": args.runs,
            "warmup": args.warmup,
            "results": {},
            "ratio_rnx_runc": ratios,
        }
        if targets:
            doc["ratio_to_first_target"] = ratios_targets
        for r in runners:
            entry = {"command": r.display(), "isolation": r.isolation}
            if r.name in stats:
                entry.update(stats[r.name])
                entry["samples_ms"] = [round(x / 1e6, 4) for x in r.samples_ns]
            else:
                entry["skipped"] = r.skipped
            doc["results"][r.name] = entry
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
