"""`joblet cert` (src/daemon/cert.c, docs/remote.md "Certificates: joblet cert"): the CA, the
server's and the clients' certificates, the node file, revocation and the list, checked with
tools that are not joblet's: certtool and openssl read the certificates (subject, names, IP
names, key usages, CA flag, validity, P-256 keys), openssl verify and certtool --verify check
the chains and purposes, and real TLS handshakes on 127.0.0.1 (gnutls-serv and openssl
s_server asking for client certificates, gnutls-cli connecting with one) accept the issued
certificates and refuse a server's certificate used as a client's and one of another CA.

Needs neither root nor the daemon; every file is in a temporary directory, every server listens
on the loopback only and is killed by its PID. JOBLET_BUILD names the build directory.
"""
import datetime
import os
import re
import shutil
import socket
import stat
import subprocess
import time

import pytest

import certs as certs_py
from conftest import BUILD, free_port

JOBLET = os.path.join(BUILD, "joblet")
TOOLS = ("certtool", "openssl", "gnutls-cli", "gnutls-serv")
pytestmark = pytest.mark.skipif(not all(shutil.which(t) for t in TOOLS),
                                reason="needs " + ", ".join(TOOLS) + " (gnutls-bin, openssl)")
SERIAL = re.compile(r"^[0-9a-f]{32}$")


def cert(*args, ok=True):
    p = subprocess.run([JOBLET, "cert", *args], capture_output=True, text=True, timeout=60)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


def tool(*args, check=True):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=60)
    if check:
        assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p


def x509_text(path):
    return tool("openssl", "x509", "-in", path, "-noout", "-text").stdout


def certtool_info(path):
    return tool("certtool", "-i", "--infile", path).stdout


def not_after(path):
    out = tool("openssl", "x509", "-in", path, "-noout", "-enddate").stdout.strip()
    return datetime.datetime.strptime(out.split("=", 1)[1], "%b %d %H:%M:%S %Y %Z").replace(
        tzinfo=datetime.timezone.utc)


def days_left(path):
    """How many days the certificate has left, as a float: compared with the days asked for,
    give or take one (the clock moves while the test runs)."""
    return (not_after(path) - datetime.datetime.now(datetime.timezone.utc)).total_seconds() / 86400


def serial_of(path):
    return tool("openssl", "x509", "-in", path, "-noout", "-serial").stdout.strip().split("=", 1)[1].lower()


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def pki(tmp_path):
    """A CA, a server certificate for 127.0.0.1/::1/localhost and alice, a developer."""
    d = str(tmp_path / "pki")
    cert("init", "--dir", d)
    cert("server", "--dir", d, "--name", "node1.example.com", "--san", "localhost,127.0.0.1", "--san", "::1")
    cert("client", "--dir", d, "--user", "alice", "--role", "developer", "--address", "127.0.0.1:7443")
    return d


# ---- what the certificates are ------------------------------------------------------------

def test_ca(tmp_path):
    d = str(tmp_path / "new" / "pki")
    p = cert("init", "--dir", d)
    assert "SHA-256 fingerprint" in p.stdout
    assert mode(d) == 0o700
    ca, key = os.path.join(d, "ca.pem"), os.path.join(d, "ca-key.pem")
    assert mode(key) == 0o600 and mode(ca) == 0o644
    text = x509_text(ca)
    assert f"Subject: CN = joblet CA {socket.gethostname()}" in text
    assert f"Issuer: CN = joblet CA {socket.gethostname()}" in text
    assert re.search(r"X509v3 Basic Constraints: critical\n\s+CA:TRUE", text), text
    assert re.search(r"X509v3 Key Usage: critical\n\s+Certificate Sign, CRL Sign\n", text), text
    assert "X509v3 Subject Key Identifier" in text
    assert "ASN1 OID: prime256v1" in text and "NIST CURVE: P-256" in text
    assert "Signature Algorithm: ecdsa-with-SHA256" in text
    info = certtool_info(ca)
    assert "Certificate Authority (CA): TRUE" in info and "Curve:\tSECP256R1" in info
    assert abs(days_left(ca) - 3650) < 1
    # the serial: 16 bytes, positive
    s = serial_of(ca)
    assert SERIAL.match(s) and int(s[0], 16) < 8, s
    # the key: PKCS#8, not encrypted, P-256, the certificate's
    pem = open(key).read()
    assert pem.startswith("-----BEGIN PRIVATE KEY-----\n"), pem[:40]
    assert "ASN1 OID: prime256v1" in tool("openssl", "pkey", "-in", key, "-noout", "-text").stdout
    assert tool("openssl", "pkey", "-in", key, "-pubout").stdout == \
        tool("openssl", "x509", "-in", ca, "-noout", "-pubkey").stdout
    assert tool("openssl", "verify", "-CAfile", ca, ca).stdout.strip() == f"{ca}: OK"
    # --days; a record of it in issued/
    d2 = str(tmp_path / "short")
    cert("init", "--dir", d2, "--days", "20")
    assert abs(days_left(os.path.join(d2, "ca.pem")) - 20) < 1
    assert os.listdir(os.path.join(d2, "issued")) == [serial_of(os.path.join(d2, "ca.pem")) + ".pem"]


