"""Job networks under gVisor (docs/networks.md, "gVisor"; issue 31): a job with isolation gvisor
on a named network, on bridge and on isolated, through the real daemon, rnx, runsc and kernel.

As in test_networks.py, traffic goes only to this machine: the jobs' own namespaces, loopback, and
the test's own "outside" namespace (test_networks.Outside, on a /30 no host route touches).
Everything is removed at the end: the fixture runs joblet-net down and checks no link is left."""
import json
import os
import time

import pytest

from test_gvisor import RUNSC
from test_networks import (CLIENT, ECHO_SERVER, GET, HostService, Outside, links, net_daemon,  # noqa: F401 (a fixture)
                           network, rnx_ok, wait_output)

pytestmark = pytest.mark.skipif(RUNSC is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")

# the address the job's own stack uses towards ADDR (a UDP socket's connect sends nothing)
MY_ADDR = ("import socket, sys\n"
           "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect((sys.argv[1], 9))\n"
           "print(s.getsockname()[0])\n")


def gvisor(**fields):
    return dict(isolation="gvisor", **fields)


def no_jobs_left(d, *names):
    for name in names:
        assert network(d, name)["jobs_count"] == 0, network(d, name)
    deadline = time.time() + 20
    while time.time() < deadline and any(n.startswith("jv") for n in links()):
        time.sleep(0.2)
    assert not any(n.startswith("jv") for n in links()), links()


def test_gvisor_and_native_jobs_on_one_network_by_name(net_daemon):
    d = net_daemon
    rnx_ok(d, "network", "create", "ntg", "--cidr=10.231.0.0/24")
    try:
        # a gVisor server; a native client reaches it by name
        gsrv = d.submit("python3", "-c", ECHO_SERVER, "7000", name="gsrv", **gvisor(network="ntg"))
        wait_output(d, gsrv, "listening", timeout=60)
        assert d.job(gsrv)["isolation"] == "gvisor"
        net = network(d, "ntg")
        gaddr = next(j["address"] for j in net["jobs"] if j["id"] == gsrv)
        job, out, err = d.run("python3", "-c", CLIENT, "gsrv", "7000", "10", network="ntg")
        assert job["status"] == "COMPLETED", (job, out, err)
        assert out.strip() == "echo:hello"
        # the gVisor job's stack has its address (runsc took eth0's over): a gVisor client on
        # the same network uses its own, and reaches the server by id
        job, out, err = d.run("python3", "-c", MY_ADDR, gaddr, **gvisor(network="ntg"))
        assert job["status"] == "COMPLETED", (job, out, err)
        mine = out.strip()
        assert mine.startswith("10.231.0.") and mine != gaddr, out
        job, out, err = d.run("python3", "-c", CLIENT, gsrv, "7000", "10", **gvisor(network="ntg"))
        assert job["status"] == "COMPLETED", (job, out, err)
        assert out.strip() == "echo:hello"
        # the other way, with the name coming later: a gVisor client started before the native
        # server it names sees it appear in its /etc/hosts (the network's file, rewritten in place)
        gcli = d.submit("python3", "-c", CLIENT, "nsrv", "7001", "100", **gvisor(network="ntg"))
        d.wait_status(gcli, "RUNNING", timeout=60)
        nsrv = d.submit("python3", "-c", ECHO_SERVER, "7001", name="nsrv", network="ntg")
        wait_output(d, nsrv, "listening")
        job = d.wait(gcli, timeout=90)
        out, err = d.output(gcli), d.output(gcli, "stderr")
        assert job["status"] == "COMPLETED", (job, out, err)
        assert out.strip() == "echo:hello"
        # the gVisor job's view: the network's hosts file, the resolvers joblet chose
        job, out, err = d.run("sh", "-c", "cat /etc/hosts; echo ---; cat /etc/resolv.conf", **gvisor(network="ntg"))
        assert job["status"] == "COMPLETED", (job, out, err)
        hosts, _, resolv = out.partition("---\n")
        assert "gsrv" in hosts and "nsrv" in hosts and gsrv in hosts, hosts
        cfg = json.load(open(f"{d.state}/jobs/{job['id']}/bundle-config.json"))
        assert {"type": "network", "path": "/proc/self/ns/net"} in cfg["linux"]["namespaces"], cfg["linux"]
        rv = [m for m in cfg["mounts"] if m["destination"] == "/etc/resolv.conf"]
        if rv:
            assert resolv == open(rv[0]["source"]).read(), (resolv, rv)
        for jid in (gsrv, nsrv):
            assert d.rnx("job", "stop", jid).returncode == 0
            d.wait(jid, timeout=60)
        no_jobs_left(d, "ntg")
    finally:
        for j in d.api("GET", "/v1/jobs")[1]["jobs"]:
            if j["status"] in ("QUEUED", "SCHEDULED", "RUNNING"):
                d.rnx("job", "kill", j["id"])
                d.wait(j["id"], timeout=60)
        rnx_ok(d, "network", "remove", "ntg")


def test_gvisor_on_bridge_reaches_a_native_job(net_daemon):
    """A gVisor job on bridge finds its owner's native job by name; its /etc/hosts is the file of
    its owner's jobs on bridge, bound in the bundle as natively: another user's job is not in it."""
    from test_users import UID, as_user  # uid 4321 through setpriv
    d = net_daemon
    srv = d.submit("python3", "-c", ECHO_SERVER, "7002", name="bsrv", network="bridge")
    p = as_user(d, "job", "run", "--network=bridge", "--name=otherusers", "sleep", "60")
    assert p.returncode == 0, p.stderr
    other = p.stdout.split()[-1]
    try:
        wait_output(d, srv, "listening")
        d.wait_status(other, "RUNNING")
        job, out, err = d.run("python3", "-c", CLIENT, "bsrv", "7002", "10", **gvisor(network="bridge"))
        assert job["status"] == "COMPLETED", (job, out, err)
        assert out.strip() == "echo:hello"
        job, out, err = d.run("cat", "/etc/hosts", **gvisor(network="bridge"))
        assert job["status"] == "COMPLETED", (job, out, err)
        assert "bsrv" in out and srv in out, out
        assert "otherusers" not in out and other not in out, out
        cfg = json.load(open(f"{d.state}/jobs/{job['id']}/bundle-config.json"))
        src = [m["source"] for m in cfg["mounts"] if m["destination"] == "/etc/hosts"]
        assert src == [f"{d.state}/networks/bridge.owners/0.hosts"], cfg["mounts"]
    finally:
        d.rnx("job", "stop", srv)
        as_user(d, "job", "stop", other)
        d.wait(srv, timeout=60)
        d.wait(other, timeout=60)
    assert f"{UID}.hosts" in os.listdir(f"{d.state}/networks/bridge.owners")
    no_jobs_left(d, "bridge")


def test_gvisor_isolated_reaches_only_the_outside(net_daemon):
    d = net_daemon
    out_ns = Outside()
    host = HostService()  # on every address of the host's: the job must not reach it
    port = host.port
    try:
        job, out, err = d.run("python3", "-c", GET, f"http://{out_ns.addr}:8080/", **gvisor(network="isolated"))
        assert job["status"] == "COMPLETED", (job, out, err)
        # NAT: the outside sees the host's address on its link, not the job's
        assert out.strip() == f"outside saw {out_ns.host_addr}", out
        # the host's own service: neither through the job's gateway nor the host's other
        # address; 127.0.0.1 is the sandbox's own loopback
        job, out, err = d.run("python3", "-c", MY_ADDR, out_ns.addr, **gvisor(network="isolated"))
        assert job["status"] == "COMPLETED", (job, out, err)
        a = out.strip()
        gw = a.rsplit(".", 1)[0] + "." + str(int(a.rsplit(".", 1)[1]) ^ 1)
        for target in (gw, out_ns.host_addr, "127.0.0.1"):
            job, out, err = d.run("python3", "-c", CLIENT, target, str(port), "1", **gvisor(network="isolated"))
            assert job["exit_code"] == 3, (target, job, out, err)
    finally:
        host.close()
        out_ns.close()
    no_jobs_left(d, "isolated")
