"""Job networks through the real daemon, rnx and kernel (docs/networks.md; issue 31).

Traffic goes only to this machine: loopback, the jobs' own namespaces, and an "outside" that the
test makes itself (a network namespace with a small HTTP server, joined to the host by a veth pair
of the test's own, on a /30 that no route of the host's touches: this very VM's own LAN is
192.0.2.0/24). Everything made here is removed at the end: the test's namespace and links, and the
table and links joblet made (joblet-net down)."""
import ipaddress
import json
import os
import re
import socket
import subprocess
import threading
import time
import uuid

import pytest

from conftest import BUILD, Daemon, need_root, wait_for

# Networks of the tests' own, away from the built-in defaults (checked free at the start)
CONFIG = "network:\n  bridge_cidr: 10.227.0.0/24\n  isolated_cidr: 10.226.0.0/24\n"

ECHO_SERVER = r"""
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(16)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    d = c.recv(4096)
    c.sendall(b"echo:" + d)
    c.close()
"""

# connect to HOST:PORT, send a word, print the answer; exit 3 when the connection fails
CLIENT = r"""
import socket, sys, time
host, port, tries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(tries):
    try:
        c = socket.create_connection((host, port), timeout=2)
        c.sendall(b"hello")
        print(c.recv(4096).decode(), flush=True)
        sys.exit(0)
    except OSError as e:
        err = e
        time.sleep(0.3)
print("failed:", err, flush=True)
sys.exit(3)
"""


def host_routes():
    out = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True).stdout
    nets = []
    for line in out.splitlines():
        word = line.split()[0] if line.split() else ""
        if word in ("local", "broadcast", "unreachable", "blackhole", "prohibit", "throw"):
            word = line.split()[1]
        if word == "default":
            continue
        try:
            nets.append(ipaddress.ip_network(word, strict=False))
        except ValueError:
            pass
    return nets


def free_net(candidates):
    """The first candidate network no route of the host's overlaps; skip when none is free."""
    routes = host_routes()
    for c in candidates:
        n = ipaddress.ip_network(c)
        if not any(n.overlaps(r) for r in routes):
            return n
    pytest.skip(f"every candidate network overlaps a route of this host: {candidates}")


def links():
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return {m.group(1).split("@")[0] for m in re.finditer(r"^\d+: ([^:]+):", out, re.M)}


def joblet_links():
    return {name for name in links() if name.startswith("jb-") or name.startswith("jv")}


@pytest.fixture(scope="module")
def net_daemon():
    need_root()
    if not os.access(os.path.join(BUILD, "joblet-net"), os.X_OK):
        pytest.skip("joblet-net is not built")
    if subprocess.run(["nft", "--version"], capture_output=True).returncode != 0:
        pytest.skip("nft (Debian's nftables) is not installed: job networks need it")
    before = joblet_links()
    assert not before, f"joblet links exist before the test (another joblet's?): {before}"
    for c in ("10.226.0.0/24", "10.227.0.0/24", "10.231.0.0/24", "10.232.0.0/24"):
        if free_net([c]) is None:
            pytest.skip(f"{c} is used by this host")
    d = Daemon(CONFIG).start()
    yield d
    d.cleanup()
    subprocess.run([os.path.join(BUILD, "joblet-net"), "down"], capture_output=True)
    left = joblet_links()
    assert not left, f"links left: {left}"


def rnx_ok(d, *args):
    p = d.rnx(*args)
    assert p.returncode == 0, f"rnx {args}: {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p.stdout


def network(d, name):
    nets = json.loads(rnx_ok(d, "--json", "network", "list"))["networks"]
    return next(n for n in nets if n["name"] == name)


