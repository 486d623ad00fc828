"""Hostile jobs against the kernel's pools of the machine's that no cgroup counts (tester
hostile, 2026-12-01): the ptys (kernel.pty.max, less pty.reserve: 3072 for every container
together), kernel AIO's events (fs.aio-max-nr, 65536) and the host's conntrack table
(nf_conntrack_max, the host's own connections in it too), and TCP's buffers (net.ipv4.tcp_mem,
which a v1 memory cgroup counts only once told to). Before, one job of an unprivileged user opened
every pty the jobs share (its devpts had no max=), reserved every AIO event (one io_setup), could
fill the conntrack table (20,000 entries in 0.13 s) and, limited to 64 MB, queued 1 GiB on
loopback TCP (half of this machine's tcp_mem), so that no other user's job could have a terminal,
no process on the machine an AIO context, and the host no new connection nor TCP buffer. The probes take a small part of a pool at most (the conntrack one in a network
namespace of the test's own that plays the host), so that they are harmless on a machine without
the bounds. Real daemon (conftest fixtures), a local user made with useradd."""
import json
import subprocess
import time

import pytest

from conftest import api_as, local_account
from test_hostile_net import Lab, lab_daemon_start, need_lab

# Opens up to argv[1] ptys (each kept open: a pty lives as long as its master), then io_setup(argv[2]):
# prints what it got and the errno that stopped it.
PROBE = r"""
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
out, held = {}, []
try:
    for _ in range(int(sys.argv[1])):
        held.append(os.openpty())
    out["pty_err"] = None
except OSError as e:
    out["pty_err"] = errno.errorcode.get(e.errno, e.errno)
out["ptys"] = len(held)
for m, s in held:
    os.close(m); os.close(s)
ctx = ctypes.c_ulong(0)
SYS_io_setup = {"x86_64": 206, "aarch64": 0}[os.uname().machine]
r = libc.syscall(SYS_io_setup, ctypes.c_uint(int(sys.argv[2])), ctypes.byref(ctx))
out["aio_err"] = None if r == 0 else errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())
if r == 0:
    libc.syscall({"x86_64": 207, "aarch64": 1}[os.uname().machine], ctx)  # io_destroy
print(json.dumps(out))
"""


@pytest.fixture
def hostile_user():
    """A local account (useradd), removed after the test: its uid."""
    with local_account("jh") as (_, uid, _):
        yield uid


def _probe(d, uid, ptys, aio_events):
    code, j = api_as(d, uid, "POST", "/v1/jobs", {"command": "python3", "args": ["-c", PROBE, str(ptys), str(aio_events)]})
    assert code == 201, j
    job = d.wait(j["id"], timeout=120)
    out = d.output(j["id"])
    assert job["status"] == "COMPLETED", (job, out, d.output(j["id"], "stderr"))
    return json.loads(out)


def test_one_job_holds_only_its_share_of_the_machines_ptys(fresh_daemon, hostile_user):
    # 64 of the 3072 asked for: a job without a terminal of its own gets jobs.ptys_max (8 by
    # default), then ENOSPC (devpts' max=), as a full machine would say it
    d = fresh_daemon()
    got = _probe(d, hostile_user, 64, 0)
    assert got["ptys"] == 8 and got["pty_err"] == "ENOSPC", got
    # the bound is the setting's
    d2 = fresh_daemon("jobs:\n  ptys_max: 3\n")
    got = _probe(d2, hostile_user, 64, 0)
    assert got["ptys"] == 3 and got["pty_err"] == "ENOSPC", got


# holds every pty its devpts lets it have, and says so; then waits
HOLD_PTYS = r"""
import os, time
held = []
try:
    while True:
        held.append(os.openpty())
except OSError:
    print("held", len(held), flush=True)
time.sleep(60)
"""


