"""joblet-net driven directly (no daemon): bridges, veth pairs, addresses, routes and the
nftables table inet joblet, checked by real TCP traffic between network namespaces.

Everything happens inside a network namespace made for each test that plays the host: its
links, its table inet joblet and its ip_forward are its own, so the machine's real network,
firewall and sysctls are never touched, and deleting that namespace at the end takes every link
and rule made in it along. The jobs' namespaces are made by the test (ip netns add, or an
`unshare --net` process for the /proc/PID/ns/net form), and so is an "outside" namespace joined
to the host by a veth pair of the test's own on 192.0.2.0/30 (TEST-NET-1), which stands for
the world beyond NAT. Traffic goes only between these namespaces.
"""
import json
import os
import secrets
import subprocess

import pytest

from conftest import BUILD, need_root

NET = os.path.join(BUILD, "joblet-net")

SERVER = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(16)
print("ready", flush=True)
while True:
    c, a = s.accept()
    c.sendall(("peer %s\n" % a[0]).encode())
    c.close()
"""

CLIENT = r"""
import socket, sys
try:
    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)
    print(c.recv(100).decode().strip())
except OSError as e:
    print("fail", type(e).__name__)
"""


def sh(*args, check=True, **kw):
    return subprocess.run(list(args), check=check, capture_output=True, text=True, **kw)


class Lab:
    """One test's namespaces, processes and the host namespace joblet-net runs in."""

    def __init__(self):
        self.tag = secrets.token_hex(3)
        self.netns = []      # names made with ip netns add, deleted at the end
        self.procs = []      # processes started, killed (by PID) and reaped at the end
        self.fds = []        # namespace fds held open, closed at the end
        self.host = self.add_netns("host")
        self.host_path = "/run/netns/" + self.host
        sh("ip", "netns", "exec", self.host, "ip", "link", "set", "lo", "up")

    def add_netns(self, role):
        name = "joblet-it-%s-%s" % (self.tag, role)
        sh("ip", "netns", "add", name)
        self.netns.append(name)
        return name

    def job_ns(self, role):
        return "/run/netns/" + self.add_netns(role)

    def unshared_ns(self):
        """A namespace held by an `unshare --net` process: the /proc/PID/ns/net form."""
        p = subprocess.Popen(["unshare", "--net", "sleep", "600"])
        self.procs.append(p)
        path = "/proc/%d/ns/net" % p.pid
        # the process has its own namespace once unshare has exec'd sleep
        for _ in range(1000):
            if os.readlink(path) != os.readlink("/proc/self/ns/net"):
                return path
            subprocess.run(["sleep", "0.01"])
        raise AssertionError("unshare --net did not make a namespace")

    def fd_ns(self, role):
        """A namespace named by an open fd of this process: the /proc/PID/fd/N form."""
        fd = os.open(self.job_ns(role), os.O_RDONLY)
        self.fds.append(fd)
        return "/proc/%d/fd/%d" % (os.getpid(), fd)

    def in_ns(self, path, *args, check=True, **kw):
        return sh("nsenter", "--net=" + path, *args, check=check, **kw)

    def host_run(self, *args, check=True, **kw):
        return self.in_ns(self.host_path, *args, check=check, **kw)

    def net(self, *args, stdin=None, check=True):
        return self.host_run(NET, *args, input=stdin, check=check)

    def apply(self, req, check=True):
        r = self.net("apply", stdin=json.dumps(req), check=check)
        return json.loads(r.stdout) if check else r

    def up(self, ns, host_if, addr, gw, bridge=None, host_addr=None, extra=(), check=True):
        args = ["job-up", "--netns", ns, "--host-if", host_if, "--addr", addr, "--gateway", gw]
        args += ["--bridge", bridge] if bridge else ["--host-addr", host_addr]
        return self.net(*args, *extra, check=check)

    def server(self, ns, bind, port):
        p = subprocess.Popen(["nsenter", "--net=" + ns, "python3", "-c", SERVER, bind, str(port)],
                             stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        assert p.stdout.readline().strip() == "ready"
        return p

    def connect(self, ns, addr, port):
        """'peer A.B.C.D' as the server saw it, or 'fail ...'."""
        return self.in_ns(ns, "python3", "-c", CLIENT, addr, str(port)).stdout.strip()

    def outside(self):
        """A namespace beyond the host: host side 192.0.2.1/30 (link itout0, not a joblet
        name), inside 192.0.2.2/30; returns its path."""
        path = self.job_ns("out")
        self.host_run("ip", "link", "add", "itout0", "type", "veth", "peer", "name", "eth0",
                      "netns", path)
        self.host_run("ip", "addr", "add", "192.0.2.1/30", "dev", "itout0")
        self.host_run("ip", "link", "set", "itout0", "up")
        self.in_ns(path, "ip", "addr", "add", "192.0.2.2/30", "dev", "eth0")
        self.in_ns(path, "ip", "link", "set", "eth0", "up")
        self.in_ns(path, "ip", "link", "set", "lo", "up")
        return path

    def links(self):
        return {l["ifname"]: l for l in
                json.loads(self.host_run("ip", "-j", "-d", "link", "show").stdout)}

    def close(self):
        for fd in self.fds:
            os.close(fd)
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            if p.stdout:
                p.stdout.close()
        for name in reversed(self.netns):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


@pytest.fixture
def lab(request):
    need_root()
    if not os.path.exists(NET):
        pytest.fail("no %s: build first" % NET)
    lab = Lab()
    request.addfinalizer(lab.close)
    return lab


TWO_NETS = {
    "networks": [
        {"name": "a", "bridge": "jb-ita", "cidr": "10.217.0.0/16", "gateway": "10.217.0.1"},
        {"name": "b", "bridge": "jb-itb", "cidr": "10.218.0.0/24", "gateway": "10.218.0.1"},
    ],
    "isolated_cidr": None, "keep_veths": [], "prune_veths": False,
}


def test_bridge_networks(lab):
    out = lab.apply(TWO_NETS)
    assert sorted(out["created"]) == ["jb-ita", "jb-itb"] and out["removed"] == []
    a1, a2, b1 = lab.job_ns("a1"), lab.unshared_ns(), lab.job_ns("b1")
    lab.up(a1, "jvita1", "10.217.0.2/16", "10.217.0.1", bridge="jb-ita")
    lab.up(a2, "jvita2", "10.217.0.3/16", "10.217.0.1", bridge="jb-ita")
    lab.up(b1, "jvitb1", "10.218.0.2/24", "10.218.0.1", bridge="jb-itb")

    # each job's eth0: its address, up, and the default route via its gateway
    for ns, addr, prefix, gw in [(a1, "10.217.0.2", 16, "10.217.0.1"), (a2, "10.217.0.3", 16, "10.217.0.1"),
                                 (b1, "10.218.0.2", 24, "10.218.0.1")]:
        eth0 = json.loads(lab.in_ns(ns, "ip", "-j", "addr", "show", "eth0").stdout)[0]
        assert "UP" in eth0["flags"]
        v4 = [(a["local"], a["prefixlen"]) for a in eth0["addr_info"] if a["family"] == "inet"]
        assert v4 == [(addr, prefix)]
        routes = json.loads(lab.in_ns(ns, "ip", "-j", "route", "show", "default").stdout)
        assert [(r["gateway"], r["dev"]) for r in routes] == [(gw, "eth0")]
        lo = json.loads(lab.in_ns(ns, "ip", "-j", "link", "show", "lo").stdout)[0]
        assert "UP" in lo["flags"]

    links = lab.links()
    assert links["jvita1"]["master"] == "jb-ita" and links["jvitb1"]["master"] == "jb-itb"
    assert links["jb-ita"]["linkinfo"]["info_kind"] == "bridge"
    br = json.loads(lab.host_run("ip", "-j", "addr", "show", "jb-itb").stdout)[0]
    assert [(a["local"], a["prefixlen"]) for a in br["addr_info"] if a["family"] == "inet"] == [("10.218.0.1", 24)]

    lab.server(a1, "0.0.0.0", 7001)
    lab.server(b1, "0.0.0.0", 7002)
    # A to A over the bridge
    assert lab.connect(a2, "10.217.0.2", 7001) == "peer 10.217.0.3"
    # B's server is up (the host reaches it), but A does not
    assert lab.connect(lab.host_path, "10.218.0.2", 7002).startswith("peer ")
    assert lab.connect(a1, "10.218.0.2", 7002).startswith("fail")
    assert lab.connect(b1, "10.217.0.2", 7001).startswith("fail")
    # out through NAT: the outside sees the host's address, not the job's
    out_ns = lab.outside()
    lab.server(out_ns, "192.0.2.2", 7003)
    assert lab.connect(a1, "192.0.2.2", 7003) == "peer 192.0.2.1"
    assert lab.connect(b1, "192.0.2.2", 7003) == "peer 192.0.2.1"
    # and none of them reaches the host's own services, the gateway included
    lab.server(lab.host_path, "0.0.0.0", 7004)
    assert lab.connect(lab.host_path, "10.217.0.1", 7004).startswith("peer ")
    assert lab.connect(a1, "10.217.0.1", 7004).startswith("fail")
    assert lab.connect(b1, "192.0.2.1", 7004).startswith("fail")

    table = json.loads(lab.host_run("nft", "-j", "list", "table", "inet", "joblet").stdout)["nftables"]
    chains = {c["chain"]["name"]: c["chain"] for c in table if "chain" in c}
    assert set(chains) == {"forward", "input", "output", "postrouting"}
    assert (chains["forward"]["hook"], chains["input"]["hook"], chains["output"]["hook"],
            chains["postrouting"]["type"]) == ("forward", "input", "output", "nat")
    rules = [r["rule"] for r in table if "rule" in r]
    nat = [json.dumps(r["expr"]) for r in rules if r["chain"] == "postrouting"]
    assert len(nat) == 2 and '"10.217.0.0"' in nat[0] and '"10.218.0.0"' in nat[1]
    assert all("masquerade" in n for n in nat)
    assert lab.host_run("cat", "/proc/sys/net/ipv4/ip_forward").stdout.strip() == "1"

    # apply again, without b: its bridge goes, a's stays as it was
    out = lab.apply({**TWO_NETS, "networks": TWO_NETS["networks"][:1]})
    assert out == {"created": [], "removed": ["jb-itb"]}
    assert "jb-itb" not in lab.links() and "jb-ita" in lab.links()
    assert lab.connect(a2, "10.217.0.2", 7001) == "peer 10.217.0.3"


def test_isolated(lab):
    lab.apply({**TWO_NETS, "isolated_cidr": "10.216.0.0/16"})
    i1, i2 = lab.job_ns("i1"), lab.fd_ns("i2")
    lab.up(i1, "jviti1", "10.216.0.1/31", "10.216.0.0", host_addr="10.216.0.0/31")
    lab.up(i2, "jviti2", "10.216.0.3/31", "10.216.0.2", host_addr="10.216.0.2/31")
    routes = json.loads(lab.in_ns(i1, "ip", "-j", "route", "show", "default").stdout)
    assert [(r["gateway"], r["dev"]) for r in routes] == [("10.216.0.0", "eth0")]

    lab.server(i2, "0.0.0.0", 7101)
    lab.server(lab.host_path, "0.0.0.0", 7102)
    out_ns = lab.outside()
    lab.server(out_ns, "192.0.2.2", 7103)

    # the servers are up: the host reaches them
    assert lab.connect(lab.host_path, "10.216.0.3", 7101).startswith("peer ")
    assert lab.connect(lab.host_path, "10.216.0.0", 7102).startswith("peer ")
    # a job reaches neither the other job nor the host (its own host side, nor another address)
    assert lab.connect(i1, "10.216.0.3", 7101).startswith("fail")
    assert lab.connect(i1, "10.216.0.0", 7102).startswith("fail")
    assert lab.connect(i1, "10.216.0.2", 7102).startswith("fail")
    assert lab.connect(i1, "192.0.2.1", 7102).startswith("fail")
    # but it reaches the outside, through NAT
    assert lab.connect(i1, "192.0.2.2", 7103) == "peer 192.0.2.1"
    assert lab.connect(i2, "192.0.2.2", 7103) == "peer 192.0.2.1"

    # isolated and bridge jobs do not reach each other either way
    a = lab.job_ns("a")
    lab.up(a, "jvita", "10.217.0.2/16", "10.217.0.1", bridge="jb-ita")
    lab.server(a, "0.0.0.0", 7104)
    assert lab.connect(lab.host_path, "10.217.0.2", 7104).startswith("peer ")
    assert lab.connect(i1, "10.217.0.2", 7104).startswith("fail")
    assert lab.connect(a, "10.216.0.3", 7101).startswith("fail")
    assert lab.connect(a, "192.0.2.2", 7103) == "peer 192.0.2.1"


def test_concurrent_job_ups_and_applies(lab):
    """Jobs start while apply runs (the daemon applies when a network is made or removed):
    apply's link and address dumps are interrupted by the links coming and going, and asked
    again; every command succeeds and every pair is complete."""
    lab.apply(TWO_NETS)
    nss = [lab.job_ns("c%d" % i) for i in range(24)]
    names = ["jvitc%d" % i for i in range(24)]
    procs = []
    for i, (ns, name) in enumerate(zip(nss, names)):
        args = ["job-up", "--netns", ns, "--host-if", name, "--addr", "10.217.3.%d/16" % (i + 2),
                "--gateway", "10.217.0.1", "--bridge", "jb-ita"]
        procs.append(subprocess.Popen(["nsenter", "--net=" + lab.host_path, NET, *args],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        if i % 4 == 0:
            procs.append(subprocess.Popen(["nsenter", "--net=" + lab.host_path, NET, "apply"],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
            procs[-1].stdin.write(json.dumps(TWO_NETS))
            procs[-1].stdin.close()
    results = [(p.args, p.wait(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [r for r in results if r[1] != 0] == []
    links = lab.links()
    for ns, name in zip(nss, names):
        assert links[name]["master"] == "jb-ita"
        eth0 = json.loads(lab.in_ns(ns, "ip", "-j", "addr", "show", "eth0").stdout)[0]
        assert "UP" in eth0["flags"]


def test_apply_while_links_churn(lab):
    """With 600 links, a link dump takes several reads, and links made and deleted meanwhile
    (as jobs start and end) make the kernel mark it interrupted: apply asks again on a fresh
    socket. Every apply succeeds."""
    batch = "".join("link add itd%d type veth peer name itd%dp\n" % (i, i) for i in range(300))
    lab.host_run("ip", "-batch", "-", input=batch)
    churn = subprocess.Popen(["nsenter", "--net=" + lab.host_path, "sh", "-c",
                              "while true; do ip link add itchurn type veth peer name itchurnp; "
                              "ip link del itchurn; done"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(20):
            out = lab.apply({**TWO_NETS, "prune_veths": True})
            assert out["removed"] == []
    finally:
        os.killpg(churn.pid, 9)
        churn.wait()
    links = lab.links()
    assert "jb-ita" in links and "itd299" in links


def test_a_bridge_name_taken_by_another_kind_of_link_is_refused(lab):
    """A link of the bridge's name that is not a bridge (a veth here) is refused, named with its
    kind, and left as it was: no address of the network's is put on it, nothing is made."""
    lab.host_run("ip", "link", "add", "jb-ita", "type", "veth", "peer", "name", "itvethp")
    r = lab.apply(TWO_NETS, check=False)
    assert r.returncode != 0
    assert "the link jb-ita exists and is a veth, not a bridge" in r.stderr, r.stderr
    links = lab.links()
    assert links["jb-ita"]["linkinfo"]["info_kind"] == "veth"
    addrs = json.loads(lab.host_run("ip", "-j", "addr", "show", "jb-ita").stdout)[0]["addr_info"]
    assert [a for a in addrs if a["family"] == "inet"] == []


def test_prune(lab):
    lab.apply(TWO_NETS)
    live = lab.job_ns("live")
    lab.up(live, "jvitlive", "10.217.0.9/16", "10.217.0.1", bridge="jb-ita")
    lab.host_run("ip", "link", "add", "jvitleak", "type", "veth", "peer", "name", "itleakp")
    lab.host_run("ip", "link", "add", "itother", "type", "veth", "peer", "name", "itotherp")
    lab.host_run("ip", "link", "add", "jb-itold", "type", "bridge")

    # without prune_veths the leak stays; the bridge of no listed network goes
    out = lab.apply({**TWO_NETS, "keep_veths": ["jvitlive"]})
    assert out == {"created": [], "removed": ["jb-itold"]}
    assert "jvitleak" in lab.links()

    out = lab.apply({**TWO_NETS, "keep_veths": ["jvitlive"], "prune_veths": True})
    assert out == {"created": [], "removed": ["jvitleak"]}
    links = lab.links()
    assert "jvitleak" not in links and "itleakp" not in links
    assert "jvitlive" in links and links["jvitlive"]["master"] == "jb-ita"
    assert "itother" in links and "itotherp" in links


def test_down(lab):
    lab.apply({**TWO_NETS, "isolated_cidr": "10.216.0.0/16"})
    lab.up(lab.job_ns("d1"), "jvitd1", "10.216.0.5/31", "10.216.0.4", host_addr="10.216.0.4/31")
    lab.up(lab.job_ns("d2"), "jvitd2", "10.217.0.5/16", "10.217.0.1", bridge="jb-ita")
    lab.host_run("ip", "link", "add", "itother", "type", "veth", "peer", "name", "itotherp")
    r = lab.net("down")
    assert r.stdout == "" and r.stderr == ""
    links = lab.links()
    assert not [n for n in links if n.startswith("jv") or n.startswith("jb-")]
    assert "itother" in links
    assert lab.host_run("nft", "list", "table", "inet", "joblet", check=False).returncode != 0
    # nothing there: still fine
    assert lab.net("down").returncode == 0


def test_job_up_failure_leaves_nothing(lab):
    lab.apply(TWO_NETS)
    ns = lab.job_ns("f")
    r = lab.up(ns, "jvitf", "10.217.0.7/16", "10.217.0.1", bridge="jb-nosuch", check=False)
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "jb-nosuch" in r.stderr
    assert "jvitf" not in lab.links()
    assert [l["ifname"] for l in json.loads(lab.in_ns(ns, "ip", "-j", "link").stdout)] == ["lo"]

    # the same name twice: the second start fails and leaves the first pair alone
    lab.up(ns, "jvitf", "10.217.0.7/16", "10.217.0.1", bridge="jb-ita")
    r = lab.up(lab.job_ns("g"), "jvitf", "10.217.0.8/16", "10.217.0.1", bridge="jb-ita", check=False)
    assert r.returncode == 1 and "jvitf" in r.stderr
    assert "jvitf" in lab.links()


def test_max_bps(lab):
    lab.apply(TWO_NETS)
    ns = lab.job_ns("s")
    lab.up(ns, "jvits", "10.217.0.11/16", "10.217.0.1", bridge="jb-ita", extra=("--max-bps", "1250000"))
    for q in (json.loads(lab.host_run("tc", "-j", "qdisc", "show", "dev", "jvits").stdout),
              json.loads(lab.in_ns(ns, "tc", "-j", "qdisc", "show", "dev", "eth0").stdout)):
        assert q[0]["kind"] == "tbf" and q[0]["root"]
        assert q[0]["options"]["rate"] == 1250000


@pytest.mark.parametrize("args, field", [
    (["--netns", "/nonexistent", "--host-if", "jvx", "--addr", "10.217.0.2/16", "--gateway", "10.217.0.1",
      "--bridge", "jb-ita"], "/nonexistent"),
    (["--netns", "/proc/self/ns/net", "--host-if", "eth9", "--addr", "10.217.0.2/16", "--gateway", "10.217.0.1",
      "--bridge", "jb-ita"], "--host-if"),
    (["--netns", "/proc/self/ns/net", "--host-if", "jvx", "--addr", "10.217.0.2", "--gateway", "10.217.0.1",
      "--bridge", "jb-ita"], "--addr"),
    (["--netns", "/proc/self/ns/net", "--host-if", "jvx", "--addr", "10.217.0.2/16", "--gateway", "10.217.0.1"],
     "--bridge"),
    (["--netns", "/proc/self/ns/net", "--host-if", "jvx", "--addr", "10.217.0.2/16", "--gateway", "10.217.0.1",
      "--bridge", "jb-ita", "--max-bps", "-5"], "--max-bps"),
])
def test_job_up_bad_input(lab, args, field):
    r = lab.net("job-up", *args, check=False)
    assert r.returncode == 1 and field in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.parametrize("req, field", [
    ("{", "not JSON"),
    ({"networks": [{"name": "a", "bridge": "eth0", "cidr": "10.1.0.0/16", "gateway": "10.1.0.1"}]},
     "networks[0].bridge"),
    ({"networks": [{"name": "a", "bridge": "jb-a", "cidr": "10.1.0.0/33", "gateway": "10.1.0.1"}]},
     "networks[0].cidr"),
    ({"networks": [{"name": "a", "bridge": "jb-a", "cidr": "10.1.0.0/16", "gateway": "10.2.0.1"}]},
     "networks[0].gateway"),
    ({"isolated_cidr": "nope"}, "isolated_cidr"),
    ({"prune_veths": "yes"}, "prune_veths"),
    ({"keep": []}, "keep"),
])
def test_apply_bad_input(lab, req, field):
    r = lab.net("apply", stdin=req if isinstance(req, str) else json.dumps(req), check=False)
    assert r.returncode == 1 and field in r.stderr and r.stderr.count("\n") == 1
    # nothing was made
    assert not [n for n in lab.links() if n.startswith("jb-")]