def wait_output(d, jid, text, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if text in d.output(jid):
            return
        job = d.job(jid)
        assert job["status"] in ("QUEUED", "SCHEDULED", "RUNNING"), (job, d.output(jid, "stderr"))
        time.sleep(0.05)
    raise AssertionError(f"{jid} never printed {text!r}: {d.output(jid)} {d.output(jid, 'stderr')}")


def test_named_networks_by_name_and_apart(net_daemon):
    d = net_daemon
    rnx_ok(d, "network", "create", "nta", "--cidr=10.231.0.0/24")
    rnx_ok(d, "network", "create", "ntb", "--cidr=10.232.0.0/24")
    # refusals that name what is wrong
    p = d.rnx("network", "create", "ntc", "--cidr=10.231.0.128/25")
    assert p.returncode != 0 and "overlaps network nta" in p.stderr, p.stderr
    p = d.rnx("network", "create", "ntc", "--cidr=10.240.0.1/24")
    assert p.returncode != 0 and "did you mean 10.240.0.0/24" in p.stderr, p.stderr
    srv = d.submit("python3", "-c", ECHO_SERVER, "7000", name="srv", network="nta")
    wait_output(d, srv, "listening")
    a = network(d, "nta")
    assert a["jobs_count"] == 1 and a["jobs"][0]["id"] == srv
    addr = a["jobs"][0]["address"]
    assert addr.startswith("10.231.0."), a
    job, out, err = d.run("python3", "-c", CLIENT, "srv", "7000", "5", network="nta")
    assert job["status"] == "COMPLETED", (job, out, err)
    assert out.strip() == "echo:hello"
    # by id too
    job, out, err = d.run("python3", "-c", CLIENT, srv, "7000", "5", network="nta")
    assert job["status"] == "COMPLETED", (job, out, err)
    # from the other network: its address does not answer, its name is not known there
    job, out, err = d.run("python3", "-c", CLIENT, addr, "7000", "2", network="ntb")
    assert job["exit_code"] == 3, (job, out, err)
    job, out, err = d.run("python3", "-c", CLIENT, "srv", "7000", "1", network="ntb")
    assert job["exit_code"] == 3, (job, out, err)
    # the job's view: its own eth0, the hosts file with the server, no host interface
    job, out, err = d.run("sh", "-c", "cat /etc/hosts; ls /sys/class/net", network="nta")
    assert job["status"] == "COMPLETED", (job, out, err)
    assert re.search(rf"^{re.escape(addr)}\s.*\bsrv\b.*{srv}", out, re.M), out
    assert sorted(out.split("\n# ")[0].split()[-2:]) or True
    ifaces = set(out.strip().splitlines()[-3:])
    assert "eth0" in out and "lo" in out
    host_ifaces = {n for n in os.listdir("/sys/class/net") if n not in ("lo",)}
    assert not (ifaces & host_ifaces - {"eth0", "lo"}), ifaces
    # in use: refused; once the server is gone: removed
    p = d.rnx("network", "remove", "nta")
    assert p.returncode != 0 and "in use" in p.stderr, p.stderr
    assert d.rnx("job", "stop", srv).returncode == 0
    d.wait(srv)
    # an array whose tasks are not made yet names it too: its tasks would join whatever network
    # had that name when they are made (another user's, made after this one was removed)
    held = rnx_ok(d, "job", "run", "--array=0-3", "--hold", "--network=nta", "/bin/true").strip().split()[-1]
    p = d.rnx("network", "remove", "nta")
    assert p.returncode != 0 and "named by 1 job array with tasks still to make" in p.stderr, p.stderr
    rnx_ok(d, "job", "cancel", held)
    rnx_ok(d, "network", "remove", "nta")
    rnx_ok(d, "network", "remove", "ntb")
    assert not any(n.startswith("jb-nta") or n.startswith("jb-ntb") for n in links())


class Outside:
    """A namespace of the test's own with an HTTP server: what an isolated job's NAT reaches."""

    def __init__(self):
        tag = uuid.uuid4().hex[:6]
        self.ns, self.host_if, self.peer = f"jlt-out-{tag}", f"jlto{tag}", f"jltp{tag}"
        net = free_net(["198.18.231.0/30", "198.19.231.0/30", "100.127.231.0/30", "172.31.231.0/30"])
        self.host_addr, self.addr = str(net[1]), str(net[2])
        run = lambda *a: subprocess.run(a, check=True, capture_output=True)  # noqa: E731
        run("ip", "netns", "add", self.ns)
        run("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.peer)
        run("ip", "link", "set", self.peer, "netns", self.ns)
        run("ip", "addr", "add", f"{self.host_addr}/30", "dev", self.host_if)
        run("ip", "link", "set", self.host_if, "up")
        run("ip", "-n", self.ns, "addr", "add", f"{self.addr}/30", "dev", self.peer)
        run("ip", "-n", self.ns, "link", "set", self.peer, "up")
        run("ip", "-n", self.ns, "link", "set", "lo", "up")
        self.server = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, "python3", "-c",
             "import http.server as h\n"
             "class H(h.BaseHTTPRequestHandler):\n"
             "    def do_GET(self):\n"
             "        b = ('outside saw ' + self.client_address[0]).encode()\n"
             "        self.send_response(200); self.end_headers(); self.wfile.write(b)\n"
             "    def log_message(self, *a): pass\n"
             f"h.HTTPServer(('{self.addr}', 8080), H).serve_forever()\n"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: subprocess.run(["ip", "netns", "exec", self.ns, "ss", "-Hltn", "sport = :8080"],
                                        capture_output=True, text=True).stdout.strip(),
                 "the outside's HTTP server to listen")

    def close(self):
        self.server.kill()
        self.server.wait()
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)


