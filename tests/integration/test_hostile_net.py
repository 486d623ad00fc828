"""Hostile local users against job networks (docs/networks.md).

The daemon runs in a network namespace of this test's own that plays the host ("lab host"),
entered with nsenter --net only (its mount namespace stays the test's), so its bridges, veths,
nftables table and ip_forward are that namespace's: the machine's real network is never
touched. An "outside" namespace, joined to the lab host by a veth pair of the test's own on
198.18.0.0/30 with the lab host's default route through it, stands for the world beyond the
host; on it 203.0.113.2 stands for a server the host reaches through its default route (a DNS
resolver, a package mirror, a metadata service). Traffic goes only between these namespaces.
Everything is removed at the end: deleting the namespaces takes their links and tables along."""
import os
import secrets
import subprocess
import time

import pytest

from conftest import BUILD, Daemon, need_root, rnx_as

CONFIG = "network:\n  bridge_cidr: 10.227.0.0/24\n  isolated_cidr: 10.226.0.0/24\n"
MALLORY = 4731

# A listener that answers every connection with one word (argv: address, port, word)
SERVER = r"""
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(16)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(sys.argv[3].encode() + b"\n")
    c.close()
"""

# connect to HOST:PORT and print the first line it sends, or "fail ..." (argv: host, port)
CLIENT = r"""
import socket, sys
try:
    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)
    print(c.recv(100).decode().strip())
except OSError as e:
    print("fail", type(e).__name__)
"""


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


