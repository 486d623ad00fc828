#!/usr/bin/env python3
"""Start-up with a large database: what months of a busy shared machine cost joblet's start.

Builds a state directory the way an admin's would look after months (defaults):

  --jobs 100000        ended jobs kept, of --users 50 users (2,000 each: under
                       limits.max_jobs_per_user's 10,000), each with its job directory
  --events 10          history events (job_events) per ended job: 1,000,000 rows
  --arrays 20          arrays of --array-tasks 100000 tasks, --made 3000 of them made (ended),
                       the arrays held (so that the start makes no task)
  --queued 1000        PENDING jobs with --after: half after a HELD gate, half in chains
  --workflows 500      ended workflows of two jobs each

First a real daemon (build/joblet, a config raising the per-user limits) is driven through rnx:
ended jobs, a held gate, a job --after it, an array made a little then held, a workflow. Then,
for volume, the rows it wrote are copied with sqlite3 in the same shape (new ids, numbers, owners,
times; the task rows of each array; the events of each job) and each job gets its directory.

Then joblet is started on it (--starts times) at log level info and this prints, per start: the
time from exec to the socket answering GET /v1/version, the daemon's VmRSS then, the phases of its
start as it logs them ("start: ..." line), the first `rnx job list` (and `--all`), the first
GET /metrics, and joblet_loop_longest_turn_seconds after --settle seconds; beside them the floor:
Python's sqlite3 reading every row of jobs, arrays, workflows (and counting job_events) from the
same file, and the `sqlite3` shell doing the same.

  sudo python3 bench/start_bigdb.py                      # build the state, two starts, remove it
  sudo python3 bench/start_bigdb.py --dir /tmp/big --keep   # keep it; run again with --reuse
  sudo python3 bench/start_bigdb.py --build OLD --build build --reuse --dir /tmp/big  # two builds

Standard library only; needs root (joblet does). Removes its daemons, cgroups and (without
--keep) its directory.
"""

import argparse
import glob
import json
import os
import random
import resource
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from throughput import UnixHTTPConnection, request  # noqa: E402


