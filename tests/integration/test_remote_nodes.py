"""rnx against real joblet nodes over TLS (docs/remote.md, docs/cli.md "Remote nodes"): two
daemons on this machine (their own ports, state and PKI made by joblet cert), one rnx config with
both, `--node` choosing; the guide's GPU line on the simulated GPU node; uploads and log
following over TLS; a node whose certificate does not name the address dialed is refused."""
import hashlib
import json
import os
import signal
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import BUILD, Daemon, Keepers, need_root
from console_util import Console
from test_remote import Users, free_port

pytestmark = pytest.mark.skipif(not shutil.which("useradd"), reason="needs useradd")
FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
JOBLET = os.path.join(BUILD, "joblet")


def cert(*args):
    p = subprocess.run([JOBLET, "cert", *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p


class Node:
    def __init__(self, name, user, sans, extra=""):
        self.name = name
        self.port = free_port()
        self.d = Daemon(f"remote:\n  listen: [\"127.0.0.1:{self.port}\"]\n  pki_dir: PKI\n{extra}")
        self.pki = os.path.join(self.d.dir, "pki")
        with open(self.d.config) as f:
            text = f.read().replace("pki_dir: PKI", f"pki_dir: {self.pki}")
        with open(self.d.config, "w") as f:
            f.write(text)
        cert("init", "--dir", self.pki)
        cert("server", "--dir", self.pki, "--name", name, "--san", sans)

    def client(self, user, role, address):
        cert("client", "--dir", self.pki, "--user", user, "--role", role, "--address", address, "--force")
        return os.path.join(self.pki, f"{user}.rnx.yml")


@pytest.fixture(scope="module")
def two():
    need_root()
    users = Users()
    user = "jn" + uuid.uuid4().hex[:6]
    uid = users.add(user)
    a = Node("node-a", user, "localhost,127.0.0.1", f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n")
    b = Node("node-b", user, "localhost")      # names no IP: dialing 127.0.0.1 must be refused
    cfgdir = os.path.join(a.d.dir, "rnx")
    os.makedirs(cfgdir, mode=0o700)
    # no JOBLET_SOCKET: it would take precedence over the default node (docs/cli.md)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RNX_CONFIG": os.path.join(cfgdir, "nodes.yml")}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    keepers = Keepers(a.d.dir)
    env = keepers.env(env)

    def rnx(*args, check=False, input=None):
        p = subprocess.run([os.path.join(BUILD, "rnx"), *args], capture_output=True, text=True, env=env,
                           timeout=180, input=input)
        if check and p.returncode != 0:
            raise AssertionError(f"rnx {' '.join(args)}: {p.returncode}\n{p.stdout}\n{p.stderr}")
        return p

    try:
        a.d.start()
        b.d.start()
        rnx("node", "add", "a", a.client(user, "developer", f"127.0.0.1:{a.port}"), check=True)
        rnx("node", "add", "b", b.client(user, "developer", f"localhost:{b.port}"), check=True)
        yield {"a": a, "b": b, "rnx": rnx, "uid": uid, "user": user, "dir": cfgdir, "env": env, "keepers": keepers}
    finally:
        try:
            keepers.end()
        finally:
            a.d.cleanup()
        b.d.cleanup()
        users.remove()


def test_the_guides_gpu_line_runs_on_a_remote_simulated_node(two):
    rnx = two["rnx"]
    cpu = min(800, 100 * os.cpu_count())   # the guide's 800 on a machine of 8 CPUs or more
    p = rnx("--node", "a", "job", "run", "--gpu=2", "--gpu-memory=8GB", "--max-memory=16384", f"--max-cpu={cpu}",
            "--follow", "sh", "-c", "echo CVD=$CUDA_VISIBLE_DEVICES SIM=$JOBLET_GPUS_SIMULATED; id -u")
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["CVD=0,1", "SIM=1", str(two["uid"])], p.stdout
    # it is node a's job, owned by the person's account; node b never saw it
    jobs_a = json.loads(rnx("--node", "a", "--json", "job", "list", check=True).stdout)
    assert [j["owner_uid"] for j in jobs_a] == [two["uid"]] and jobs_a[0]["gpus"], jobs_a
    assert json.loads(rnx("--node", "b", "--json", "job", "list", check=True).stdout) == []


def test_each_node_by_name_and_by_default(two):
    rnx = two["rnx"]
    out = rnx("--node", "b", "job", "run", "--follow", "hostname", check=True).stdout
    assert out.startswith("job-"), out
    rnx("node", "use", "b", check=True)
    try:
        listing = rnx("node", "list", check=True).stdout
        assert "* b" in listing or "b *" in listing or "*b" in listing.replace(" ", ""), listing
        assert len(json.loads(rnx("--json", "job", "list", check=True).stdout)) >= 1
    finally:
        rnx("node", "use", "local", check=True)


def test_uploads_and_following_over_tls(two, tmp_path):
    rnx = two["rnx"]
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(24 << 20))
    want = hashlib.sha256(data.read_bytes()).hexdigest()
    p = rnx("--node", "a", "job", "run", f"--upload={data}", "--follow", "sha256sum", "data.bin")
    assert p.returncode == 0, p.stderr
    assert p.stdout.split()[0] == want, p.stdout
    # a job's output followed to its end, over TLS
    p = rnx("--node", "a", "job", "run", "--follow", "sh", "-c", "for i in 1 2 3; do echo line $i; sleep 0.2; done")
    assert p.stdout.splitlines() == ["line 1", "line 2", "line 3"], p.stdout + p.stderr


def test_a_node_whose_certificate_does_not_name_the_address_is_refused(two):
    rnx = two["rnx"]
    b = two["b"]
    # node b's certificate names localhost, not 127.0.0.1: the same node dialed by IP is refused
    path = b.client(two["user"], "developer", f"127.0.0.1:{b.port}")
    rnx("node", "add", "b-by-ip", path, check=True)
    p = rnx("--node", "b-by-ip", "job", "list")
    assert p.returncode != 0
    assert "does not name 127.0.0.1" in p.stderr and "refusing" in p.stderr, p.stderr
    # and node a's certificate (another CA) cannot stand in for node b: an entry with a's CA
    # dialing b's port fails on the CA
    with open(path) as f:
        text = f.read()
    with open(os.path.join(two["a"].pki, "ca.pem")) as f:
        a_ca = f.read()
    head, _, rest = text.partition("ca: |\n")
    body = rest.split("\ncert: |", 1)[1]
    forged = head + "ca: |\n" + "".join("  " + l + "\n" for l in a_ca.strip().splitlines()) + "cert: |" + body
    forged = forged.replace(f"127.0.0.1:{b.port}", f"localhost:{b.port}")
    fp = os.path.join(two["dir"], "forged.rnx.yml")
    with open(fp, "w") as f:
        f.write(forged)
    os.chmod(fp, 0o600)
    rnx("node", "add", "b-wrong-ca", fp, check=True)
    p = rnx("--node", "b-wrong-ca", "job", "list")
    assert p.returncode != 0 and "refusing" in p.stderr, p.stderr


def test_console_through_a_real_node(two):
    """rnx console --node a: the console's page and its API calls come from node a over TLS, as
    the node's person (whoami names their account)."""
    con = Console(None, args=["--node", "a"], env=two["env"])
    try:
        con.sign_in()
        r, body = con.request("GET", "/v1/whoami", headers=con.auth(), timeout=30)
        assert r.status == 200, body
        me = json.loads(body)
        assert me["uid"] == two["uid"] and me["role"] == "developer", me
        r, body = con.request("GET", "/v1/gpus", headers=con.auth(), timeout=30)
        assert r.status == 200 and len(json.loads(body)["gpus"]) == 8, body[:200]
        r, body = con.request("GET", "/", headers={"Cookie": con.jar}, timeout=30)
        assert r.status == 200 and b"<html" in body.lower()
    finally:
        con.stop()


# ---- rnx's keeper of a node's connections (src/cli/conn_agent.h) ------------------------------

def keeper_conns(pid, port):
    """The local ports of pid's established TCP connections to 127.0.0.1:port."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    out = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            cols = line.split()
            local, remote, state, inode = cols[1], cols[2], cols[3], cols[9]
            if inode in inodes and state == "01" and int(remote.split(":")[1], 16) == port:
                out.add(int(local.split(":")[1], 16))
    return out


def wait_for(what, fn, timeout=20):
    for _ in range(int(timeout / 0.05)):
        v = fn()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_keeper_carries_commands_on_the_same_tls_connections(two):
    rnx, a, keepers = two["rnx"], two["a"], two["keepers"]
    rnx("node", "disconnect", "--all", check=True)
    assert rnx("--node", "a", "job", "list").returncode == 0
    pids = list(keepers.pids().values())
    assert len(pids) == 1, pids
    pid = pids[0]
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        assert f.read().split(b"\0")[:4] == [b"rnx", b"node", b"keep", b"a"]   # what ps shows
    assert f"by rnx (pid {pid})" in rnx("node", "show", "a", check=True).stdout
    show = json.loads(rnx("--json", "node", "show", "a", check=True).stdout)
    assert show["keeper"] == {"pid": pid, "persist_s": 600}, show
    # it keeps two or more ready; then commands, one at a time, take one and give it back: the
    # node sees no new connection (no handshake) for any of them
    wait_for("two idle connections", lambda: len(keeper_conns(pid, a.port)) >= 2)
    time.sleep(1)
    before = keeper_conns(pid, a.port)
    assert 2 <= len(before) <= 4, before
    for _ in range(8):
        assert rnx("--node", "a", "job", "list").returncode == 0
    for i in range(3):
        p = rnx("--node", "a", "job", "run", "--follow", "sh", "-c", f"echo kept-{i}; exit {i}")
        assert p.returncode == i and p.stdout.strip().endswith(f"kept-{i}"), (p.returncode, p.stdout, p.stderr)
    assert keeper_conns(pid, a.port) == before
    assert list(keepers.pids().values()) == [pid]
    # rnx node disconnect ends it
    out = rnx("node", "disconnect", "a", check=True).stdout
    assert f"its keeper (pid {pid}) has ended" in out, out
    wait_for("the keeper to end", lambda: not os.path.exists(f"/proc/{pid}") or
             open(f"/proc/{pid}/stat").read().split()[2] == "Z")
    assert "no keeper now" in rnx("node", "show", "a", check=True).stdout


def test_the_keeper_hands_out_no_connection_the_node_may_be_closing(two):
    """A node closes a connection idle for its server.idle_timeout_s (30 s by default); the keeper
    kept idle ones for 60 s, and a command sent on one the node was closing that moment got no
    answer (a sanitizer run's rnx job exec: "lost the connection to node reader (no answer)"). The
    keeper now reads the node's time (GET /v1/version's idle_timeout_s, with each spare) and hands
    out none idle for more than two thirds of it: with 3 s, one idle 2.3 s is closed, not used."""
    rnx = two["rnx"]
    c = Node("node-c", two["user"], "localhost,127.0.0.1", "server:\n  idle_timeout_s: 3\n")
    try:
        c.d.start()
        rnx("node", "add", "c", c.client(two["user"], "developer", f"127.0.0.1:{c.port}"), check=True)
        assert rnx("--node", "c", "job", "list").returncode == 0
        pids = [pid for pid in two["keepers"].pids().values() if open(f"/proc/{pid}/cmdline", "rb").read()
                .split(b"\0")[:4] == [b"rnx", b"node", b"keep", b"c"]]
        assert len(pids) == 1, pids
        wait_for("two idle connections", lambda: len(keeper_conns(pids[0], c.port)) >= 2)
        # a command at once takes one of them (the node sees no new connection)
        before = keeper_conns(pids[0], c.port)
        assert rnx("--node", "c", "job", "list").returncode == 0
        assert keeper_conns(pids[0], c.port) == before
        # idle 2.3 s: past two thirds of the node's 3 s, before its close; none of them is used
        before = keeper_conns(pids[0], c.port)
        time.sleep(2.3)
        assert rnx("--node", "c", "job", "list").returncode == 0
        after = keeper_conns(pids[0], c.port)
        assert before - after, f"the keeper used a connection idle 2.3 s of the node's 3: {before} then {after}"
    finally:
        rnx("node", "disconnect", "c")
        rnx("node", "remove", "c")
        c.d.cleanup()


def test_the_keeper_leaves_after_its_time_and_can_be_turned_off(two):
    rnx, keepers = two["rnx"], two["keepers"]
    rnx("node", "disconnect", "--all", check=True)
    p = subprocess.run([os.path.join(BUILD, "rnx"), "--node", "a", "job", "list"], capture_output=True, text=True,
                       env=dict(two["env"], RNX_PERSIST="2"), timeout=120)
    assert p.returncode == 0, p.stderr
    pids = keepers.pids()
    assert len(pids) == 1, pids
    pid = list(pids.values())[0]
    wait_for("the keeper to leave after 2 s idle", lambda: not keepers.pids(), timeout=30)
    wait_for("its process to end", lambda: not os.path.exists(f"/proc/{pid}") or
             open(f"/proc/{pid}/stat").read().split()[2] == "Z")
    # off: no keeper, the command dials the node itself
    p = subprocess.run([os.path.join(BUILD, "rnx"), "--node", "a", "job", "list"], capture_output=True, text=True,
                       env=dict(two["env"], RNX_PERSIST="0"), timeout=120)
    assert p.returncode == 0 and not keepers.pids(), p.stderr
    p = subprocess.run([os.path.join(BUILD, "rnx"), "--node", "a", "job", "list"], capture_output=True, text=True,
                       env=dict(two["env"], RNX_PERSIST="soon"), timeout=120)
    assert p.returncode == 2 and "RNX_PERSIST: 'soon'" in p.stderr and "0 or off" in p.stderr, p.stderr


def test_the_keepers_directory_is_the_users_alone(two, tmp_path):
    rnx, keepers = two["rnx"], two["keepers"]
    assert rnx("--node", "a", "job", "list").returncode == 0
    sock = list(keepers.pids())[0]
    d = os.path.dirname(sock)
    assert os.stat(d).st_mode & 0o777 == 0o700
    # another account cannot reach it
    probe = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\n"
             f"try:\n  s.connect({sock!r}); print('reached')\nexcept OSError as e:\n  print(e.errno)\n")
    p = subprocess.run(["python3", "-c", probe], capture_output=True, text=True, timeout=60,
                       preexec_fn=lambda: (os.setgid(two["uid"]), os.setuid(two["uid"])))
    assert p.stdout.strip() == "13", (p.stdout, p.stderr)   # EACCES
    # a runtime directory others may enter is not used: the command dials the node itself
    shared = tmp_path / "shared"
    (shared / "rnx").mkdir(parents=True)
    os.chmod(shared / "rnx", 0o777)
    p = subprocess.run([os.path.join(BUILD, "rnx"), "--node", "a", "job", "list"], capture_output=True, text=True,
                       env=dict(two["env"], XDG_RUNTIME_DIR=str(shared)), timeout=120)
    assert p.returncode == 0, p.stderr
    assert os.listdir(shared / "rnx") == []


def test_a_keeper_whose_certificate_is_revoked_stops_dialing(two):
    """docs/remote.md, "Rotation and revocation", typed: revoke a person, reload, and their rnx
    is refused at its next command. Before, their keeper went on making its spare connections
    every second for its whole persist (10 minutes): two refused TLS handshakes a second, each a
    `refused` audit record, after one command. Now a refused spare stops the spares until a
    command gets through again."""
    a, env = two["a"], two["env"]
    users = Users()
    person = "jk" + uuid.uuid4().hex[:6]
    users.add(person)
    try:
        p = subprocess.run([os.path.join(BUILD, "rnx"), "node", "add", "revk",
                            a.client(person, "developer", f"127.0.0.1:{a.port}")],
                           capture_output=True, text=True, env=env, timeout=60)
        assert p.returncode == 0, p.stderr

        def rnx_r(*args):
            return subprocess.run([os.path.join(BUILD, "rnx"), "--node", "revk", *args], capture_output=True,
                                  text=True, env=env, timeout=120)

        assert rnx_r("job", "list").returncode == 0
        serial = subprocess.run(["openssl", "x509", "-noout", "-serial", "-in", os.path.join(a.pki, f"{person}.pem")],
                                capture_output=True, text=True, check=True).stdout.split("=")[1].strip().lower()
        reloads = a.d.log().count("remote: certificates read again")
        cert("revoke", "--dir", a.pki, person)
        a.d.proc.send_signal(signal.SIGHUP)
        wait_for("the reload", lambda: a.d.log().count("remote: certificates read again") > reloads)

        def refusals():
            st, body = a.d.api("GET", "/v1/audit?limit=500")
            assert st == 200, body
            return [r for r in body["records"] if r["action"] == "refused" and serial in (r["detail"] or "")]

        p = rnx_r("job", "list")
        assert p.returncode == 1 and "is revoked" in p.stderr, p.stderr
        time.sleep(1)
        first = len(refusals())
        time.sleep(4)
        seen = refusals()
        # the spares the reload's closing replaced, the command and the spares it started (at
        # most 2 each), then nothing: not two more a second
        assert 1 <= len(seen) <= 5 and len(seen) == first, (first, [r["detail"] for r in seen])
    finally:
        subprocess.run([os.path.join(BUILD, "rnx"), "node", "disconnect", "revk"], capture_output=True, env=env,
                       timeout=60)
        subprocess.run([os.path.join(BUILD, "rnx"), "node", "remove", "revk"], capture_output=True, env=env,
                       timeout=60)
        users.remove()