class HostService:
    """A TCP server of the test's on the host, on every address (0.0.0.0): a host service jobs
    on networks must not reach (through their gateway, or any other address of the host's)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("0.0.0.0", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
                c.sendall(b"host service")
                c.close()
            except OSError:
                pass

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()


GET = ("import urllib.request, sys\n"
       "try:\n"
       "    print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())\n"
       "except Exception as e:\n"
       "    print('failed:', e); sys.exit(3)\n")


def test_isolated_reaches_only_the_outside(net_daemon):
    d = net_daemon
    out_ns = Outside()
    host = HostService()  # on every address of the host's: the job must not reach it
    port = host.port
    try:
        job, out, err = d.run("python3", "-c", GET, f"http://{out_ns.addr}:8080/", network="isolated")
        assert job["status"] == "COMPLETED", (job, out, err)
        # NAT: the outside sees the host's address on its link, not the job's
        assert out.strip() == f"outside saw {out_ns.host_addr}", out
        # the host's own service: neither through its gateway nor the host's other address
        other = d.submit("python3", "-c", ECHO_SERVER, "7001", network="isolated")
        wait_output(d, other, "listening")
        other_addr = network(d, "isolated")["jobs"][0]["address"]
        gw = other_addr.rsplit(".", 1)[0] + "." + str(int(other_addr.rsplit(".", 1)[1]) - 1)
        for target in (gw, out_ns.host_addr, "127.0.0.1"):
            job, out, err = d.run("python3", "-c", CLIENT, target, str(port), "1", network="isolated")
            assert job["exit_code"] == 3, (target, job, out, err)
        # another isolated job
        job, out, err = d.run("python3", "-c", CLIENT, other_addr, "7001", "2", network="isolated")
        assert job["exit_code"] == 3, (job, out, err)
        assert d.rnx("job", "stop", other).returncode == 0
        d.wait(other)
    finally:
        host.close()
        out_ns.close()


def ruleset():
    """joblet's table as nft prints it (rules are per network: a job adds none)."""
    return subprocess.run(["nft", "list", "table", "inet", "joblet"], capture_output=True, text=True).stdout


def test_fifty_isolated_jobs_get_distinct_addresses(net_daemon):
    d = net_daemon
    d.run("true", network="isolated")  # the table made, if no test before made it
    rules = ruleset()
    assert "masquerade" in rules, rules
    ids = [d.submit("sh", "-c", "/usr/sbin/ip -4 -o addr show dev eth0; sleep 1", network="isolated")
           for _ in range(50)]
    addrs = []
    for jid in ids:
        job = d.wait(jid, timeout=120)
        assert job["status"] == "COMPLETED", (job, d.output(jid, "stderr"))
        m = re.search(r"inet (\d+\.\d+\.\d+\.\d+)/31", d.output(jid))
        assert m, d.output(jid)
        addrs.append(m.group(1))
    assert len(set(addrs)) == 50, sorted(addrs)
    # nothing left: addresses back, veths gone with their namespaces
    assert network(d, "isolated")["jobs_count"] == 0
    deadline = time.time() + 20
    while time.time() < deadline and any(n.startswith("jv") for n in links()):
        time.sleep(0.2)
    assert not any(n.startswith("jv") for n in links()), links()
    assert ruleset() == rules
    # nor an address of theirs on the host
    out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    assert not any(a in out for a in addrs), out


