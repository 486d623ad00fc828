"""Hostile local users against job networks, third round (docs/networks.md): the host's own
processes of users other than root against jobs' addresses.

Every daemon runs in a network namespace of this test's own (test_hostile_net.py's Lab: entered
with nsenter --net only), so its bridges, veths and nftables table are that namespace's and the
machine's network is never touched; deleting the namespaces at the end takes them along."""
import os
import subprocess
import time

import pytest

from conftest import rnx_as, setpriv
from test_hostile_net import CLIENT, SERVER, Lab, lab_daemon_start, need_lab, wait_output

CONFIG = "network:\n  bridge_cidr: 10.227.0.0/24\n  isolated_cidr: 10.226.0.0/24\n"
MALLORY = 4751
ALICE = 4752


@pytest.fixture
def lab():
    need_lab()
    lab = Lab()
    lab.daemons = []
    try:
        lab.daemon = lab_daemon_start(lab, CONFIG)
        lab.daemons.append(lab.daemon)
        lab.serve(lab.out, "198.18.0.2", 7009, "outside")
        yield lab
    finally:
        for d in lab.daemons:
            d.cleanup()
        lab.close()


def host_connect_as(lab, uid, addr, port):
    """CLIENT run on the (lab) host as uid: what a local user's shell, or a job of theirs on
    --network=host, sees."""
    return subprocess.run(["nsenter", "--net=/run/netns/" + lab.host, *setpriv(uid), "/usr/bin/python3", "-c",
                           CLIENT, addr, str(port)], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin"}).stdout.strip()


def serve_job(d, user, network, port, word):
    r = rnx_as(d, user, "job", "run", "--network=" + network, "/usr/bin/python3", "-c", SERVER, "0.0.0.0",
               str(port), word)
    assert r.returncode == 0, r.stderr
    jid = r.stdout.strip().split()[-1]
    wait_output(d, jid, "listening")
    return jid


def address_of(d, network, jid):
    return next(j["address"] for j in d.api("GET", f"/v1/networks/{network}")[1]["jobs"] if j["id"] == jid)


def finished_output(d, jid):
    deadline = time.time() + 30
    while time.time() < deadline and d.job(jid)["status"] in ("QUEUED", "SCHEDULED", "RUNNING"):
        time.sleep(0.05)
    return d.output(jid).strip()


def test_another_local_user_on_the_host_cannot_reach_a_job(lab):
    """Failed before: the host routes to every network and its output was not filtered, so
    Mallory's shell on the host, or a job of Mallory's on --network=host, connected to Alice's
    job on her own named network (and on bridge). Now only root and a named network's owner
    open connections from the host into jobs' links; after a kill -9 and a restart too."""
    d = lab.daemon
    assert rnx_as(d, ALICE, "network", "create", "alicenet", "--cidr=10.218.34.0/24").returncode == 0
    jobs = []
    try:
        jobs.append(serve_job(d, ALICE, "alicenet", 7002, "alice-named"))
        jobs.append(serve_job(d, ALICE, "bridge", 7003, "alice-bridge"))
        named = address_of(d, "alicenet", jobs[0])
        bridged = address_of(d, "bridge", jobs[1])
        for round in ("before", "after kill -9"):
            got = {
                "named": host_connect_as(lab, MALLORY, named, 7002),
                "bridge": host_connect_as(lab, MALLORY, bridged, 7003),
            }
            r = rnx_as(d, MALLORY, "job", "run", "--network=host", "/usr/bin/python3", "-c", CLIENT, named, "7002")
            assert r.returncode == 0, r.stderr
            got["host-job"] = finished_output(d, r.stdout.strip().split()[-1])
            assert all(v.startswith("fail") for v in got.values()), (round, got)
            # root (admins, joblet's own checks) and the named network's owner still reach it
            assert host_connect_as(lab, 0, named, 7002) == "alice-named", round
            assert host_connect_as(lab, 0, bridged, 7003) == "alice-bridge", round
            assert host_connect_as(lab, ALICE, named, 7002) == "alice-named", round
            # and jobs' connections outwards still come back (the host answers only them)
            assert job_line_of(d, ALICE, "alicenet", "198.18.0.2", 7009) == "outside", round
            if round == "before":
                d.kill9()
                d.start()
                for fd in d.mnt_nss:
                    os.close(fd)
                d.mnt_nss = []
    finally:
        for j in jobs:
            d.api("POST", f"/v1/jobs/{j}/stop")
        deadline = time.time() + 20
        while time.time() < deadline and rnx_as(d, ALICE, "network", "remove", "alicenet").returncode != 0:
            time.sleep(0.2)


def job_line_of(d, user, network, addr, port):
    r = rnx_as(d, user, "job", "run", "--network=" + network, "/usr/bin/python3", "-c", CLIENT, addr, str(port))
    assert r.returncode == 0, r.stderr
    return finished_output(d, r.stdout.strip().split()[-1])
