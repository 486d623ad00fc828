"""array_copy_stall.py BUILD TAG [BUILD TAG ...] [--rounds N]: what one user's array of a 250 MB
upload costs every other request while its tasks are made. For each build in turn (rounds
alternate): a daemon of its own, `rnx job run --array=0-7 --upload=<250 MB> true`, and
GET /v1/version every 20 ms from another connection until the array ended; prints the requests
answered meanwhile, their median and worst latency. docs/performance.md, "An array's files"."""
import json, os, socket, subprocess, sys, time, http.client, tempfile


def one(build, tag):
    d = tempfile.mkdtemp(prefix=f"/tmp/stall-{tag}-")
    cfg = os.path.join(d, "c.yml")
    open(cfg, "w").write(f"cgroup:\n  root: joblet-stall{tag}\nlimits:\n  max_queued_per_user: 0\n  max_jobs_per_user: 0\njobs:\n  work_quota: 8GB\n")
    sock = os.path.join(d, "s.sock")
    p = subprocess.Popen([f"{build}/joblet", "--config", cfg, "--state-dir", os.path.join(d, "state"), "--socket", sock,
                          "--log-level", "info"], stdout=open(os.path.join(d, "log"), "w"), stderr=subprocess.STDOUT,
                         start_new_session=True)
    class C(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(sock)
    def get(path):
        c = C("x", timeout=60); c.request("GET", path); r = c.getresponse(); b = r.read(); c.close(); return json.loads(b)
    for _ in range(200):
        try: get("/v1/version"); break
        except OSError: time.sleep(0.05)
    big = os.path.join(d, "w.bin")
    with open(big, "wb") as f:
        for _ in range(250): f.write(os.urandom(1 << 20))
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": sock}
    out = subprocess.run([f"{build}/rnx", "job", "run", "--array=0-7", f"--upload={big}", "true"], env=env,
                         capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    lat = []
    t_end = time.time() + 300
    while time.time() < t_end:
        t = time.monotonic(); get("/v1/version"); lat.append(time.monotonic() - t)
        a = get(f"/v1/jobs/{out}")
        if a["status"] in ("COMPLETED", "FAILED", "CANCELED"): break
        time.sleep(0.02)
    lat.sort()
    print(f"{tag}: {len(lat)} requests while the array ran: worst {lat[-1]*1000:.0f} ms, p99 {lat[int(len(lat)*0.99)]*1000:.0f} ms, median {lat[len(lat)//2]*1000:.1f} ms; array {a['status']}")
    os.killpg(p.pid, 9); p.wait()
    subprocess.run(f"for m in $(mount | grep {d} | awk '{{print $3}}' | sort -r); do umount -l $m; done; "
                   f"losetup -a | grep {d} | cut -d: -f1 | xargs -r -n1 losetup -d; "
                   f"for c in $(find /sys/fs/cgroup/*/joblet-stall{tag} -depth -type d 2>/dev/null); do cat $c/cgroup.procs | xargs -r kill -9; rmdir $c; done; rm -rf {d}",
                   shell=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    rounds = 1
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    pairs = list(zip(args[0::2], args[1::2]))
    for _ in range(rounds):
        for b, t in pairs:
            one(b, t)