# a client that talks to HOST:PORT every 0.2 s for SECONDS and fails on the first miss
STEADY = r"""
import socket, sys, time
host, port, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
end, n = time.time() + secs, 0
while time.time() < end:
    c = socket.create_connection((host, port), timeout=3)
    c.sendall(b"x%d" % n)
    assert c.recv(100) == b"echo:x%d" % n
    c.close()
    n += 1
    time.sleep(0.2)
print("talked", n, flush=True)
"""


def test_kill9_jobs_keep_talking_and_restart_reconciles(net_daemon):
    """kill -9 of the daemon with jobs on three networks: they keep talking; the restarted daemon
    keeps their addresses, removes a veth leaked by hand, and frees all once they end."""
    d = net_daemon
    rnx_ok(d, "network", "create", "ntk", "--cidr=10.233.0.0/24")
    pairs = []
    for net, port in (("ntk", 7100), ("bridge", 7101)):
        srv = d.submit("python3", "-c", ECHO_SERVER, str(port), name=f"srv-{net}", network=net)
        wait_output(d, srv, "listening")
        cli = d.submit("python3", "-c", STEADY, f"srv-{net}", str(port), "8", network=net)
        pairs.append((net, srv, cli))
    iso = d.submit("python3", "-c", ECHO_SERVER, "7102", network="isolated")
    wait_output(d, iso, "listening")
    before = {n["name"]: sorted(j["address"] for j in n["jobs"])
              for n in json.loads(rnx_ok(d, "--json", "network", "list"))["networks"]}
    veths = {n for n in links() if n.startswith("jv")}
    assert len(veths) == 5, veths
    d.kill9()
    # a veth of no job's, as a crash between its making and its job's start could leave
    subprocess.run(["ip", "link", "add", "jvdeadbeef0001", "type", "veth", "peer", "name", "jvdeadbeef0002"],
                   check=True)
    time.sleep(1)
    d.start()
    after = {n["name"]: sorted(j["address"] for j in n["jobs"])
             for n in json.loads(rnx_ok(d, "--json", "network", "list"))["networks"]}
    assert after == before
    left = {n for n in links() if n.startswith("jv")}
    assert "jvdeadbeef0001" not in left and "jvdeadbeef0002" not in left, left
    assert veths <= left, (veths, left)
    for net, srv, cli in pairs:
        job = d.wait(cli, timeout=60)
        assert job["status"] == "COMPLETED", (net, job, d.output(cli), d.output(cli, "stderr"))
        assert d.output(cli).startswith("talked"), d.output(cli)
        assert d.rnx("job", "stop", srv).returncode == 0
        d.wait(srv)
    # a new job does not get an address still held by a job that runs
    job, out, err = d.run("sh", "-c", "/usr/sbin/ip -4 -o addr show dev eth0", network="isolated")
    m = re.search(r"inet (\S+)/31", out)
    assert m and m.group(1) not in before["isolated"], (out, before)
    assert d.rnx("job", "stop", iso).returncode == 0
    d.wait(iso)
    rnx_ok(d, "network", "remove", "ntk")
    nets = json.loads(rnx_ok(d, "--json", "network", "list"))["networks"]
    assert all(n["jobs_count"] == 0 for n in nets), nets


def test_workflow_jobs_reach_each_other_by_name(net_daemon, tmp_path):
    d = net_daemon
    rnx_ok(d, "network", "create", "ntw", "--cidr=10.234.0.0/24")
    flow = tmp_path / "pair.yaml"
    flow.write_text(
        "jobs:\n"
        "  server:\n"
        "    command: python3\n"
        f"    args: ['-c', {json.dumps(ECHO_SERVER)}, '7200']\n"
        "    network: ntw\n"
        "  client:\n"
        "    command: python3\n"
        f"    args: ['-c', {json.dumps(CLIENT)}, server, '7200', '30']\n"
        "    network: ntw\n")
    p = d.rnx("workflow", "run", str(flow))
    assert p.returncode == 0, p.stderr
    wf = re.search(r"\b([0-9a-f]{8})", p.stdout).group(1)
    deadline = time.time() + 90
    while time.time() < deadline:
        st = json.loads(rnx_ok(d, "--json", "workflow", "status", wf))
        jobs = {j["name"]: j for j in st["jobs"]}
        if jobs["client"]["status"] in ("COMPLETED", "FAILED", "STOPPED"):
            break
        time.sleep(0.2)
    client = jobs["client"]
    assert client["status"] == "COMPLETED", (st, d.output(client["job_id"]), d.output(client["job_id"], "stderr"))
    assert d.output(client["job_id"]).strip() == "echo:hello"
    assert d.rnx("job", "stop", jobs["server"]["job_id"]).returncode == 0
    d.wait(jobs["server"]["job_id"])
    rnx_ok(d, "network", "remove", "ntw")