def test_server_certificate(pki):
    srv, ca = os.path.join(pki, "server.pem"), os.path.join(pki, "ca.pem")
    assert mode(os.path.join(pki, "server-key.pem")) == 0o600
    text = x509_text(srv)
    assert "Subject: CN = node1.example.com\n" in text
    # --name first, then --san's items in order: IP literals as IP addresses, the rest DNS names
    sans = re.search(r"X509v3 Subject Alternative Name: \n\s+(.*)\n", text).group(1)
    assert sans == "DNS:node1.example.com, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1", sans
    assert re.search(r"X509v3 Basic Constraints: critical\n\s+CA:FALSE", text), text
    assert re.search(r"X509v3 Key Usage: critical\n\s+Digital Signature\n", text), text
    assert re.search(r"X509v3 Extended Key Usage: \n\s+TLS Web Server Authentication\n", text), text
    assert "NIST CURVE: P-256" in text and "Signature Algorithm: ecdsa-with-SHA256" in text
    ski = re.search(r"Subject Key Identifier: \n\s+(\S+)", x509_text(ca)).group(1)
    assert re.search(r"X509v3 Authority Key Identifier: \n\s+(keyid:)?" + re.escape(ski), text), text
    assert abs(days_left(srv) - 730) < 1
    assert SERIAL.match(serial_of(srv))
    info = certtool_info(srv)
    assert "IPAddress: 127.0.0.1" in info and "IPAddress: ::1" in info and "DNSname: localhost" in info
    assert "TLS WWW Server." in info and "TLS WWW Client." not in info
    # the chain, the purpose, the names
    assert tool("openssl", "verify", "-CAfile", ca, "-purpose", "sslserver", srv).stdout.strip() == f"{srv}: OK"
    assert tool("openssl", "verify", "-CAfile", ca, "-purpose", "sslclient", srv, check=False).returncode != 0
    v = tool("certtool", "--verify", "--load-ca-certificate", ca, "--infile", srv).stdout
    assert "Chain verification output: Verified." in v, v
    for flag, name in (("-checkhost", "node1.example.com"), ("-checkhost", "localhost"), ("-checkip", "127.0.0.1"),
                       ("-checkip", "::1")):
        out = tool("openssl", "x509", "-in", srv, "-noout", flag, name).stdout
        assert "does match certificate" in out and "NOT" not in out, out
    for flag, name in (("-checkhost", "node2.example.com"), ("-checkip", "10.0.0.1"), ("-checkhost", "127.0.0.1")):
        assert "does NOT match" in tool("openssl", "x509", "-in", srv, "-noout", flag, name).stdout


def test_server_name_not_repeated_and_ip_name(tmp_path):
    d = str(tmp_path / "pki")
    cert("init", "--dir", d)
    cert("server", "--dir", d, "--name", "10.1.2.3", "--san", "node1,10.1.2.3,NODE1,[fd00::7]", "--days", "90")
    text = x509_text(os.path.join(d, "server.pem"))
    assert "Subject: CN = 10.1.2.3\n" in text
    sans = re.search(r"X509v3 Subject Alternative Name: \n\s+(.*)\n", text).group(1)
    assert sans == "IP Address:10.1.2.3, DNS:node1, IP Address:FD00:0:0:0:0:0:0:7", sans
    assert abs(days_left(os.path.join(d, "server.pem")) - 90) < 1


