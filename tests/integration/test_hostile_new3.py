"""Hostile probes of this session's additions (metrics.readers, limits.max_request_bytes_per_user,
workflows dropped once ended, the bounds of GET /v1/jobs/ID_[LIST] and of workflows), as an
unprivileged local user (a throwaway uid, setpriv). Every probe is harmless when it succeeds: it
reads, or it is refused."""
import json
import os
import secrets
import shutil
import socket
import subprocess

import pytest

from conftest import api_as, need_setpriv, rnx_as, setpriv

READER, OTHER = 64311, 64312

# One scrape as whoever runs it: argv the address, the port and the interface to bind the
# client's socket to (SO_BINDTODEVICE, which any user may set on a socket not yet bound).
_SCRAPE = r"""
import socket, sys
host, port, dev = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
if dev != "-":
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, dev.encode())
s.settimeout(20)
s.connect(socket.getaddrinfo(host, port, fam, socket.SOCK_STREAM)[0][4])
s.sendall(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
print(out.decode(errors="replace"))
"""


def scrape_as(uid, host, port, dev="-", netns=None):
    """One scrape as uid (setpriv), in network namespace netns when given (nsenter --net)."""
    pre = ["nsenter", "--net=/run/netns/" + netns] if netns else []
    p = subprocess.run([*pre, *setpriv(uid), "/usr/bin/python3", "-c", _SCRAPE, host, str(port), dev],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def free_port(host, fam):
    s = socket.socket(fam)
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_metrics_readers_hold_for_a_client_bound_to_an_interface(fresh_daemon):
    """metrics.readers on a listener at one of the machine's own (non-loopback) addresses: an
    unlisted local user whose client socket is bound to an interface (SO_BINDTODEVICE; an IPv6
    link-local connection is bound to its scope's the same way) was not found by the kernel's
    look-up (asked with no interface, it matches no bound socket), was taken for a client from
    another machine and got the whole text. It is refused as any unlisted user is; a listed
    reader so bound is still answered. The daemon and its clients run in a network namespace the
    test makes, whose one address (on a veth pair whose both ends are in it) is the "machine's
    own": nothing else is talked to."""
    need_setpriv()
    ns = "jbn3-" + secrets.token_hex(3)
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        for cmd in (["link", "set", "lo", "up"], ["link", "add", "d0", "type", "veth", "peer", "name", "d1"],
                    ["addr", "add", "10.231.77.1/24", "dev", "d0"], ["link", "set", "d0", "up"],
                    ["link", "set", "d1", "up"]):
            subprocess.run(["ip", "-n", ns, *cmd], check=True)
        addr, dev, port = "10.231.77.1", "d0", 39464
        d = fresh_daemon(f"metrics:\n  listen: \"{addr}:{port}\"\n  readers: \"{READER}\"\n", start=False)
        d.wrap = ["nsenter", "--net=/run/netns/" + ns]
        d.start()
        jid = d.submit("sleep", "300", name="hnew3-secret-name")
        d.wait_status(jid, "RUNNING")
        try:
            plain = scrape_as(OTHER, addr, port, netns=ns)
            assert plain.startswith("HTTP/1.1 403"), plain[:300]
            bound = scrape_as(OTHER, addr, port, dev, netns=ns)
            assert bound.startswith("HTTP/1.1 403"), bound[:300]
            assert jid not in bound and "hnew3-secret-name" not in bound
            listed = scrape_as(READER, addr, port, dev, netns=ns)
            assert listed.startswith("HTTP/1.1 200") and jid in listed, listed[:300]
        finally:
            d.rnx("job", "stop", jid)
            d.wait(jid)
            d.stop()
    finally:
        subprocess.run(["ip", "netns", "del", ns])


RUNSC = shutil.which("runsc") or ("/usr/bin/runsc" if os.path.exists("/usr/bin/runsc") else None)


@pytest.mark.skipif(RUNSC is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")
def test_metrics_readers_hold_for_a_gvisor_job_on_the_host_network(fresh_daemon):
    """A gVisor job on --network=host made its sockets as host uid 0 (runsc ran so; now as its
    sandbox uid, no user's: docs/sandbox.md): its connection to the metrics listener passed for
    root's, and an unlisted user's job read every user's running jobs. It is its owner's (the
    job's cgroup says whose), refused as the owner is; a listed reader's such job is still
    answered. Loopback only."""
    need_setpriv()
    port = free_port("127.0.0.1", socket.AF_INET)
    d = fresh_daemon(f"metrics:\n  listen: 127.0.0.1:{port}\n  readers: \"{READER}\"\n")
    secret = d.submit("sleep", "300", name="hnew3-secret-name")
    d.wait_status(secret, "RUNNING")
    try:
        for uid, want in ((OTHER, "HTTP/1.1 403"), (READER, "HTTP/1.1 200")):
            p = rnx_as(d, uid, "job", "run", "--isolation=gvisor", "--network=host", "python3", "-c",
                       _SCRAPE, "127.0.0.1", str(port), "-")
            assert p.returncode == 0, p.stderr
            jid = p.stdout.strip().splitlines()[-1]
            d.wait(jid, timeout=120)
            out = d.output(jid)
            assert out.startswith(want), (uid, out[:300], d.job(jid))
            if want.endswith("403"):
                assert secret not in out and "hnew3-secret-name" not in out
    finally:
        d.rnx("job", "stop", secret)
        d.wait(secret)


def listing_request(entries):
    """A job whose uploads are a chain of three directories of 250-byte names and `entries` empty
    files beneath, each path about 1 KiB: a listing of about entries KiB, no byte of content."""
    comp = ["a" * 250, "b" * 250, "c" * 250]
    ups = [{"path": "/".join(comp[:i + 1]), "type": "dir"} for i in range(3)]
    base = "/".join(comp)
    ups += [{"path": f"{base}/f{k:06d}" + "x" * 240, "type": "file", "content_b64": "", "size": 0}
            for k in range(entries)]
    return {"command": "true", "uploads": ups}


def test_request_bytes_count_the_upload_listing(fresh_daemon):
    """limits.max_request_bytes_per_user bounds what a user's kept jobs hold of their requests;
    the listing of a job's uploads is kept with it (in memory, in its row, in every GET) as its
    env is, up to the body's 16 MiB (100,000 entries, paths of 1 KiB), but was not counted: with
    a bound of 1,000,000 bytes, jobs of 1.2 MB of listing each were all taken (four: 6 MB of
    database). The first is refused as a job of 1.2 MB of env would be; a small one still goes."""
    need_setpriv()
    d = fresh_daemon("limits:\n  max_request_bytes_per_user: 1000000\n")
    st, body = api_as(d, OTHER, "POST", "/v1/jobs", listing_request(1200))
    assert st == 429 and "limits.max_request_bytes_per_user" in json.dumps(body), (st, body)
    st, body = api_as(d, OTHER, "POST", "/v1/jobs", listing_request(20))
    assert st == 201, (st, body)
    d.wait(body["id"])


def test_request_bytes_count_streamed_uploads_still_arriving(fresh_daemon):
    """A streamed submission (the listing first, 202, then its bytes in a PUT) holds its request
    until its bytes came, and makes its job then without a second check: its jobs counted for
    limits.max_queued_per_user meanwhile, but not their bytes for max_request_bytes_per_user,
    so uploads opened together (limits.uploads_per_user: 4, of 16 MiB each) each passed a bound
    the others would fill. The second one here, of 600 KB of env under a bound of 1 MB, is
    refused as it would be once the first job is made; then the first is dropped unsent."""
    need_setpriv()
    d = fresh_daemon("limits:\n  max_request_bytes_per_user: 1000000\n")
    req = {"command": "true", "env": {f"BIG{i}": "v" * 100000 for i in range(6)},
           "uploads": [{"path": "data.bin", "type": "file", "size": 4}]}
    st, body = api_as(d, OTHER, "POST", "/v1/jobs", req)
    assert st == 202, (st, body)
    st2, body2 = api_as(d, OTHER, "POST", "/v1/jobs", req)
    assert st2 == 429 and "limits.max_request_bytes_per_user" in json.dumps(body2), (st2, body2)


def test_request_bytes_count_what_a_workflow_keeps(fresh_daemon):
    """A workflow keeps its YAML (up to 1 MiB) and description (64 KiB) in memory and in its row
    for as long as it is kept, and one tiny job is enough to keep it: those bytes were not
    counted for limits.max_request_bytes_per_user (four workflows of 0.96 MB each went under a
    bound of 1 MB; max_jobs_per_user's 10,000 would be 10 GiB). The second is refused; once the
    first is dropped (its job deleted), its bytes are the user's again."""
    need_setpriv()
    d = fresh_daemon("limits:\n  max_request_bytes_per_user: 1000000\n")

    def workflow(name):
        return {"name": name, "description": "d" * 60000, "yaml": "# " + "y" * 900000 + "\n",
                "jobs": [{"name": "a", "request": {"command": "true"}}]}

    st, wf = api_as(d, OTHER, "POST", "/v1/workflows", workflow("w1"))
    assert st == 201, (st, wf)
    st2, body = api_as(d, OTHER, "POST", "/v1/workflows", workflow("w2"))
    assert st2 == 429 and "limits.max_request_bytes_per_user" in json.dumps(body), (st2, body)
    jid = wf["jobs"][0]["job_id"] if "job_id" in wf["jobs"][0] else wf["jobs"][0]["id"]
    d.wait(jid)
    st, body = api_as(d, OTHER, "DELETE", f"/v1/jobs/{jid}")
    assert st in (200, 204), (st, body)
    st, body = api_as(d, OTHER, "GET", f"/v1/workflows/{wf['id']}")
    assert st == 404, (st, body)
    st, body = api_as(d, OTHER, "POST", "/v1/workflows", workflow("w3"))
    assert st == 201, (st, body)