def network_names(d):
    return {n["name"] for n in json.loads(rnx_ok(d, "--json", "network", "list"))["networks"]}


def test_workflow_declares_its_network(net_daemon, tmp_path):
    """A job's network: {name, cidr} makes the network when missing (validate makes nothing);
    the workflow's jobs reach each other on it by name; it outlives the workflow; one that exists
    with other addresses refuses the workflow before any job is made."""
    d = net_daemon
    for c in ("10.236.0.0/24", "10.237.0.0/24", "10.238.0.0/24"):
        free_net([c])
    flow = tmp_path / "declares.yaml"
    flow.write_text(
        "jobs:\n"
        "  server:\n"
        "    command: python3\n"
        f"    args: ['-c', {json.dumps(ECHO_SERVER)}, '7300']\n"
        "    network: {name: ntwf, cidr: 10.236.0.0/24}\n"
        "  client:\n"
        "    command: python3\n"
        f"    args: ['-c', {json.dumps(CLIENT)}, server, '7300', '30']\n"
        "    network: ntwf\n")
    server = None
    try:
        # a dry run checks it all and makes nothing
        jobs_before = d.job_count()
        p = d.rnx("workflow", "validate", str(flow))
        assert p.returncode == 0, (p.stdout, p.stderr)
        assert "ntwf" not in network_names(d)
        assert not any(n.startswith("jb-ntwf") for n in links())
        assert d.job_count() == jobs_before
        p = d.rnx("workflow", "run", str(flow))
        assert p.returncode == 0, (p.stdout, p.stderr)
        wf = re.search(r"\b([0-9a-f]{8})", p.stdout).group(1)
        net = network(d, "ntwf")
        assert net["cidr"] == "10.236.0.0/24", net
        st = json.loads(rnx_ok(d, "--json", "workflow", "status", wf))
        jobs = {j["name"]: j for j in st["jobs"]}
        server = jobs["server"]["job_id"]
        client = d.wait(jobs["client"]["job_id"], timeout=120)
        assert client["status"] == "COMPLETED", (client, d.output(client["id"]), d.output(client["id"], "stderr"))
        assert d.output(client["id"]).strip() == "echo:hello"
        assert d.rnx("job", "stop", server).returncode == 0
        d.wait(server)
        server = None
        # the network outlives the workflow; running the file again finds it as asked and uses it
        assert "ntwf" in network_names(d)
        p = d.rnx("workflow", "validate", str(flow))
        assert p.returncode == 0, (p.stdout, p.stderr)
        # one that exists with other addresses: refused naming it, at the file's line; no job made
        rnx_ok(d, "network", "create", "ntwx", "--cidr=10.237.0.0/24")
        other = tmp_path / "other.yaml"
        other.write_text("jobs:\n"
                         "  a:\n"
                         "    command: 'true'\n"
                         "    network: {name: ntwx, cidr: 10.238.0.0/24}\n")
        jobs_before = d.job_count()
        for verb in ("validate", "run"):
            p = d.rnx("workflow", verb, str(other))
            assert p.returncode != 0, (verb, p.stdout, p.stderr)
            assert "other.yaml:4:33:" in p.stderr and "network ntwx exists with cidr 10.237.0.0/24, not 10.238.0.0/24" \
                in p.stderr, (verb, p.stderr)
        assert d.job_count() == jobs_before
        assert network(d, "ntwx")["cidr"] == "10.237.0.0/24"
        # a declared network over another's addresses: refused naming the field, nothing made
        other.write_text("jobs:\n"
                         "  a:\n"
                         "    command: 'true'\n"
                         "    network: {name: ntwy, cidr: 10.237.0.0/25}\n")
        p = d.rnx("workflow", "run", str(other))
        assert p.returncode != 0 and "network 'ntwy': cidr: 10.237.0.0/25 overlaps network ntwx" in p.stderr, \
            p.stderr
        assert "ntwy" not in network_names(d) and d.job_count() == jobs_before
    finally:
        if server:
            d.rnx("job", "stop", server)
            d.wait(server)
        for name in ("ntwf", "ntwx", "ntwy"):   # made here, or not: removing those that are
            d.rnx("network", "remove", name)
    assert not {"ntwf", "ntwx", "ntwy"} & network_names(d)
    assert not any(n.startswith("jb-ntw") for n in links())


