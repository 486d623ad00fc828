"""A hostile local user against what joblet keeps on its state filesystem outside every budget
(the jobs' output has jobs.max_log_bytes_per_user, /work its image, volumes their shares).

The daemon runs as root; the user is a plain uid (setpriv), as in test_hostile_user.py."""
import os
import subprocess

from conftest import api_as, setpriv, wait_for

BOB = (4362, 4362)

# As many requests as asked, one connection each, from one process of the user's: the answers'
# codes counted.
_FLOOD = r"""
import http.client, socket, sys
class C(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(sys.argv[1])
codes = {}
for _ in range(int(sys.argv[3])):
    c = C("localhost", timeout=30)
    c.request("POST", sys.argv[2])
    r = c.getresponse()
    r.read()
    c.close()
    codes[r.status] = codes.get(r.status, 0) + 1
print(codes)
"""


def test_a_users_signals_do_not_grow_the_shims_log_without_bound(fresh_daemon):
    """Each signal bob sends his job appended a line to its shim.log (the shim's diagnostics, on
    the state filesystem, in no budget): 5,000 signals in 4 s made 324 KB, and nothing stopped it
    (a GB an hour from one client). Now such lines fill at most 32 KiB of it, a line says where
    they stopped, and the signals still arrive."""
    d = fresh_daemon()
    code, j = api_as(d, BOB, "POST", "/v1/jobs", {"command": "sh", "args": [
        "-c", "n=0; trap 'n=$((n+1)); echo $n > /work/heard' HUP; while :; do sleep 0.1; done"]})
    assert code == 201, j
    jid = j["id"]
    wait_for(lambda: api_as(d, BOB, "GET", f"/v1/jobs/{jid}")[1]["status"] == "RUNNING", "the job runs")
    p = subprocess.run([*setpriv(BOB), "/usr/bin/python3", "-c", _FLOOD, d.sock,
                        f"/v1/jobs/{jid}/kill?signal=HUP", "3000"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "200" in p.stdout, (p.stdout, p.stderr)
    log = os.path.join(d.state, "jobs", jid, "shim.log")
    size = os.path.getsize(log)
    assert size <= (32 << 10) + 200, f"shim.log holds {size} bytes after 3,000 signals"
    text = open(log).read()
    assert "sent SIGHUP" in text and "later ones are not kept" in text, text[-300:]
    heard = os.path.join(d.work(jid), "heard")
    wait_for(lambda: os.path.exists(heard) and int(open(heard).read() or 0) > 0, "the job heard the signals")
    assert api_as(d, BOB, "POST", f"/v1/jobs/{jid}/kill")[0] == 200
    d.wait(jid)


def test_a_work_image_whose_format_was_cut_short_does_not_lock_its_user_out(fresh_daemon):
    """Bob's first job makes his /work image: created, then formatted (mke2fs). The machine going
    down during the format (here: the daemon and mke2fs killed) left an image that never mounts
    under its name, and every later submission of bob's was refused (507, "mount ...: Invalid
    argument"). Now an image is formatted under another name and renamed once it is whole."""
    d = fresh_daemon(start=False)
    slow = os.path.join(d.dir, "slow-mke2fs")
    with open(slow, "w") as f:
        f.write("#!/bin/sh\necho $$ > %s/mke2fs.pid\nsleep 60\nexec /usr/sbin/mke2fs \"$@\"\n" % d.dir)
    os.chmod(slow, 0o755)
    with open(d.config, "a") as f:
        f.write(f"volumes:\n  mke2fs: {slow}\n")
    d.start()
    first = subprocess.Popen([*setpriv(BOB), os.path.join(os.environ["JOBLET_BUILD"], "rnx"), "job", "run", "true"],
                             env={"JOBLET_SOCKET": d.sock, "PATH": "/usr/bin:/bin"},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pidfile = os.path.join(d.dir, "mke2fs.pid")
    wait_for(lambda: os.path.exists(pidfile) and open(pidfile).read().strip(), "mke2fs started")
    d.kill9()
    os.kill(int(open(pidfile).read()), 9)
    first.wait(timeout=60)
    with open(d.config) as f:
        text = f.read()
    with open(d.config, "w") as f:
        f.write(text.replace(f"volumes:\n  mke2fs: {slow}\n", ""))
    d.start()
    code, j = api_as(d, BOB, "POST", "/v1/jobs", {"command": "true"})
    assert code == 201, j
    assert d.wait(j["id"])["status"] == "COMPLETED"
