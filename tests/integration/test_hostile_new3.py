"""Hostile probes of this session's additions (metrics.readers, limits.max_request_bytes_per_user,
workflows dropped once ended, the bounds of GET /v1/jobs/ID_[LIST] and of workflows), as an
unprivileged local user (a throwaway uid, setpriv). Every probe is harmless when it succeeds: it
reads, or it is refused."""
import json
import socket
import subprocess

import pytest

from conftest import api_as, need_setpriv, setpriv

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


def scrape_as(uid, host, port, dev="-"):
    p = subprocess.run([*setpriv(uid), "/usr/bin/python3", "-c", _SCRAPE, host, str(port), dev],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def own_address():
    """One of this machine's own non-loopback addresses, global scope, and its interface:
    (address, family, interface), or None."""
    p = subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True)
    if p.returncode:
        return None
    for link in json.loads(p.stdout):
        if link.get("ifname") == "lo" or "UP" not in link.get("flags", []):
            continue
        for a in link.get("addr_info", []):
            if a.get("scope") == "global" and a.get("family") in ("inet", "inet6"):
                return a["local"], a["family"], link["ifname"]
    return None


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
    reader so bound is still answered. Only this machine's own address is talked to."""
    need_setpriv()
    own = own_address()
    if not own:
        pytest.skip("this machine has no non-loopback address of its own")
    addr, family, dev = own
    fam = socket.AF_INET6 if family == "inet6" else socket.AF_INET
    port = free_port(addr, fam)
    listen = f"[{addr}]:{port}" if fam == socket.AF_INET6 else f"{addr}:{port}"
    d = fresh_daemon(f"metrics:\n  listen: \"{listen}\"\n  readers: \"{READER}\"\n")
    jid = d.submit("sleep", "300", name="hnew3-secret-name")
    d.wait_status(jid, "RUNNING")
    try:
        plain = scrape_as(OTHER, addr, port)
        assert plain.startswith("HTTP/1.1 403"), plain[:300]
        bound = scrape_as(OTHER, addr, port, dev)
        assert bound.startswith("HTTP/1.1 403"), bound[:300]
        assert jid not in bound and "hnew3-secret-name" not in bound
        listed = scrape_as(READER, addr, port, dev)
        assert listed.startswith("HTTP/1.1 200") and jid in listed, listed[:300]
    finally:
        d.rnx("job", "stop", jid)
        d.wait(jid)