def test_names_on_the_shared_bridge_are_scoped_to_their_owner(net_daemon):
    """On bridge, which every user's jobs share, each owner's jobs see a hosts file of their
    owner's jobs only (docs/networks.md, Names): a name both users give a job stands, for each
    user's jobs, for that user's own; another user's jobs, their names, hostnames and ids, are not
    there at all. Names that would pass for something else (localhost, a job's hostname, an id)
    are still not listed; hostnames and ids are."""
    from test_users import UID, as_user  # uid 4321 through setpriv
    d = net_daemon
    mine = d.submit("sleep", "60", name="shared", network="bridge")
    d.wait_status(mine, "RUNNING")
    victim = d.submit("sleep", "60", name="solo", network="bridge")
    d.wait_status(victim, "RUNNING")
    p = as_user(d, "job", "run", "--network=bridge", "--name=shared", "sleep", "60")
    assert p.returncode == 0, p.stderr
    theirs = p.stdout.split()[-1]
    p = as_user(d, "job", "run", "--network=bridge", "--name=theirsonly", "sleep", "60")
    assert p.returncode == 0, p.stderr
    theirs_only = p.stdout.split()[-1]
    spoof = [d.submit("sleep", "60", name=n, network="bridge") for n in ("localhost", f"job-{victim[:8]}", victim)]
    try:
        for j in (theirs, theirs_only, *spoof):
            d.wait_status(j, "RUNNING")
        addr = {j["id"]: j["address"] for j in network(d, "bridge")["jobs"]}

        def hosts_of(lines):
            return [l.split() for l in lines.splitlines() if l and not l.startswith("#")]
        job, out, err = d.run("cat", "/etc/hosts", network="bridge")
        assert job["status"] == "COMPLETED", (job, err)
        lines = hosts_of(out)
        names = [w for l in lines for w in l[1:]]
        assert [l[0] for l in lines if "shared" in l[1:]] == [addr[mine]], out  # root's own
        assert names.count("solo") == 1, out
        assert names.count("localhost") == 2, out    # 127.0.0.1 and ::1 only
        assert names.count(f"job-{victim[:8]}") == 1, out
        assert names.count(victim) == 1, out
        for j in (mine, victim, *spoof):
            assert f"job-{j[:8]}" in names and j in names, (j, out)
        for j in (theirs, theirs_only):  # uid 4321's: not by id, hostname, name or address
            assert j not in out and f"job-{j[:8]}" not in out and addr[j] + "\t" not in out, (j, out)
        assert "theirsonly" not in names, out

        # uid 4321's job: its own shared and theirsonly; none of root's jobs
        p = as_user(d, "job", "run", "--follow", "--network=bridge", "cat", "/etc/hosts")
        assert p.returncode == 0, p.stderr
        lines = hosts_of(p.stdout)
        names = [w for l in lines for w in l[1:]]
        assert [l[0] for l in lines if "shared" in l[1:]] == [addr[theirs]], p.stdout
        assert [l[0] for l in lines if "theirsonly" in l[1:]] == [addr[theirs_only]], p.stdout
        for j in (mine, victim, *spoof):
            assert j not in p.stdout and f"job-{j[:8]}" not in p.stdout, (j, p.stdout)
        assert "solo" not in names, p.stdout
        # each owner's file, and no other (bridge.hosts, every user's, is gone)
        owners = os.path.join(d.state, "networks", "bridge.owners")
        assert {"0.hosts", f"{UID}.hosts"} <= set(os.listdir(owners)), os.listdir(owners)
        assert not os.path.exists(os.path.join(d.state, "networks", "bridge.hosts"))
    finally:
        for j in (mine, victim, *spoof):
            d.rnx("job", "stop", j)
        for j in (theirs, theirs_only):
            as_user(d, "job", "stop", j)
        for j in (mine, victim, theirs, theirs_only, *spoof):
            d.wait(j)
    # an owner's file lists none of their jobs once their last job on bridge ended
    left = [l for l in open(os.path.join(owners, f"{UID}.hosts")).read().splitlines()
            if l and not l.startswith("#") and "localhost" not in l]
    assert left == [], left


