#!/usr/bin/env python3
"""What a jobs.keep_ended_s pass costs the loop when many jobs are kept ahead of those due.

Builds a state directory (as bench/start_bigdb.py does: a real daemon's rows copied with sqlite3):

  --ahead 50000        jobs kept that retention may not delete yet, first by seq: --kind held
                       (HELD, waiting) or ended (ended a moment ago: not due under --keep)
  --due 5000           ended jobs due (ended a day ago), after them

Then, per --build, a copy of it is started with jobs.keep_ended_s: --keep and this prints the time
from the daemon's "start:" line to its "N jobs deleted" line (the first pass: --due / 48 turns),
joblet_loop_longest_turn_seconds, the turns over 10 ms and the turns' time in all then, and the daemon's CPU
from exec to that line. --log-level debug adds the jobs each turn looked at (a build whose
retention logs them; debug also makes the daemon check its indexes against scans, at a cost).

  sudo python3 bench/retention_pass.py --build /tmp/old/build --build build

Standard library only; needs root. Removes its daemons, cgroups and directory.
"""

import argparse
import os
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
from start_bigdb import Daemon as BigDaemon, rnx, timed_request  # noqa: E402
from throughput import UnixHTTPConnection, request  # noqa: E402


class Daemon(BigDaemon):
    def __init__(self, build, base, name, keep=0, level="info"):
        super().__init__(build, base, name)
        self.level = level
        if keep:
            with open(self.config, "a") as f:
                f.write(f"jobs:\n  keep_ended_s: {keep}\n")

    def start(self):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen([os.path.join(self.build, "joblet"), "--config", self.config,
                                      "--state-dir", self.state, "--socket", self.sock, "--log-level", self.level],
                                     stdout=log, stderr=log, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        log.close()
        t0 = time.time()
        while time.time() - t0 < 600:
            if self.proc.poll() is not None:
                raise RuntimeError("joblet exited at start:\n" + self.log_text()[-3000:])
            try:
                c = UnixHTTPConnection(self.sock, timeout=600)
                st, _ = request(c, "GET", "/v1/version")
                c.close()
                if st == 200:
                    return
            except OSError:
                pass
            time.sleep(0.01)
        raise RuntimeError("joblet did not answer within 600 s")


def build_state(build, base, a):
    d = Daemon(build, base, "seed")
    try:
        d.start()
        held = rnx(build, d.sock, "job", "run", "--hold", "sleep", "3600").strip()
        rnx(build, d.sock, "job", "run", "--follow", "/bin/true")
    finally:
        d.cleanup()
    db = sqlite3.connect(os.path.join(d.state, "joblet.db"))
    db.row_factory = sqlite3.Row
    cols = [r[1] for r in db.execute("PRAGMA table_info(jobs)")]
    done = dict(db.execute("SELECT * FROM jobs WHERE state = 'COMPLETED' LIMIT 1").fetchone())
    held = dict(db.execute("SELECT * FROM jobs WHERE id = ?", (held,)).fetchone())
    seq = db.execute("SELECT max(seq) FROM jobs").fetchone()[0] + 1
    now = int(time.time() * 1000)
    rows, dirs = [], []
    for tpl, n, ended in ((held if a.kind == "held" else done, a.ahead, now), (done, a.due, now - 86400 * 1000)):
        for _ in range(n):
            r = dict(tpl, id=str(uuid.uuid4()), seq=seq)
            if r["ended_ms"]:
                r.update(created_ms=ended - 2000, joined_ms=ended - 2000, started_ms=ended - 1000, ended_ms=ended)
            seq += 1
            rows.append(tuple(r[c] for c in cols))
            dirs.append(r["id"])
    db.executemany(f"INSERT INTO jobs ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})", rows)
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    for jid in dirs:
        os.makedirs(os.path.join(d.state, "jobs", jid), mode=0o700, exist_ok=True)
    return d.state


def ts(line):
    m = re.match(r"(\d+-\d+-\d+T\d+:\d+:)(\d+\.\d+)Z", line)
    return time.mktime(time.strptime(m.group(1) + "00", "%Y-%m-%dT%H:%M:%S")) + float(m.group(2))


def measure(build, base, pristine, a, tag):
    run = os.path.join(base, "run")
    shutil.rmtree(run, ignore_errors=True)
    os.makedirs(run)
    subprocess.run(["cp", "-a", pristine, os.path.join(run, "state")], check=True)
    d = Daemon(build, run, tag, keep=a.keep, level=a.log_level)
    try:
        d.start()
        want = f"jobs.keep_ended_s: {a.due} jobs deleted"
        t0 = time.time()
        while want not in d.log_text():
            if time.time() - t0 > 1800:
                raise RuntimeError("the due jobs were not deleted within 30 min")
            time.sleep(0.05)
        cpu = d.cpu_s()
        text = timed_request(d.sock, "/metrics")[1].decode(errors="replace")
        log = d.log_text().splitlines()
        start = next(ts(l) for l in log if " start: " in l)
        end = next(ts(l) for l in log if want in l)
        longest = re.search(r"^joblet_loop_longest_turn_seconds (\S+)$", text, re.M)
        b10 = re.search(r'^joblet_loop_turn_duration_seconds_bucket\{le="0.01"\} (\S+)$', text, re.M)
        cnt = re.search(r"^joblet_loop_turn_duration_seconds_count (\S+)$", text, re.M)
        busy = re.search(r"^joblet_loop_turn_duration_seconds_sum (\S+)$", text, re.M)
        looks = [int(x) for x in re.findall(r"a turn looked at (\d+) jobs", "\n".join(log))]
        print(f"[{tag}] the pass: {end - start:.3f} s from the start's line to the last delete's; "
              f"longest loop turn {longest.group(1) if longest else '?'} s; turns over 10 ms "
              f"{int(float(cnt.group(1)) - float(b10.group(1))) if cnt and b10 else '?'} of "
              f"{cnt.group(1) if cnt else '?'}, {float(busy.group(1)) if busy else 0:.3f} s in all; daemon CPU from exec {cpu:.2f} s"
              + (f"; {len(looks)} turns looked at {sum(looks)} jobs (at most {max(looks)} a turn)" if looks else ""))
        sys.stdout.flush()
    finally:
        d.cleanup()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", action="append")
    ap.add_argument("--ahead", type=int, default=50000)
    ap.add_argument("--due", type=int, default=5000)
    ap.add_argument("--kind", choices=["held", "ended"], default="ended")
    ap.add_argument("--keep", type=int, default=3600)
    ap.add_argument("--runs", type=int, default=1, help="starts per build, interleaved")
    ap.add_argument("--log-level", default="info")
    a = ap.parse_args()
    builds = a.build or ["build"]
    if os.geteuid() != 0:
        sys.exit("retention_pass.py: run as root (joblet needs it)")
    base = tempfile.mkdtemp(prefix="joblet-retention-")
    os.chmod(base, 0o755)
    try:
        t = time.time()
        pristine = build_state(builds[-1], base, a)
        print(f"state: {a.ahead} jobs kept ({a.kind}) ahead of {a.due} due, built in {time.time() - t:.1f} s")
        for r in range(a.runs):
            for b in (builds if r % 2 == 0 else builds[::-1]):
                measure(b, base, pristine, a, b)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    main()
