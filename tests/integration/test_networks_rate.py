"""--max-netbps holds (docs/networks.md, "Limits"; issue 31): a tc tbf on both ends of the job's
veth. Two jobs on one named network, a sender pushing all it can to a receiver for about 3 s; the
receiver measures what arrives. With --max-netbps=1MB on the sender (and again on the receiver
instead: the job's inbound side) the rate stays near 1 MiB/s;
without it, the same pair over veth runs at tens or hundreds of MB/s. And the refusals: a limit
on a job without a link of its own, and a rate below the smallest accepted.

The bounds are wide (0.3x to 1.5x the limit; unlimited above 5x the limit), so that a loaded
shared machine still passes while a limit that is not applied fails. Traffic stays between the
jobs' own namespaces; the fixture removes the network, the jobs' links and joblet's table."""
import json
import subprocess

from test_networks import free_net, joblet_links, net_daemon, rnx_ok, wait_output  # noqa: F401 (a fixture)

LIMIT = 1 << 20            # --max-netbps=1MB: joblet's units are binary (10MB = 10 * 2^20 bytes/s)
SECONDS = 3

# Accept one connection and read it to its end; print what arrived, over how long (first byte to
# EOF, on the receiver's clock). The accept waits at most 120 s so a sender that never comes
# does not leave the job running.
RECEIVER = r"""
import json, socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); s.settimeout(120)
print("listening", flush=True)
c, _ = s.accept(); c.settimeout(120)
n, first = 0, None
while True:
    d = c.recv(1 << 20)
    if not d:
        break
    if first is None:
        first = time.monotonic()
    n += len(d)
end = time.monotonic()
print(json.dumps({"bytes": n, "seconds": end - first if first else 0.0}), flush=True)
"""

# Connect to HOST:PORT (a few tries while the name settles) and send as fast as the socket takes
# it for SECONDS, then close. A small send buffer, so that what is still queued when it closes
# drains quickly through the limit.
SENDER = r"""
import socket, sys, time
host, port, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
for i in range(20):
    try:
        c = socket.socket()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        c.settimeout(30)
        c.connect((host, port))
        break
    except OSError as e:
        err = e
        c.close()
        time.sleep(0.3)
else:
    print("failed:", err, flush=True)
    sys.exit(3)
buf = b"x" * (1 << 16)
sent, end = 0, time.monotonic() + secs
while time.monotonic() < end:
    sent += c.send(buf)
c.close()
print("sent", sent, flush=True)
"""


def qdiscs():
    """tc's view of joblet's links, for a failure's message."""
    out = []
    for name in sorted(joblet_links()):
        out.append(subprocess.run(["tc", "-s", "qdisc", "show", "dev", name], capture_output=True,
                                  text=True).stdout.strip())
    return "\n".join(out)


def transfer(d, net, tag, *limit, **rx_fields):
    """A receiver (rx_fields: more of its request), then a sender (through rnx, so the flag is
    rnx's) with the given flags; the receiver's bytes per second and the sender's job."""
    rx_name = f"rate-rx-{tag}"
    rx = d.submit("python3", "-c", RECEIVER, "7100", name=rx_name, network=net, **rx_fields)
    wait_output(d, rx, "listening")
    out = rnx_ok(d, "job", "run", f"--network={net}", *limit, "--", "python3", "-c", SENDER,
                 rx_name, "7100", str(SECONDS))
    tx = out.strip().split()[-1]
    tx_job = d.job(tx)
    assert tx_job["id"] == tx, out
    shaping = qdiscs() if limit or rx_fields else ""
    tx_job = d.wait(tx, timeout=120)
    assert tx_job["status"] == "COMPLETED", (tx_job, d.output(tx), d.output(tx, "stderr"))
    rx_job = d.wait(rx, timeout=120)
    assert rx_job["status"] == "COMPLETED", (rx_job, d.output(rx), d.output(rx, "stderr"))
    got = json.loads(d.output(rx).strip().splitlines()[-1])
    assert got["seconds"] > SECONDS / 2, (got, d.output(tx))
    return got["bytes"] / got["seconds"], tx_job, shaping


def test_max_netbps_holds_both_ways_and_without_it_is_far_faster(net_daemon):
    d = net_daemon
    cidr = free_net(["10.233.0.0/24", "10.234.0.0/24", "10.235.0.0/24"])
    rnx_ok(d, "network", "create", "nrate", f"--cidr={cidr}")
    try:
        limited, tx_job, shaping = transfer(d, "nrate", "lim", "--max-netbps=1MB")
        assert tx_job["limits"]["max_netbps"] == LIMIT, tx_job
        assert 0.3 * LIMIT < limited < 1.5 * LIMIT, \
            f"{limited / 1e6:.2f} MB/s against a limit of {LIMIT / 1e6:.2f} MB/s\n{shaping}"
        # the other way: the limit on the receiver, the job's inbound side (the host end's tbf)
        inbound, _, shaping = transfer(d, "nrate", "in", max_netbps=LIMIT)
        assert 0.3 * LIMIT < inbound < 1.5 * LIMIT, \
            f"inbound {inbound / 1e6:.2f} MB/s against a limit of {LIMIT / 1e6:.2f} MB/s\n{shaping}"
        free, tx_job, _ = transfer(d, "nrate", "free")
        assert tx_job["limits"]["max_netbps"] is None, tx_job
        assert free > 5 * LIMIT, f"unlimited: {free / 1e6:.2f} MB/s, limited: {limited / 1e6:.2f} MB/s"
        print(f"\nrate: sender limited {limited / 1e6:.3f} MB/s, receiver limited {inbound / 1e6:.3f} MB/s "
              f"(limit {LIMIT / 1e6:.3f}), unlimited {free / 1e6:.1f} MB/s")
    finally:
        rnx_ok(d, "network", "remove", "nrate")


def test_max_netbps_refused_without_a_link_or_below_the_least(net_daemon):
    d = net_daemon
    before = d.job_count()
    for net in ("none", "host"):
        p = d.rnx("job", "run", f"--network={net}", "--max-netbps=1MB", "true")
        assert p.returncode != 0, p.stdout
        assert "--max-netbps" in p.stderr and "only a job on isolated, bridge or a named network" in p.stderr, \
            p.stderr
    # the default network is none
    p = d.rnx("job", "run", "--max-netbps=1MB", "true")
    assert p.returncode != 0 and "--max-netbps" in p.stderr, p.stderr
    # below the least rate, on a network that has a link
    p = d.rnx("job", "run", "--network=bridge", "--max-netbps=100", "true")
    assert p.returncode != 0, p.stdout
    assert "--max-netbps" in p.stderr and "at least 1024" in p.stderr, p.stderr
    # the API names the field by its own name
    status, body = d.api("POST", "/v1/jobs", {"command": "true", "network": "none", "max_netbps": LIMIT})
    assert status == 400 and "max_netbps" in json.dumps(body), (status, body)
    status, body = d.api("POST", "/v1/jobs", {"command": "true", "network": "bridge", "max_netbps": 10})
    assert status == 400 and "max_netbps" in json.dumps(body), (status, body)
    assert d.job_count() == before