def test_client_certificate_and_node_file(pki):
    alice, ca, key = (os.path.join(pki, f) for f in ("alice.pem", "ca.pem", "alice-key.pem"))
    assert mode(key) == 0o600 and mode(alice) == 0o644
    text = x509_text(alice)
    assert "Subject: OU = developer, CN = alice\n" in text
    assert "Subject: CN=alice,OU=developer\n" in certtool_info(alice)
    assert re.search(r"X509v3 Basic Constraints: critical\n\s+CA:FALSE", text), text
    assert re.search(r"X509v3 Key Usage: critical\n\s+Digital Signature\n", text), text
    assert re.search(r"X509v3 Extended Key Usage: \n\s+TLS Web Client Authentication\n", text), text
    assert "Subject Alternative Name" not in text
    assert "NIST CURVE: P-256" in text and "Signature Algorithm: ecdsa-with-SHA256" in text
    assert abs(days_left(alice) - 365) < 1
    assert tool("openssl", "verify", "-CAfile", ca, "-purpose", "sslclient", alice).stdout.strip() == f"{alice}: OK"
    assert tool("openssl", "verify", "-CAfile", ca, "-purpose", "sslserver", alice, check=False).returncode != 0
    assert open(key).read().startswith("-----BEGIN PRIVATE KEY-----\n")
    assert tool("openssl", "pkey", "-in", key, "-pubout").stdout == \
        tool("openssl", "x509", "-in", alice, "-noout", "-pubkey").stdout
    # the node file: mode 0600, its two comment lines, exactly its keys, the PEM blocks as written
    yml = os.path.join(pki, "alice.rnx.yml")
    assert mode(yml) == 0o600
    body = open(yml).read()
    lines = body.split("\n")
    assert re.fullmatch(r"# rnx node file for alice \(developer\), made by joblet cert client on "
                        r"\d{4}-\d\d-\d\d\.", lines[0]), lines[0]
    assert lines[1] == "# Use it: rnx node add NAME alice.rnx.yml   (it holds alice's private key: keep it private)"
    assert lines[2:5] == ["address: 127.0.0.1:7443", "user: alice", "role: developer"]
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(body)
    assert list(doc) == ["address", "user", "role", "ca", "cert", "key"]
    assert doc["address"] == "127.0.0.1:7443" and doc["user"] == "alice" and doc["role"] == "developer"
    assert doc["ca"] == open(ca).read() and doc["cert"] == open(alice).read() and doc["key"] == open(key).read()
    # an IPv6 address, --days, every role
    for user, role in (("bob", "reader"), ("carol", "maintainer"), ("dave", "admin")):
        cert("client", "--dir", pki, "--user", user, "--role", role, "--address", "[::1]:7443", "--days", "30")
        doc = yaml.safe_load(open(os.path.join(pki, f"{user}.rnx.yml")))
        assert doc["address"] == "[::1]:7443" and doc["role"] == role
        assert f"Subject: OU = {role}, CN = {user}\n" in x509_text(os.path.join(pki, f"{user}.pem"))
        assert abs(days_left(os.path.join(pki, f"{user}.pem")) - 30) < 1
    # nothing left behind by the atomic writes
    assert not [f for f in os.listdir(pki) if f.startswith(".")], os.listdir(pki)


def test_client_warns_when_the_server_certificate_lacks_the_host(pki):
    p = cert("client", "--dir", pki, "--user", "erin", "--role", "reader", "--address", "node2.example.com:7443")
    assert "server.pem has no name node2.example.com" in p.stderr, p.stderr
    for addr in ("localhost:7443", "[::1]:7443", "node1.example.com:7443"):
        p = cert("client", "--dir", pki, "--user", "erin", "--role", "reader", "--address", addr, "--force")
        assert "has no name" not in p.stderr, (addr, p.stderr)