def test_exec_t_into_a_job_that_holds_its_ptys_names_the_bound(fresh_daemon, hostile_user):
    # rnx job exec -t takes a pty of the job's devpts too: with all of them held, the refusal
    # said "open the job's /dev/ptmx: No space left on device", a full disk to whoever read it
    d = fresh_daemon("jobs:\n  ptys_max: 2\n")
    code, j = api_as(d, hostile_user, "POST", "/v1/jobs", {"command": "python3", "args": ["-c", HOLD_PTYS]})
    assert code == 201, j
    try:
        deadline = time.time() + 60
        while "held" not in d.output(j["id"]):
            assert time.time() < deadline, d.output(j["id"], "stderr")
            time.sleep(0.2)
        assert d.output(j["id"]).split() == ["held", "2"], d.output(j["id"])
        p = d.rnx("job", "exec", "-t", j["id"], "true")
        assert p.returncode != 0, (p.stdout, p.stderr)
        assert "all 2 terminals open that it may (jobs.ptys_max)" in p.stderr and "No space left on device" not in p.stderr, p.stderr
    finally:
        d.api("POST", f"/v1/jobs/{j['id']}/stop")
        d.wait(j["id"], timeout=60)


def test_a_job_cannot_reserve_the_machines_aio_events(fresh_daemon, hostile_user):
    # io_setup(128): 128 of the machine's 65536 events, had it been let through; one call of
    # 65536 took them all (every other io_setup on the machine: EAGAIN)
    d = fresh_daemon()
    got = _probe(d, hostile_user, 0, 128)
    assert got["aio_err"] == "EPERM", got
    # an admin whose users need it (DeepSpeed's async_io, fio's libaio) lets it through, for
    # jobs and for what rnx job exec puts into them alike
    d2 = fresh_daemon("jobs:\n  kernel_aio: 1\n")
    got = _probe(d2, hostile_user, 0, 128)
    assert got["aio_err"] is None, got
    code, j = api_as(d2, hostile_user, "POST", "/v1/jobs", {"command": "sleep", "args": ["60"]})
    assert code == 201, j
    d2.wait_status(j["id"], "RUNNING")
    p = d2.rnx("job", "exec", j["id"], "python3", "-c", PROBE, "0", "128")
    assert p.returncode == 0 and json.loads(p.stdout)["aio_err"] is None, (p.stdout, p.stderr)
    d2.rnx("job", "stop", j["id"])
    # and where it is refused, rnx job exec's processes are refused it too
    code, j = api_as(d, hostile_user, "POST", "/v1/jobs", {"command": "sleep", "args": ["60"]})
    assert code == 201, j
    d.wait_status(j["id"], "RUNNING")
    p = d.rnx("job", "exec", j["id"], "python3", "-c", PROBE, "0", "128")
    assert p.returncode == 0 and json.loads(p.stdout)["aio_err"] == "EPERM", (p.stdout, p.stderr)
    d.rnx("job", "stop", j["id"])


# argv: the address of another job, N: a datagram to each of N ports, each a connection of its own
# to the host's conntrack; then it waits, so that its entries stay
FLOWS = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n = int(sys.argv[2])
for rnd in (1, 2):
    t = time.time()
    for p in range(n):
        s.sendto(b"x", (sys.argv[1], 1024 + n * rnd + p))
    print(f"round{rnd} sent in {time.time() - t:.3f}", flush=True)
    time.sleep(8)