def rnx(build, sock, *args, check=True):
    p = subprocess.run([os.path.join(build, "rnx"), *args], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": sock}, timeout=600)
    if check and p.returncode != 0:
        raise RuntimeError(f"rnx {' '.join(args)}: {p.stderr}")
    return p.stdout


class Daemon:
    def __init__(self, build, base, name):
        self.build, self.base = build, base
        self.state = os.path.join(base, "state")
        self.sock = os.path.join(base, "sock")
        self.log_path = os.path.join(base, "joblet-" + name.strip("/").replace("/", "_") + ".log")
        self.cg = "joblet-bigdb-" + uuid.uuid4().hex[:8]
        self.config = os.path.join(base, "joblet.yml")
        with open(self.config, "w") as f:
            f.write(f"cgroup:\n  root: {self.cg}\nlimits:\n  max_jobs_per_user: 0\n  max_queued_per_user: 0\n")
        self.proc = None

    def start(self):
        """Starts joblet; returns seconds from exec to GET /v1/version answering."""
        log = open(self.log_path, "a")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen([os.path.join(self.build, "joblet"), "--config", self.config,
                                      "--state-dir", self.state, "--socket", self.sock, "--log-level", "info"],
                                     stdout=log, stderr=log, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        log.close()
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("joblet exited at start:\n" + open(self.log_path).read()[-3000:])
            try:
                c = UnixHTTPConnection(self.sock, timeout=600)
                st, _ = request(c, "GET", "/v1/version")
                c.close()
                if st == 200:
                    return time.perf_counter() - t0
            except OSError:
                pass
            if time.perf_counter() - t0 > 600:
                raise RuntimeError("joblet did not answer within 600 s")
            time.sleep(0.005)

    def rss_kib(self):
        out = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    out[k] = int(v.split()[0])
        return out

    def cpu_s(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def cleanup(self):
        """Stops the daemon, the shims it left (the held gate runs none), removes its cgroups."""
        self.stop()
        for top in ["/sys/fs/cgroup"] + sorted(glob.glob("/sys/fs/cgroup/*/")):
            root = os.path.join(top, self.cg)
            if os.path.isdir(root):
                for d, _, _ in sorted(os.walk(root), key=lambda w: -w[0].count("/")):
                    try:
                        os.rmdir(d)
                    except OSError:
                        pass

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


# -- building the state -----------------------------------------------------------------------
def seed(build, base, array_tasks):
    """A real daemon's rows of each kind (returns nothing: they are in base/state/joblet.db)."""
    d = Daemon(build, base, "seed")
    try:
        d.start()
        for _ in range(3):
            rnx(build, d.sock, "job", "run", "--follow", "/bin/true")
        gate = rnx(build, d.sock, "job", "run", "--hold", "--name", "gate", "sleep", "3600").strip()
        rnx(build, d.sock, "job", "run", "--after", gate, "/bin/true")
        arr = rnx(build, d.sock, "job", "run", "--array", f"0-{array_tasks - 1}%2", "/bin/true").strip()
        wf = os.path.join(base, "wf.yaml")
        with open(wf, "w") as f:
            f.write("name: d\njobs:\n  a:\n    command: /bin/true\n  b:\n    command: /bin/true\n"
                    "    requires:\n      - a: COMPLETED\n")
        rnx(build, d.sock, "workflow", "run", wf)
        db = sqlite3.connect(os.path.join(d.state, "joblet.db"), timeout=30)
        deadline = time.time() + 60
        while time.time() < deadline:
            made = db.execute("SELECT count(*) FROM jobs WHERE array_id = ? AND state = 'COMPLETED'", (arr,)).fetchone()[0]
            wfd = db.execute("SELECT count(*) FROM workflows WHERE state = 'COMPLETED'").fetchone()[0]
            if made >= 10 and wfd:
                break
            time.sleep(0.2)
        db.close()
        rnx(build, d.sock, "job", "hold", arr)
        time.sleep(0.5)
    finally:
        d.cleanup()


def new_id(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def inflate(path, a):
    """Copies the seed's rows up to the sizes asked, in the shape joblet wrote them."""
    rng = random.Random(1)
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    cols = [r[1] for r in db.execute("PRAGMA table_info(jobs)")]
    acols = [r[1] for r in db.execute("PRAGMA table_info(arrays)")]
    wcols = [r[1] for r in db.execute("PRAGMA table_info(workflows)")]
    ended = dict(db.execute("SELECT * FROM jobs WHERE state = 'COMPLETED' AND array_id IS NULL"
                            " AND workflow_id IS NULL ORDER BY seq LIMIT 1").fetchone())
    pending = dict(db.execute("SELECT * FROM jobs WHERE state = 'PENDING' LIMIT 1").fetchone())
    gate = dict(db.execute("SELECT * FROM jobs WHERE state = 'HELD' LIMIT 1").fetchone())
    arr = dict(db.execute("SELECT * FROM arrays LIMIT 1").fetchone())
    task = dict(db.execute("SELECT * FROM jobs WHERE array_id = ? AND state = 'COMPLETED' LIMIT 1",
                           (arr["id"],)).fetchone())
    wf = dict(db.execute("SELECT * FROM workflows LIMIT 1").fetchone())
    wjobs = [dict(r) for r in db.execute("SELECT * FROM jobs WHERE workflow_id = ? ORDER BY workflow_index", (wf["id"],))]
    ev = [dict(r) for r in db.execute("SELECT * FROM job_events WHERE job_id = ? ORDER BY n", (ended["id"],))]
    # the seed's array rows and tasks are replaced by the copies (the seed's array stays, held)
    seq = db.execute("SELECT max(seq) FROM (SELECT seq FROM jobs UNION ALL SELECT seq FROM arrays"
                     " UNION ALL SELECT seq FROM workflows)").fetchone()[0] + 1
    now = int(time.time() * 1000)
    t0 = now - 120 * 86400 * 1000  # four months ago
    dirs = []
    jrows, erows = [], []

    def job_row(tpl, created, owner, **kw):
        nonlocal seq
        r = dict(tpl)
        jid = new_id(rng)
        r.update(id=jid, seq=seq, owner_uid=owner, owner_gid=owner, created_ms=created, joined_ms=created)
        if tpl["started_ms"]:
            r.update(uid=2000000000 + seq % 60000, gid=2000000000 + seq % 60000, started_ms=created + 2000,
                     ended_ms=created + 2000 + rng.randrange(1, 3600 * 1000))
            if r["spec"]:
                r["spec"] = r["spec"].replace(tpl["id"], jid)
        r.update(kw)
        seq += 1
        jrows.append(tuple(r[c] for c in cols))
        dirs.append(jid)
        return jid

    def events(jid, created, n):
        names = ["submitted", "held", "released", "started", "restarted", "started", "restarted", "started",
                 "restarted", "started"]
        for i in range(1, n):
            erows.append((jid, i, created + i * 1000, names[i - 1] if i - 1 < len(names) else "started", None, ev[0]["detail"]))
        erows.append((jid, n, created + n * 1000, "ended", None, ev[-1]["detail"]))

    span = now - t0
    for i in range(a.jobs):
        created = t0 + span * i // a.jobs
        jid = job_row(ended, created, 1000 + i % a.users)
        events(jid, created, a.events)
    # arrays: each a copy of the seed's with its own made tasks (ended), held as the seed's
    arows = []
    for k in range(a.arrays):
        created = t0 + span * k // max(a.arrays, 1)
        aid = new_id(rng)
        r = dict(arr)
        r.update(id=aid, seq=seq, created_ms=created, joined_ms=created, made=a.made,
                 owner_uid=0, owner_gid=0)
        seq += 1
        arows.append(tuple(r[c] for c in acols))
        dirs.append(aid)
        for t in range(a.made):
            jid = job_row(task, created + t, 0, array_id=aid, array_task=t)
            events(jid, created + t, 3)
    # queued: half after the held gate, half in chains of 10 (each after the one before)
    prev = None
    for q in range(a.queued):
        after = gate["id"] if q % 2 == 0 or prev is None or q % 20 == 1 else prev
        req = json.loads(pending["request"])
        req["after"] = [{"job": after, "state": "any"}]
        created = now - (a.queued - q) * 1000
        jid = job_row(pending, created, 0, request=json.dumps(req, separators=(",", ":")), after_met=0)
        erows.append((jid, 1, created, "submitted", 0, "by uid 0"))
        erows.append((jid, 2, created, "pending", None, f"waits for {after}"))
        prev = jid if q % 2 == 1 else prev
    wrows = []
    for w in range(a.workflows):
        created = t0 + span * w // max(a.workflows, 1)
        wid = new_id(rng)
        r = dict(wf)
        r.update(id=wid, seq=seq, created_ms=created, started_ms=created + 10, ended_ms=created + 100)
        seq += 1
        wrows.append(tuple(r[c] for c in wcols))
        for tpl in wjobs:
            jid = job_row(tpl, created, 0, workflow_id=wid)
            events(jid, created, 3)
    db.executemany(f"INSERT INTO jobs ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})", jrows)
    db.executemany(f"INSERT INTO arrays ({','.join(acols)}) VALUES ({','.join('?' * len(acols))})", arows)
    db.executemany(f"INSERT INTO workflows ({','.join(wcols)}) VALUES ({','.join('?' * len(wcols))})", wrows)
    db.executemany("INSERT INTO job_events VALUES (?,?,?,?,?,?)", erows)
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    jobs_dir = os.path.join(os.path.dirname(path), "jobs")
    for jid in dirs:
        os.makedirs(os.path.join(jobs_dir, jid), mode=0o700, exist_ok=True)
    return len(jrows), len(erows)


# -- measuring ----------------------------------------------------------------------------------
def floor(path):
    """Python's sqlite3 reading every row joblet loads; the sqlite3 shell the same."""
    t = time.perf_counter()
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    n = 0
    for table in ("jobs", "arrays", "workflows"):
        for _ in db.execute(f"SELECT * FROM {table}"):
            n += 1
    ev = db.execute("SELECT count(*) FROM job_events").fetchone()[0]
    db.close()
    py = time.perf_counter() - t
    sh = None
    if shutil.which("sqlite3"):
        t = time.perf_counter()
        subprocess.run(["sqlite3", "-readonly", path, "SELECT * FROM jobs; SELECT * FROM arrays; SELECT * FROM workflows;"
                        " SELECT count(*) FROM job_events;"], stdout=subprocess.DEVNULL, check=True)
        sh = time.perf_counter() - t
    return py, sh, n, ev


def timed_request(sock, path):
    t = time.perf_counter()
    c = UnixHTTPConnection(sock, timeout=600)
    c.request("GET", path, headers={"Host": "joblet"})
    r = c.getresponse()
    body = r.read()
    c.close()
    return time.perf_counter() - t, body


def metric(text, name):
    m = re.search(rf"^{re.escape(name)}(?:{{[^}}]*}})? ([0-9.e+-]+)$", text, re.M)
    return float(m.group(1)) if m else None


def timed_list(build, d, *args):
    """`rnx job list`: its wall time, rnx's CPU (user+sys), joblet's CPU meanwhile, lines out."""
    r0, c0 = resource.getrusage(resource.RUSAGE_CHILDREN), d.cpu_s()
    t = time.perf_counter()
    out = rnx(build, d.sock, "job", "list", *args)
    wall = time.perf_counter() - t
    r1, c1 = resource.getrusage(resource.RUSAGE_CHILDREN), d.cpu_s()
    return wall, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime), c1 - c0, out.count("\n")


def measure(build, base, settle, tag, lists=0):
    d = Daemon(build, base, tag)
    out = {"build": tag}
    try:
        cpu0 = 0.0
        out["start_s"] = d.start()
        out["start_cpu_s"] = d.cpu_s() - cpu0
        out.update({k.lower() + "_mib": v / 1024 for k, v in d.rss_kib().items()})
        m = None
        for line in d.log_text().splitlines():
            if " start: " in line:
                m = line.split(" start: ", 1)[1]
        out["phases"] = m
        out["first_list_s"], out["first_list_rnx_cpu_s"], out["first_list_daemon_cpu_s"], n = timed_list(build, d)
        out["list_lines"] = n
        # then `rnx job list` again, --lists times: the figures of a listing once started (median)
        runs = sorted(timed_list(build, d) for _ in range(lists))
        if runs:
            out["list_s"], out["list_rnx_cpu_s"], out["list_daemon_cpu_s"], _ = runs[len(runs) // 2]
        out["list_json_s"], _, _, _ = timed_list(build, d, "--json")
        out["metrics_s"], body = timed_request(d.sock, "/metrics")
        out["metrics_bytes"] = len(body)
        out["metrics2_s"], _ = timed_request(d.sock, "/metrics")
        time.sleep(settle)
        _, body = timed_request(d.sock, "/metrics")
        text = body.decode(errors="replace")
        out["longest_turn_s"] = metric(text, "joblet_loop_longest_turn_seconds")
        out["idle_cpu_s"] = d.cpu_s() - out["start_cpu_s"]
        out.update({k.lower() + "_after_mib": v / 1024 for k, v in d.rss_kib().items()})
    finally:
        d.cleanup()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", action="append", help="a build directory (repeatable; default build)")
    ap.add_argument("--dir", help="the state's directory (default: a new one in /tmp)")
    ap.add_argument("--reuse", action="store_true", help="use the state already in --dir")
    ap.add_argument("--keep", action="store_true", help="leave --dir in place")
    ap.add_argument("--jobs", type=int, default=100000)
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--events", type=int, default=10)
    ap.add_argument("--arrays", type=int, default=20)
    ap.add_argument("--array-tasks", type=int, default=100000)
    ap.add_argument("--made", type=int, default=3000)
    ap.add_argument("--queued", type=int, default=1000)
    ap.add_argument("--workflows", type=int, default=500)
    ap.add_argument("--starts", type=int, default=2, help="starts per build, interleaved")
    ap.add_argument("--settle", type=float, default=10, help="seconds after start before the loop's longest turn is read")
    ap.add_argument("--lists", type=int, default=3, help="`rnx job list` after the first, per start (median shown)")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    builds = a.build or ["build"]
    if os.geteuid() != 0:
        sys.exit("start_bigdb.py: run as root (joblet needs it)")
    base = a.dir or tempfile.mkdtemp(prefix="joblet-bigdb-")
    os.makedirs(base, exist_ok=True)
    os.chmod(base, 0o755)
    path = os.path.join(base, "state", "joblet.db")
    try:
        if not a.reuse:
            t = time.perf_counter()
            seed(builds[-1], base, a.array_tasks)
            nj, ne = inflate(path, a)
            print(f"built {base}: {nj} job rows and {ne} events added in {time.perf_counter() - t:.1f} s;"
                  f" database {os.path.getsize(path) / 2**20:.0f} MiB")
        # the untimed start: the seed's daemon never saw the copies (a first start may migrate)
        results = []
        for r in range(a.starts):
            for b in (builds if r % 2 == 0 else builds[::-1]):
                py, sh, n, ev = floor(path)
                res = measure(b, base, a.settle, b, a.lists)
                res.update(floor_python_s=py, floor_sqlite3_s=sh, rows=n, events=ev)
                results.append(res)
                print(f"[{b}] start {res['start_s']:.3f} s (cpu {res['start_cpu_s']:.2f} s), VmRSS {res['vmrss_mib']:.1f} MiB"
                      f" (HWM {res['vmhwm_mib']:.1f}); first rnx job list {res['first_list_s']:.3f} s, --json"
                      f" {res['list_json_s']:.3f} s; GET /metrics {res['metrics_s'] * 1000:.1f} ms then"
                      f" {res['metrics2_s'] * 1000:.1f} ms ({res['metrics_bytes']} B); longest loop turn"
                      f" {res['longest_turn_s']} s; CPU after the start (the lists, then {a.settle:.0f} s idle) {res['idle_cpu_s']:.2f} s;"
                      f" VmRSS after {res['vmrss_after_mib']:.1f} MiB")
                if "list_s" in res:
                    print(f"    rnx job list ({res['list_lines']} lines): first {res['first_list_s']:.3f} s (rnx CPU"
                          f" {res['first_list_rnx_cpu_s']:.2f} s, joblet CPU {res['first_list_daemon_cpu_s']:.2f} s);"
                          f" then (median of {a.lists}) {res['list_s']:.3f} s (rnx CPU {res['list_rnx_cpu_s']:.2f} s,"
                          f" joblet CPU {res['list_daemon_cpu_s']:.2f} s)")
                print(f"    phases: {res['phases']}")
                print(f"    floor: {n} rows, {ev} events: python sqlite3 {py:.3f} s, sqlite3 shell "
                      + (f"{sh:.3f} s" if sh is not None else "(none)"))
                sys.stdout.flush()
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=1)
    finally:
        if not a.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