# ---- real TLS handshakes ------------------------------------------------------------------

def serve(argv, port, log):
    """Starts a TLS server on 127.0.0.1:port and waits until it accepts connections."""
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{argv[0]} exited {proc.returncode}: {open(log.name).read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    proc.wait()
    raise AssertionError(f"{argv[0]} did not listen on 127.0.0.1:{port}")


def stop(proc):
    if proc.poll() is None:
        os.kill(proc.pid, 9)
    proc.wait()


def gnutls_get(port, ca, crt, key):
    """GET / over TLS with gnutls-cli, which checks the server's certificate against ca and its
    name against 127.0.0.1, and presents crt as the client's: (returncode, output)."""
    p = subprocess.run(["gnutls-cli", "--x509cafile", ca, "--x509certfile", crt, "--x509keyfile", key,
                        "-p", str(port), "127.0.0.1"], input=b"GET / HTTP/1.0\r\n\r\n", capture_output=True,
                       timeout=60)
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace")


def test_tls_handshake_with_gnutls_serv(pki, tmp_path):
    """A GnuTLS server that requires a client certificate and verifies it against ca.pem, as
    joblet's listener does: alice gets in (the server sees CN=alice,OU=developer); a client
    of another CA does not."""
    other = str(tmp_path / "other")
    cert("init", "--dir", other)
    cert("client", "--dir", other, "--user", "mallory", "--role", "admin", "--address", "127.0.0.1:1")
    port = free_port()
    with open(tmp_path / "gnutls-serv.log", "w") as log:
        proc = serve(["gnutls-serv", "-p", str(port), "--x509certfile", os.path.join(pki, "server.pem"),
                      "--x509keyfile", os.path.join(pki, "server-key.pem"), "--x509cafile",
                      os.path.join(pki, "ca.pem"), "--require-client-cert", "--verify-client-cert"], port, log)
        try:
            ca = os.path.join(pki, "ca.pem")
            rc, out = gnutls_get(port, ca, os.path.join(pki, "alice.pem"), os.path.join(pki, "alice-key.pem"))
            assert rc == 0 and "HTTP/1.0 200 OK" in out, out
            assert "The certificate is trusted" in out
            assert "Subject: CN=alice,OU=developer" in out, out
            rc, out = gnutls_get(port, ca, os.path.join(other, "mallory.pem"), os.path.join(other, "mallory-key.pem"))
            assert rc != 0 and "200 OK" not in out, out
        finally:
            stop(proc)


def test_tls_handshake_with_openssl_s_server(pki, tmp_path):
    """OpenSSL's server checks the client certificate's purpose too: alice's is accepted, the
    server's own certificate presented as a client's is refused."""
    port = free_port()
    with open(tmp_path / "s_server.log", "w") as log:
        proc = serve(["openssl", "s_server", "-accept", f"127.0.0.1:{port}", "-cert", os.path.join(pki, "server.pem"),
                      "-key", os.path.join(pki, "server-key.pem"), "-CAfile", os.path.join(pki, "ca.pem"),
                      "-Verify", "1", "-verify_return_error", "-www"], port, log)
        try:
            ca = os.path.join(pki, "ca.pem")
            rc, out = gnutls_get(port, ca, os.path.join(pki, "alice.pem"), os.path.join(pki, "alice-key.pem"))
            assert rc == 0 and "HTTP/1.0 200 ok" in out, out
            assert "Subject: OU=developer, CN=alice" in out, out
            rc, out = gnutls_get(port, ca, os.path.join(pki, "server.pem"), os.path.join(pki, "server-key.pem"))
            assert rc != 0 and "200 ok" not in out, out
        finally:
            stop(proc)
    assert "unsuitable certificate purpose" in open(tmp_path / "s_server.log").read()


# ---- refusals -----------------------------------------------------------------------------

def refused(p, rc, message):
    assert p.returncode == rc, (p.returncode, p.stdout, p.stderr)
    assert message in p.stderr, p.stderr
    assert p.stdout == ""


def test_bad_command_lines(pki):
    base = ["client", "--dir", pki, "--address", "127.0.0.1:7443"]
    refused(cert(*base, "--user", "bob", "--role", "boss", ok=False), 2,
            "joblet cert client: --role: 'boss' is not a role; use reader, developer, maintainer or admin")
    for user, says in (("../x", "starts with '.'"), ("-x", "starts with '-'"), ("a/b", "has '/'"),
                       ("x" * 65, "65 characters"), ("server", "server.pem"), ("ca", "ca.pem"),
                       ("alice-key", "ends in '-key'"), ("", "empty")):
        p = cert(*base, "--user", user, "--role", "reader", ok=False)
        refused(p, 2, "--user: ")
        assert says in p.stderr and ("use 1 to 64 letters" in p.stderr or "choose another name" in p.stderr), p.stderr
    for addr, says in (("node1", "has no port"), ("::1:7443", "IPv6 address without brackets"),
                       ("node1:0", "from 1 to 65535"), ("node1:99999", "from 1 to 65535"),
                       ("[node1]:7443", "only an IPv6 address goes in brackets"), ("10.0.0:7443", "all digits"),
                       ("https://node1:7443", "is a URL"), ("bad_host:7443", "neither an IP address nor a DNS name")):
        p = cert("client", "--dir", pki, "--user", "bob", "--role", "reader", "--address", addr, ok=False)
        refused(p, 2, "--address: ")
        assert says in p.stderr and "[::1]:7443" in p.stderr, p.stderr
    refused(cert("client", "--dir", pki, "--user", "bob", "--role", "reader", ok=False), 2, "missing --address")
    refused(cert(*base, "--user", "bob", "--role", "reader", "--days", "0", ok=False), 2,
            "--days: '0' must be a number of days from 1 to 3650")
    refused(cert(*base, "--user", "bob", "--role", "reader", "--days", "3651", ok=False), 2, "from 1 to 3650")
    refused(cert(*base, "--user", "bob", "--role", "reader", "--san", "x", ok=False), 2,
            "--san is for joblet cert server")
    refused(cert("server", "--dir", pki, "--name", "n", "--san", "a,,b", ok=False), 2, "has an empty item")
    refused(cert("server", "--dir", pki, "--name", "node_1", "--san", "a", ok=False), 2,
            "--name: 'node_1' is neither an IP address nor a DNS name")
    refused(cert("server", "--dir", pki, "--name", "n", ok=False), 2, "missing --san")
    refused(cert("sign", "--dir", pki, ok=False), 2, "'sign' is not a command; use init, server, client, revoke or list")
    refused(cert("list", ok=False), 2, "missing --dir DIR")
    refused(cert("revoke", "--dir", pki, ok=False), 2, "missing NAME or SERIAL")
    # none of these wrote anything
    assert not os.path.exists(os.path.join(pki, "bob.pem"))


def test_no_ca_no_certificates(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    refused(cert("server", "--dir", str(empty), "--name", "n", "--san", "n", ok=False), 1,
            f"{empty} has no CA (no ca.pem); make one first: joblet cert init --dir {empty}")
    refused(cert("client", "--dir", str(tmp_path / "none"), "--user", "a", "--role", "reader", "--address", "h:1",
                 ok=False), 1, "no such directory; make the CA first")
    assert os.listdir(empty) == []


def test_existing_files_are_not_overwritten_without_force(pki):
    before = {f: open(os.path.join(pki, f), "rb").read() for f in ("ca.pem", "ca-key.pem", "server.pem", "alice.pem")}
    refused(cert("init", "--dir", pki, ok=False), 1, "already has a CA; pass --force to replace it")
    refused(cert("server", "--dir", pki, "--name", "n", "--san", "n", ok=False), 1, "pass --force")
    p = cert("client", "--dir", pki, "--user", "alice", "--role", "admin", "--address", "h:1", ok=False)
    refused(p, 1, f"alice already has a certificate (serial {serial_of(os.path.join(pki, 'alice.pem'))}")
    for f, data in before.items():
        assert open(os.path.join(pki, f), "rb").read() == data, f
    # --force replaces; the old CA's certificates no longer verify against the new one
    cert("init", "--dir", pki, "--force")
    assert open(os.path.join(pki, "ca.pem"), "rb").read() != before["ca.pem"]
    assert mode(os.path.join(pki, "ca-key.pem")) == 0o600
    p = tool("openssl", "verify", "-CAfile", os.path.join(pki, "ca.pem"), os.path.join(pki, "alice.pem"), check=False)
    assert p.returncode != 0


def test_symlinks_are_refused_not_followed(pki, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.chmod(victim, 0o644)
    link = os.path.join(pki, "bob-key.pem")
    os.symlink(victim, link)
    p = cert("client", "--dir", pki, "--user", "bob", "--role", "reader", "--address", "h:1", "--force", ok=False)
    refused(p, 1, f"{link} is a symbolic link")
    assert os.path.islink(link) and victim.read_text() == "precious\n" and mode(victim) == 0o644
    assert not os.path.exists(os.path.join(pki, "bob.pem"))
    # the CA's key, even with --force
    key = os.path.join(pki, "ca-key.pem")
    os.unlink(key)
    os.symlink(victim, key)
    refused(cert("init", "--dir", pki, "--force", ok=False), 1, f"{key} is a symbolic link")
    assert os.path.islink(key) and victim.read_text() == "precious\n"
    # issued/ itself
    d = str(tmp_path / "pki2")
    cert("init", "--dir", d)
    os.rename(os.path.join(d, "issued"), str(tmp_path / "elsewhere"))
    os.symlink(str(tmp_path / "elsewhere"), os.path.join(d, "issued"))
    refused(cert("server", "--dir", d, "--name", "n", "--san", "n", ok=False), 1, "issued")
    assert len(os.listdir(tmp_path / "elsewhere")) == 1


# ---- revoke and list ----------------------------------------------------------------------

def revoked_lines(d):
    lines = open(os.path.join(d, "revoked.txt")).read().split("\n")
    assert lines[-1] == ""
    return [l.split(" ") for l in lines[:-1] if not l.startswith("#")]


def list_rows(d):
    p = cert("list", "--dir", d)
    lines = p.stdout.rstrip("\n").split("\n")
    assert lines[0].split() == ["KIND", "NAME", "ROLE", "SERIAL", "NOT", "AFTER", "STATUS"]
    # the CA's name has blanks ("joblet CA <hostname>"); no other column has
    row = re.compile(r"^(\S+) +(\S.*?) +(\S+) +([0-9a-f]+) +(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) +(\S.*)$")
    rows = [row.match(l) for l in lines[1:]]
    assert all(rows), lines
    return [list(m.groups()) for m in rows]


def test_revoke_by_name_and_serial_and_list(pki):
    cert("client", "--dir", pki, "--user", "bob", "--role", "reader", "--address", "h:1")
    alice, bob = serial_of(os.path.join(pki, "alice.pem")), serial_of(os.path.join(pki, "bob.pem"))
    rows = {r[3]: r for r in list_rows(pki)}
    assert rows[alice][:3] == ["client", "alice", "developer"] and rows[alice][5] == "valid"
    assert rows[bob][:3] == ["client", "bob", "reader"]
    assert rows[serial_of(os.path.join(pki, "server.pem"))][:3] == ["server", "node1.example.com", "-"]
    assert rows[serial_of(os.path.join(pki, "ca.pem"))][0] == "ca"
    assert len(rows) == 4
    # by name
    p = cert("revoke", "--dir", pki, "alice")
    assert f"revoked client alice (serial {alice})" in p.stdout and "SIGHUP" in p.stdout
    [[s, name, when]] = revoked_lines(pki)
    assert (s, name) == (alice, "alice")
    assert abs(datetime.datetime.strptime(when, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc) -
               datetime.datetime.now(datetime.timezone.utc)) < datetime.timedelta(days=1)
    text = open(os.path.join(pki, "revoked.txt")).read()
    assert text.startswith("# ")
    assert mode(os.path.join(pki, "revoked.txt")) == 0o644
    # again: nothing changes
    p = cert("revoke", "--dir", pki, "alice")
    assert "already revoked" in p.stdout
    assert open(os.path.join(pki, "revoked.txt")).read() == text
    # by serial, as openssl prints it (upper case, colons): written as lowercase hex
    typed = ":".join(bob.upper()[i:i + 2] for i in range(0, len(bob), 2))
    cert("revoke", "--dir", pki, typed)
    assert [l[:2] for l in revoked_lines(pki)] == [[alice, "alice"], [bob, "bob"]]
    rows = {r[3]: r for r in list_rows(pki)}
    assert rows[alice][5].startswith("revoked ") and rows[bob][5].startswith("revoked ")
    assert rows[serial_of(os.path.join(pki, "server.pem"))][5] == "valid"
    # refusals: an unknown serial, an unknown name, the CA, the server by name
    refused(cert("revoke", "--dir", pki, "7f" * 16, ok=False), 1, "joblet cert list --dir")
    # a user name without a certificate is not found (1), as an unknown serial is; a malformed one is
    # a bad command line (2)
    refused(cert("revoke", "--dir", pki, "nobody", ok=False), 1, "'nobody' is neither a user with a certificate")
    refused(cert("revoke", "--dir", pki, "a/b", ok=False), 2, "'a/b' is neither a user with a certificate")
    refused(cert("revoke", "--dir", pki, serial_of(os.path.join(pki, "ca.pem")), ok=False), 1, "the CA's serial")
    refused(cert("revoke", "--dir", pki, "server", ok=False), 2, "revoke the server's certificate by its serial")
    assert len(revoked_lines(pki)) == 2
    assert not [f for f in os.listdir(pki) if f.startswith(".")], os.listdir(pki)


def test_a_replaced_certificate_stays_listed_and_revocable(pki):
    old = serial_of(os.path.join(pki, "alice.pem"))
    p = cert("client", "--dir", pki, "--user", "alice", "--role", "admin", "--address", "h:1", "--force")
    assert f"previous certificate (serial {old}) is still accepted" in p.stderr, p.stderr
    new = serial_of(os.path.join(pki, "alice.pem"))
    rows = {r[3]: r for r in list_rows(pki)}
    assert rows[old][:3] == ["client", "alice", "developer"] and rows[old][5] == "valid (replaced)"
    assert rows[new][:3] == ["client", "alice", "admin"] and rows[new][5] == "valid"
    cert("revoke", "--dir", pki, old)
    assert revoked_lines(pki)[0][:2] == [old, "alice"]
    rows = {r[3]: r for r in list_rows(pki)}
    assert rows[old][5].startswith("revoked ") and rows[new][5] == "valid"
    # a replaced CA: what it made is listed as no longer accepted
    cert("init", "--dir", pki, "--force")
    rows = {r[3]: r for r in list_rows(pki)}
    assert rows[new][5] == "made by a replaced CA (not accepted)"
    assert sorted(r[5] for r in rows.values() if r[0] == "ca") == ["replaced (not accepted)", "valid"]


def test_more_bad_command_lines(pki):
    """Each refused with exit 2 and what would be accepted, nothing written."""
    before = sorted(os.listdir(pki))
    refused(cert("list", "--dir", ok=False), 2, "joblet cert list: --dir needs a value; see joblet cert list --help")
    refused(cert("list", "--dir", pki, "--colour", ok=False), 2,
            "joblet cert list: unknown option '--colour'; see joblet cert list --help")
    refused(cert("list", "--dir", pki, "extra", ok=False), 2,
            "joblet cert list: unexpected argument 'extra'; see joblet cert list --help")
    refused(cert("revoke", "--dir", pki, "alice", "bob", ok=False), 2,
            "joblet cert revoke: unexpected argument 'bob'")
    refused(cert("list", "--dir", "", ok=False), 2, "joblet cert list: --dir: empty; name the CA's directory")
    sans = [a for i in range(33) for a in ("--san", f"n{i}.example.com")]
    refused(cert("server", "--dir", pki, "--name", "n", *sans, ok=False), 2,
            "joblet cert server: --san: more than 32; give at most 32 names")
    refused(cert("server", "--dir", pki, "--name", "n", "--san", ",".join(f"n{i}" for i in range(33)), ok=False),
            2, "--san: more than 32 names; give at most 32")
    refused(cert("server", "--dir", pki, "--name", "n", "--san", "a" * 300, ok=False), 2,
            "--san: an item is longer than 253 characters")
    refused(cert("server", "--dir", pki, "--name", ".".join(["a" * 20] * 4), "--san", "x", ok=False), 2,
            "--name: longer than 64 characters, the most a certificate's CN holds; give a shorter name and the long "
            "one in --san")
    assert sorted(os.listdir(pki)) == before


def test_a_damaged_ca_is_refused_naming_its_file(pki):
    """A CA directory whose ca.pem or ca-key.pem was damaged or swapped signs nothing: exit 1,
    the file named and what is wrong with it; no certificate is written."""
    ca, key = os.path.join(pki, "ca.pem"), os.path.join(pki, "ca-key.pem")
    good_ca, good_key = open(ca, "rb").read(), open(key, "rb").read()

    def issue():
        return cert("client", "--dir", pki, "--user", "bob", "--role", "reader", "--address", "h:1", ok=False)

    damage = [
        (ca, b"not a certificate\n", f"{pki}/ca.pem is not a PEM certificate"),
        (ca, open(os.path.join(pki, "server.pem"), "rb").read(),
         f"{pki}/ca.pem is not a CA's certificate (no basicConstraints CA:TRUE)"),
        (key, None, f"read {pki}/ca-key.pem, the CA's key"),
        (key, b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
         f"{pki}/ca-key.pem is not an unencrypted PEM private key"),
        (key, open(os.path.join(pki, "alice-key.pem"), "rb").read(), f"{pki}/ca-key.pem is not the key of {pki}/ca.pem"),
    ]
    for path, text, says in damage:
        if text is None:
            os.unlink(path)
        else:
            with open(path, "wb") as f:
                f.write(text)
        refused(issue(), 1, says)
        assert not os.path.exists(os.path.join(pki, "bob.pem"))
        for p, t in ((ca, good_ca), (key, good_key)):
            with open(p, "wb") as f:
                f.write(t)
            os.chmod(p, 0o600 if p == key else 0o644)
    assert issue().returncode == 0   # mended: it signs again


def test_a_certificate_ends_with_its_ca(tmp_path):
    """A CA of 2 days signs a client's certificate for 30: the certificate ends when the CA does
    (a chain is not valid past its CA), and joblet cert says so."""
    d = str(tmp_path / "pki")
    cert("init", "--dir", d, "--days", "2")
    p = cert("client", "--dir", d, "--user", "bob", "--role", "reader", "--address", "h:1", "--days", "30")
    assert "joblet cert client: note: the CA expires on " in p.stderr, p.stderr
    assert "before the days asked for" in p.stderr
    assert abs((not_after(os.path.join(d, "bob.pem")) - not_after(os.path.join(d, "ca.pem"))).total_seconds()) <= 1
    assert days_left(os.path.join(d, "bob.pem")) < 2.01


def test_list_says_expired(pki):
    """A certificate of the CA's past its end (made here by certtool with the CA's key: joblet
    cert makes none that has ended) is listed as expired."""
    certs_py.client(pki, "olduser", "reader", expired=True)
    rows = {r[1]: r for r in list_rows(pki)}
    assert rows["olduser"][5] == "expired", rows
    assert rows["alice"][5] == "valid"


# ---- help ---------------------------------------------------------------------------------

def test_help():
    top = subprocess.run([JOBLET, "--help"], capture_output=True, text=True, timeout=30).stdout
    assert "joblet cert init|server|client|revoke|list" in top
    p = cert("--help")
    assert p.stdout.startswith("joblet cert - ")
    for sub in ("init", "server", "client", "revoke", "list"):
        assert re.search(rf"^  {sub} ", p.stdout, re.M), sub
        h = cert(sub, "--help").stdout
        assert h.startswith(f"joblet cert {sub} - ") and f"Usage: joblet cert {sub} --dir DIR" in h
    p = cert(ok=False)
    assert p.returncode == 2 and "Usage:" in p.stderr