time.sleep(30)
"""
# prints its address on bridge, then waits
ADDR = r"""
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(("10.229.0.1", 9))
print("addr", s.getsockname()[0], flush=True); time.sleep(60)
"""


@pytest.fixture
def lab_daemon():
    """A daemon in a network namespace of the test's own (test_hostile_net's Lab) whose jobs may
    have 300 connections at once."""
    need_lab()
    lab = Lab()
    d = None
    try:
        d = lab_daemon_start(lab, "network:\n  bridge_cidr: 10.229.0.0/24\n  isolated_cidr: 10.228.0.0/24\n"
                                  "  max_flows_per_job: 300\n")
        yield lab, d
    finally:
        if d is not None:
            d.cleanup()
        lab.close()


def _printed(d, jid, word, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        out = d.output(jid)
        if word in out:
            return out
        job = d.job(jid)
        assert job["status"] in ("QUEUED", "SCHEDULED", "RUNNING"), (job, d.output(jid, "stderr"), d.log()[-1500:])
        time.sleep(0.1)
    raise AssertionError(f"{jid} never printed {word!r}: {d.output(jid)} {d.output(jid, 'stderr')}")


def test_a_job_holds_only_its_share_of_the_hosts_conntrack_table(lab_daemon, hostile_user):
    lab, d = lab_daemon

    def entries():
        return int(subprocess.run(["ip", "netns", "exec", lab.host, "cat", "/proc/sys/net/netfilter/nf_conntrack_count"],
                                  capture_output=True, text=True, check=True).stdout)

    jobs = []
    try:
        code, b = api_as(d, hostile_user, "POST", "/v1/jobs", {"command": "python3", "args": ["-c", ADDR],
                                                               "network": "bridge"})
        assert code == 201, b
        jobs.append(b["id"])
        addr = _printed(d, b["id"], "addr").split()[1]
        before = entries()
        code, a = api_as(d, hostile_user, "POST", "/v1/jobs", {"command": "python3", "args": ["-c", FLOWS, addr, "3000"],
                                                               "network": "bridge"})
        assert code == 201, a
        jobs.append(a["id"])
        _printed(d, a["id"], "round1")
        made = entries() - before
        print("conntrack entries made by 3000 datagrams to 3000 ports:", made)
        # 3000 before; network.max_flows_per_job, and the few of the jobs' own start, now
        assert made <= 300 + 20, made
        # the table is replaced whenever networks change (a user's network made and removed, as
        # often as they like): the bound holds across it (the count is not started again)
        for name in ("n1", "n2"):
            code, net = api_as(d, hostile_user, "POST", "/v1/networks", {"name": name, "cidr": "10.219.77.0/24"})
            assert code == 201, net
            code, gone = api_as(d, hostile_user, "DELETE", f"/v1/networks/{name}")
            assert code in (200, 204), gone
        _printed(d, a["id"], "round2")
        made = entries() - before
        print("after the table was replaced twice and 3000 more:", made)
        assert made <= 300 + 20, made
    finally:
        for jid in jobs:
            d.api("POST", f"/v1/jobs/{jid}/stop")


# argv: N pairs of loopback TCP sockets in the job's own network namespace; each writer fills its
# socket until it would block, nobody reads. Prints the MiB queued.
TCP_FILL = r"""
import json, socket, sys
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(64)
pairs, sent, buf = [], 0, b"x" * 65536
for _ in range(int(sys.argv[1])):
    c = socket.socket(); c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    c.connect(ls.getsockname()); a, _ = ls.accept(); a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    c.setblocking(False); pairs.append((c, a))
for c, a in pairs:
    while True:
        try:
            sent += c.send(buf)
        except BlockingIOError:
            break
print(json.dumps({"queued_mib": sent >> 20}), flush=True)
"""


def test_a_jobs_socket_buffers_count_against_its_memory_limit(fresh_daemon, hostile_user):
    # 24 pairs queue about 250 MiB where nothing counts them (v1 without memory.kmem.tcp.limit_in_bytes:
    # 1 GiB with 100 pairs, a job of 64 MB); a job of 32 MB queues its memory's worth at most
    d = fresh_daemon()
    code, j = api_as(d, hostile_user, "POST", "/v1/jobs", {"command": "python3", "args": ["-c", TCP_FILL, "24"],
                                                           "max_memory_mb": 32, "network": "none"})
    assert code == 201, j
    job = d.wait(j["id"], timeout=120)
    out = d.output(j["id"])
    print(job["status"], out, d.output(j["id"], "stderr")[-500:])
    assert out, (job, d.output(j["id"], "stderr"))
    assert json.loads(out)["queued_mib"] <= 32 + 8, out