def test_a_network_is_neither_made_nor_removed_while_another_process_locks_the_database(net_daemon):
    """While another process holds joblet's database write lock (a backup), a network's creation
    and its removal are refused as a job's submission is: 503 "nothing was created/deleted: try
    again" with Retry-After, which rnx asks again (before: 500 "internal", which rnx and
    scripts take as final). The refused network is not there; the one whose removal was refused
    is there, whole; each goes through once the lock is gone."""
    from conftest import DbLock
    d = net_daemon
    taken = [ipaddress.ip_network(n["cidr"]) for n in json.loads(rnx_ok(d, "--json", "network", "list"))["networks"]]
    cidr = next(c for c in ("10.231.0.0/24", "10.232.0.0/24")
                if not any(ipaddress.ip_network(c).overlaps(t) for t in taken))
    name = "lk" + uuid.uuid4().hex[:6]

    lock = DbLock(d.state)
    try:
        status, retry, ans = d.api_retry_after("POST", "/v1/networks", {"name": name, "cidr": cidr})
        assert status == 503 and retry == "1" and "nothing was created" in ans["error"]["message"], ans
    finally:
        lock.release()
    assert d.api("GET", f"/v1/networks/{name}")[0] == 404
    rnx_ok(d, "network", "create", name, f"--cidr={cidr}")
    lock = DbLock(d.state)
    try:
        status, retry, ans = d.api_retry_after("DELETE", f"/v1/networks/{name}")
        assert status == 503 and retry == "1" and "nothing was deleted" in ans["error"]["message"], ans
    finally:
        lock.release()
    assert network(d, name)["cidr"] == cidr
    rnx_ok(d, "network", "remove", name)
    assert d.api("GET", f"/v1/networks/{name}")[0] == 404


def test_requeue_of_an_ended_job_whose_network_was_made_again_is_refused(net_daemon):
    """An ended job requeued runs on the network it was submitted for: one removed and made again
    under its name since is another (as at its launch, which refused it only then: the requeue
    answered 200 and the job then failed to start); 409 at the requeue, the job left as it was.
    Its network still there: taken."""
    d = net_daemon
    taken = [ipaddress.ip_network(n["cidr"]) for n in json.loads(rnx_ok(d, "--json", "network", "list"))["networks"]]
    cidr = next(c for c in ("10.231.0.0/24", "10.232.0.0/24")
                if not any(ipaddress.ip_network(c).overlaps(t) for t in taken))
    name = "rq" + uuid.uuid4().hex[:6]
    rnx_ok(d, "network", "create", name, f"--cidr={cidr}")
    try:
        jid = rnx_ok(d, "job", "run", f"--network={name}", "true").strip().split()[-1]
        assert d.wait(jid)["status"] == "COMPLETED"
        code, ans = d.api("POST", f"/v1/jobs/{jid}/requeue?hold=1")   # the same network: taken
        assert code == 200 and d.job(jid)["status"] == "HELD", ans
        d.api("POST", f"/v1/jobs/{jid}/cancel")
        rnx_ok(d, "network", "remove", name)
        rnx_ok(d, "network", "create", name, f"--cidr={cidr}")
        code, ans = d.api("POST", f"/v1/jobs/{jid}/requeue")
        assert code == 409 and "was removed and made again since the job was submitted" in ans["error"]["message"], ans
        assert d.job(jid)["status"] == "CANCELED"
    finally:
        rnx_ok(d, "network", "remove", name)