class Lab:
    def __init__(self):
        self.tag = secrets.token_hex(3)
        self.host = "jbhn-%s-host" % self.tag
        self.out = "jbhn-%s-out" % self.tag
        self.procs = []
        self.made = []
        for ns in (self.host, self.out):
            sh("ip", "netns", "add", ns)
            self.made.append(ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        # the lab host's uplink: made inside the lab host, its peer moved to the outside
        sh("ip", "-n", self.host, "link", "add", "up0", "type", "veth", "peer", "name", "up1")
        sh("ip", "-n", self.host, "link", "set", "up1", "netns", self.out)
        sh("ip", "-n", self.host, "addr", "add", "198.18.0.1/30", "dev", "up0")
        sh("ip", "-n", self.out, "addr", "add", "198.18.0.2/30", "dev", "up1")
        sh("ip", "-n", self.host, "link", "set", "up0", "up")
        sh("ip", "-n", self.out, "link", "set", "up1", "up")
        sh("ip", "-n", self.host, "route", "add", "default", "via", "198.18.0.2")
        sh("ip", "-n", self.out, "addr", "add", "203.0.113.2/32", "dev", "lo")
        sh("ip", "-n", self.out, "route", "add", "10.0.0.0/8", "via", "198.18.0.1")

    def serve(self, ns, addr, port, word):
        p = subprocess.Popen(["ip", "netns", "exec", ns, "/usr/bin/python3", "-c", SERVER, addr, str(port), word],
                             stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        assert p.stdout.readline().strip() == "listening"
        return p

    def connect(self, ns, addr, port):
        return sh("nsenter", "--net=/run/netns/" + ns, "/usr/bin/python3", "-c", CLIENT, addr, str(port)).stdout.strip()

    def close(self):
        for p in self.procs:
            p.kill()
            p.wait()
        for ns in self.made:
            sh("ip", "netns", "del", ns, check=False)


def need_lab():
    """A lab needs root, joblet-net and nft; skipped, saying which, without them."""
    need_root()
    if not os.access(os.path.join(BUILD, "joblet-net"), os.X_OK):
        pytest.skip("joblet-net is not built")
    if subprocess.run(["nft", "--version"], capture_output=True).returncode != 0:
        pytest.skip("nft is not installed")


def lab_daemon_start(lab, config):
    """A daemon started in the lab's host namespace (its network only): the caller cleans it up."""
    d = Daemon(config, wrap=["nsenter", "--net=/run/netns/" + lab.host])
    d.start()
    # (the wrapper enters the network namespace only: its mount namespace is the test's own,
    # which kill_mount_namespace must never be handed)
    for fd in d.mnt_nss:
        os.close(fd)
    d.mnt_nss = []
    return d


@pytest.fixture(scope="module")
def lab():
    need_lab()
    lab = Lab()
    d = None
    try:
        d = lab_daemon_start(lab, CONFIG)
        lab.daemon = d
        yield lab
    finally:
        if d is not None:
            d.cleanup()
        lab.close()


def wait_output(d, jid, text, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if text in d.output(jid):
            return
        assert d.job(jid)["status"] in ("QUEUED", "SCHEDULED", "RUNNING"), d.output(jid, "stderr")
        time.sleep(0.05)
    raise AssertionError(f"{jid} never printed {text!r}: {d.output(jid)} {d.output(jid, 'stderr')}")


def test_user_network_cannot_take_addresses_the_host_reaches_by_its_default_route(lab):
    """An unprivileged user's network over addresses the host reaches through its default route
    (here the outside's server 203.0.113.2) puts a route to them on the user's bridge: the host's
    own connections there go to the user's job instead. The server answers 'outside' until then."""
    d = lab.daemon
    lab.serve(lab.out, "203.0.113.2", 5353, "outside")
    assert lab.connect(lab.host, "203.0.113.2", 5353) == "outside"
    p = rnx_as(d, MALLORY, "network", "create", "evil", "--cidr=203.0.113.0/24")
    if p.returncode != 0:
        assert "cidr: " in p.stderr and "outside network.user_pool (10.218.0.0/15)" in p.stderr, p.stderr
        assert lab.connect(lab.host, "203.0.113.2", 5353) == "outside"
        # within the pool a user's network is made (and the pool is the default's)
        ok = rnx_as(d, MALLORY, "network", "create", "mine", "--cidr=10.219.7.0/24")
        assert ok.returncode == 0, ok.stderr
        assert rnx_as(d, MALLORY, "network", "remove", "mine").returncode == 0
        # an admin chooses addresses outside it (root here; the group is docs/networks.md's)
        assert d.rnx("network", "create", "adm", "--cidr=10.233.9.0/24").returncode == 0
        assert d.rnx("network", "remove", "adm").returncode == 0
        return
    # taken: show what it does (a job of the network's answers there if it got 203.0.113.2)
    try:
        r = rnx_as(d, MALLORY, "job", "run", "--network=evil", "/usr/bin/python3", "-c", SERVER,
                   "0.0.0.0", "5353", "mallory-job")
        assert r.returncode == 0, r.stderr
        jid = r.stdout.strip().split()[-1]
        wait_output(d, jid, "listening")
        got = lab.connect(lab.host, "203.0.113.2", 5353)
        route = sh("ip", "-n", lab.host, "route", "get", "203.0.113.2").stdout.strip()
        d.api("POST", f"/v1/jobs/{jid}/stop")
    finally:
        deadline = time.time() + 20
        while time.time() < deadline and rnx_as(d, MALLORY, "network", "remove", "evil").returncode != 0:
            time.sleep(0.2)
    raise AssertionError(f"uid {MALLORY} made a network over 203.0.113.0/24; the host's route there is "
                         f"now '{route}', and the host's connection to 203.0.113.2:5353 got {got!r}")


@pytest.mark.parametrize("cidr", ["127.1.0.0/16", "0.0.0.0/16", "169.254.0.0/16", "224.0.0.0/16", "240.0.0.0/16"])
def test_special_addresses_are_refused(lab, cidr):
    """Loopback, 'this network', link-local (the cloud metadata service's), multicast and
    reserved addresses are no job network's: refused with a message about the cidr."""
    d = lab.daemon
    p = rnx_as(d, MALLORY, "network", "create", "spec", "--cidr=" + cidr)
    if p.returncode == 0:
        addrs = sh("ip", "-n", lab.host, "-4", "-o", "addr", "show").stdout
        rnx_as(d, MALLORY, "network", "remove", "spec")
        raise AssertionError(f"{cidr} was taken; the lab host's addresses then:\n{addrs}")
    assert "cidr" in p.stderr, p.stderr


ALICE = 4732


def job_line(d, user, network, *args):
    """A job of user's on network running CLIENT with args; its one line of output."""
    r = rnx_as(d, user, "job", "run", "--network=" + network, "/usr/bin/python3", "-c", CLIENT, *args)
    assert r.returncode == 0, r.stderr
    jid = r.stdout.strip().split()[-1]
    deadline = time.time() + 30
    while time.time() < deadline and d.job(jid)["status"] in ("QUEUED", "SCHEDULED", "RUNNING"):
        time.sleep(0.05)
    return d.output(jid).strip()


def test_another_users_network_and_the_hosts_services_stay_out_of_reach(lab):
    """Held: Mallory cannot join Alice's network by name, and a job of Mallory's on bridge
    reaches neither Alice's job on it nor a service of the (lab) host's on the bridge's gateway."""
    d = lab.daemon
    lab.serve(lab.host, "0.0.0.0", 7001, "host-service")
    assert rnx_as(d, ALICE, "network", "create", "alicenet", "--cidr=10.218.33.0/24").returncode == 0
    try:
        r = rnx_as(d, ALICE, "job", "run", "--network=alicenet", "/usr/bin/python3", "-c", SERVER, "0.0.0.0",
                   "7002", "alice-job")
        assert r.returncode == 0, r.stderr
        alice_job = r.stdout.strip().split()[-1]
        wait_output(d, alice_job, "listening")
        alice_addr = next(j["address"] for j in d.api("GET", "/v1/networks/alicenet")[1]["jobs"]
                          if j["id"] == alice_job)
        p = rnx_as(d, MALLORY, "job", "run", "--network=alicenet", "/bin/true")
        assert p.returncode != 0 and "no network 'alicenet'" in p.stderr, p.stderr
        assert job_line(d, MALLORY, "bridge", alice_addr, "7002").startswith("fail")
        assert job_line(d, MALLORY, "bridge", "10.227.0.1", "7001").startswith("fail")
        assert job_line(d, MALLORY, "isolated", "198.18.0.1", "7001").startswith("fail")
        assert job_line(d, ALICE, "alicenet", alice_addr, "7002") == "alice-job"
        d.api("POST", f"/v1/jobs/{alice_job}/stop")
    finally:
        deadline = time.time() + 20
        while time.time() < deadline and rnx_as(d, ALICE, "network", "remove", "alicenet").returncode != 0:
            time.sleep(0.2)
