"""rnx and remote nodes: rnx node add|list|use|show|remove, --node / RNX_NODE / the default,
and rnx's TLS 1.3 client (src/cli/conn_tls.c) against a stand-in node (fake_tls_node.py:
Python's ssl, a client certificate required), with certificates made by certtool.

What is checked: the client certificate reaches the node (it sees CN alice); the server's
certificate must be signed by the node's CA, name the address dialed (an IP as an IP SAN, a DNS
name as a DNS SAN, never the CN) and allow TLS server use; TLS 1.2 is refused; what a refusal
says; nodes.yml's mode; streaming, uploads and downloads over TLS, byte for byte; rnx console
through a node; and that the local socket's path loads no TLS code.

Servers are started as processes and ended by their PID; everything listens on loopback."""
import hashlib
import json
import os
import random
import re
import signal
import stat
import subprocess
import sys
import time

import pytest

from conftest import BUILD, SANITIZER_MARKS
from console_util import Console

HERE = os.path.dirname(os.path.abspath(__file__))
RNX = os.path.join(BUILD, "rnx")
FAKE = os.path.join(HERE, "fake_tls_node.py")
NO_DAEMON = "/nonexistent/joblet-test-nodes.sock"
BLOB_SIZE = 3 * 1024 * 1024 + 12345   # fake_tls_node.BLOB_SIZE


def blob():
    return random.Random(7).randbytes(BLOB_SIZE)


# ---- certificates -------------------------------------------------------------------------

def certtool(*args):
    p = subprocess.run(["certtool", *args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def make_key(path):
    certtool("--generate-privkey", "--key-type=ecdsa", "--curve=secp256r1", "--no-text", "--outfile", path)


def make_cert(d, name, template, key, ca=None):
    tmpl = os.path.join(d, name + ".tmpl")
    with open(tmpl, "w") as f:
        f.write(template + "expiration_days = 30\n")
    out = os.path.join(d, name + ".pem")
    if ca:
        certtool("--generate-certificate", "--load-privkey", key, "--load-ca-certificate", ca + ".pem",
                 "--load-ca-privkey", ca + ".key", "--template", tmpl, "--no-text", "--outfile", out)
    else:
        certtool("--generate-self-signed", "--load-privkey", key, "--template", tmpl, "--no-text", "--outfile", out)
    return out


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("pki"))
    p = {}
    for k in ("ca", "ca2", "srv", "cli"):
        make_key(os.path.join(d, k + ".key"))
        p[k + ".key"] = os.path.join(d, k + ".key")
    ca_t = "ca\ncert_signing_key\n"
    p["ca"] = make_cert(d, "ca", 'cn = "test node CA"\n' + ca_t, p["ca.key"])
    p["ca2"] = make_cert(d, "ca2", 'cn = "another CA"\n' + ca_t, p["ca2.key"])
    ca, ca2 = os.path.join(d, "ca"), os.path.join(d, "ca2")
    server = 'dns_name = "localhost"\nip_address = "127.0.0.1"\ntls_www_server\nsigning_key\n'
    p["srv"] = make_cert(d, "srv", 'cn = "node-1"\n' + server, p["srv.key"], ca)
    # named by its CN only as a DNS name: rnx must not take the CN
    p["srv_cn"] = make_cert(d, "srv_cn", 'cn = "localhost"\nip_address = "127.0.0.1"\ntls_www_server\nsigning_key\n',
                            p["srv.key"], ca)
    p["srv6"] = make_cert(d, "srv6", 'cn = "node-1"\nip_address = "::1"\ntls_www_server\nsigning_key\n', p["srv.key"], ca)
    p["srv_other"] = make_cert(d, "srv_other", 'cn = "node-1"\n' + server, p["srv.key"], ca2)
    p["srv_client_eku"] = make_cert(d, "srv_client_eku", 'cn = "node-1"\ndns_name = "localhost"\n'
                                    'ip_address = "127.0.0.1"\ntls_www_client\nsigning_key\n', p["srv.key"], ca)
    client = 'cn = "alice"\nunit = "developer"\ntls_www_client\nsigning_key\n'
    p["cli"] = make_cert(d, "cli", client, p["cli.key"], ca)
    p["cli_other"] = make_cert(d, "cli_other", client, p["cli.key"], ca2)
    p["dir"] = d
    return p


def node_file(path, addr, ca, cert, key, **override):
    """A node file as `joblet cert client` writes it (override: a field's raw text)."""
    def block(f):
        return "|\n" + "".join("  " + line for line in open(f))
    fields = {"address": addr, "user": "alice", "role": "developer", "ca": block(ca), "cert": block(cert),
              "key": block(key)}
    fields.update(override)
    with open(path, "w") as f:
        f.write("# a node of joblet, written by joblet cert client\n")
        for k, v in fields.items():
            if v is not None:
                f.write(f"{k}: {v}\n" if not v.startswith("|") else f"{k}: {v}")
    os.chmod(path, 0o600)
    return path


# ---- the stand-in node --------------------------------------------------------------------

class FakeNode:
    def __init__(self, d, pki, cert="srv", binds=("127.0.0.1",), tls12=False):
        self.dir = d
        self.ports_file = os.path.join(d, f"ports-{cert}-{len(os.listdir(d))}.json")
        self.log = self.ports_file.replace(".json", ".ndjson")
        args = [sys.executable, FAKE, "--cert", pki[cert], "--key", pki["srv.key"], "--ca", pki["ca"],
                "--ports", self.ports_file, "--log", self.log]
        for b in binds:
            args += ["--bind", b]
        if tls12:
            args.append("--tls12")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(300):
            if os.path.exists(self.ports_file) or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        assert os.path.exists(self.ports_file), self.proc.stderr.read().decode() if self.proc.poll() is not None else ""
        with open(self.ports_file) as f:
            self.ports = json.load(f)
        self.port = self.ports[binds[0]]

    def records(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f if line.strip()]

    def requests(self, port=None):
        return [r for r in self.records() if "method" in r and (port is None or r["port"] == port)]

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            self.proc.wait()


@pytest.fixture
def fake(tmp_path, pki):
    nodes = []

    def start(**kw):
        n = FakeNode(str(tmp_path), pki, **kw)
        nodes.append(n)
        return n

    yield start
    for n in nodes:
        n.stop()


@pytest.fixture
def env(tmp_path):
    """rnx's environment: its own HOME and nodes.yml, no daemon socket."""
    home = tmp_path / "home"
    home.mkdir()
    # no keeper (src/cli/conn_agent.h): each command dials the stand-in itself, whose log then
    # holds exactly the command's requests; test_remote_nodes.py tests the keeper on joblet
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "RNX_CONFIG": str(tmp_path / "cfg" / "nodes.yml"), "RNX_PERSIST": "0",
            **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}}


def rnx(env, *args, stdin=None, more=None):
    e = dict(env)
    e.update(more or {})
    p = subprocess.run([RNX, *args], capture_output=True, env=e, timeout=120,
                       input=stdin if stdin is not None else b"")
    for mark in SANITIZER_MARKS:
        assert mark not in p.stderr.decode(errors="replace"), p.stderr.decode(errors="replace")
    return p


def out(p):
    return p.stdout.decode(errors="replace")


def err(p):
    return p.stderr.decode(errors="replace")


def add(env, tmp_path, pki, name, address, ca="ca", cert="cli", key="cli.key", **override):
    f = node_file(str(tmp_path / f"{name}.rnx.yml"), address, pki[ca], pki[cert], pki[key], **override)
    p = rnx(env, "node", "add", name, f)
    assert p.returncode == 0, err(p)
    return p


# ---- rnx node -----------------------------------------------------------------------------

def test_node_add_list_use_show_remove(env, tmp_path, pki):
    p = add(env, tmp_path, pki, "gpu-1", "127.0.0.1:7443")
    assert "node gpu-1 added: 127.0.0.1:7443, as alice (developer)" in out(p)
    conf = env["RNX_CONFIG"]
    assert stat.S_IMODE(os.stat(conf).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(conf)).st_mode) == 0o700
    assert "PRIVATE KEY" in open(conf).read()   # the key is rnx's now

    p = rnx(env, "node", "list")
    assert p.returncode == 0, err(p)
    rows = [line.split() for line in out(p).splitlines()]
    assert rows[0] == ["CURRENT", "NAME", "ADDRESS", "USER", "ROLE"]
    assert ["*", "local", "unix:/run/joblet/joblet.sock", "-", "-"] in rows
    assert ["gpu-1", "127.0.0.1:7443", "alice", "developer"] in rows

    # an existing name: --force replaces it
    f = node_file(str(tmp_path / "again.rnx.yml"), "[::1]:7444", pki["ca"], pki["cli"], pki["cli.key"])
    p = rnx(env, "node", "add", "gpu-1", f)
    assert p.returncode == 1 and "there is a node 'gpu-1' already (127.0.0.1:7443); --force replaces it" in err(p)
    p = rnx(env, "node", "add", "--force", "gpu-1", f)
    assert p.returncode == 0, err(p)

    p = rnx(env, "node", "use", "gpu-1")
    assert p.returncode == 0 and "node gpu-1 is the default" in out(p), err(p)
    p = rnx(env, "--json", "node", "list")
    got = {n["name"]: n for n in json.loads(out(p))}
    assert got["gpu-1"] == {"name": "gpu-1", "address": "[::1]:7444", "user": "alice", "role": "developer",
                            "current": True}
    assert got["local"]["current"] is False
    assert "* " in [line for line in out(rnx(env, "node", "list")).splitlines() if "gpu-1" in line][0]

    p = rnx(env, "node", "show")   # the default
    assert p.returncode == 0, err(p)
    text = out(p)
    assert "node:     gpu-1 (the default)" in text
    assert "address:  [::1]:7444" in text
    assert "cert:     CN=alice,OU=developer" in text
    assert re.search(r"serial:   [0-9a-f]{16,}", text), text
    assert re.search(r"expires:  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(in (29|30) days\)", text), text
    assert "ca:       CN=test node CA" in text
    assert "PRIVATE" not in text and "BEGIN" not in text
    p = rnx(env, "node", "show", "--json", "gpu-1")
    shown = json.loads(out(p))
    assert shown["cert"]["subject"] == "CN=alice,OU=developer" and shown["ca"]["subject"] == "CN=test node CA"
    assert "key" not in shown and "PRIVATE" not in out(p)

    # a local socket as a node: --node reaches that socket
    p = rnx(env, "node", "add", "dev", "--socket", NO_DAEMON)
    assert p.returncode == 0, err(p)
    p = rnx(env, "--node", "dev", "job", "list")
    assert p.returncode == 1 and f"cannot reach joblet at {NO_DAEMON}" in err(p)

    p = rnx(env, "node", "remove", "gpu-1")
    assert p.returncode == 0 and "it was the default" in out(p), err(p)
    rows = out(rnx(env, "node", "list")).splitlines()
    assert not any("gpu-1" in r for r in rows) and any(r.startswith("*") and "local" in r for r in rows)
    p = rnx(env, "node", "remove", "gpu-1")
    assert p.returncode == 1 and "no node 'gpu-1'" in err(p)
    assert stat.S_IMODE(os.stat(conf).st_mode) == 0o600


def test_node_add_checks_every_field(env, tmp_path, pki):
    cases = [
        ({"role": "root"}, "role: 'root' is not a role; one of reader, developer, operator, maintainer, admin"),
        ({"address": "gpu-1"}, "address: 'gpu-1' has no port"),
        ({"address": "::1:7443"}, "write an IPv6 address in brackets"),
        ({"user": None}, "user: missing"),
        ({"color": "blue"}, "color: unknown key"),
    ]
    for override, says in cases:
        f = node_file(str(tmp_path / "bad.rnx.yml"), "127.0.0.1:7443", pki["ca"], pki["cli"], pki["cli.key"],
                      **override)
        p = rnx(env, "node", "add", "bad", f)
        assert p.returncode == 1 and says in err(p), (override, err(p))
    # GnuTLS reads them too: the key must be the certificate's
    f = node_file(str(tmp_path / "mismatch.rnx.yml"), "127.0.0.1:7443", pki["ca"], pki["cli"], pki["srv.key"])
    p = rnx(env, "node", "add", "bad", f)
    assert p.returncode == 1 and "key: it is not the private key of the certificate in cert" in err(p), err(p)
    f = node_file(str(tmp_path / "good.rnx.yml"), "127.0.0.1:7443", pki["ca"], pki["cli"], pki["cli.key"])
    for name, says in (("local", "means the local socket"), ("a/b", "has '/'"), ("x" * 65, "1 to 64")):
        p = rnx(env, "node", "add", name, f)
        assert p.returncode == 2 and says in err(p), (name, err(p))
    assert not os.path.exists(env["RNX_CONFIG"])   # nothing was written


def test_nodes_yml_open_to_others_is_refused(env, tmp_path, pki):
    add(env, tmp_path, pki, "n1", "127.0.0.1:7443")
    conf = env["RNX_CONFIG"]
    os.chmod(conf, 0o644)
    for args in (["node", "list"], ["job", "list"], ["--node", "n1", "job", "list"]):
        p = rnx(env, *args)
        assert p.returncode == 1, args
        assert f"{conf}: its permissions 0644 let others read it, and it holds private keys" in err(p), err(p)
        assert f"chmod 600 {conf}" in err(p)
    # with a socket named, rnx does not read it
    p = rnx(env, "--socket", NO_DAEMON, "job", "list")
    assert f"cannot reach joblet at {NO_DAEMON}" in err(p)
    os.chmod(conf, 0o600)
    assert rnx(env, "node", "list").returncode == 0


def test_node_and_socket_together_is_a_usage_error(env, tmp_path, pki):
    add(env, tmp_path, pki, "n1", "127.0.0.1:7443")
    p = rnx(env, "--node", "n1", "--socket", NO_DAEMON, "job", "list")
    assert p.returncode == 2 and "--node and --socket" in err(p)
    p = rnx(env, "--node", "n2", "job", "list")
    assert p.returncode == 2 and "no node 'n2'" in err(p) and "did you mean 'n1'?" in err(p)


# ---- over TLS -----------------------------------------------------------------------------

def test_job_list_reaches_the_node_with_the_client_certificate(env, tmp_path, pki, fake):
    n = fake()
    add(env, tmp_path, pki, "n1", f"127.0.0.1:{n.port}")
    p = rnx(env, "--node", "n1", "job", "list")
    assert p.returncode == 0, err(p)
    assert "remote-job" in out(p) and "echo over tls" in out(p)
    reqs = n.requests()
    # (the table asks only for the keys it prints: ?fields=...; whoami is asked first now, as
    # the rows are made while the jobs come, and was asked after before: the order is not
    # what is checked)
    assert sorted(r["path"].split("?fields=")[0] for r in reqs) == ["/v1/jobs", "/v1/whoami"], reqs
    assert all(r["cn"] == "alice" and r["version"] == "TLSv1.3" for r in reqs), reqs
    assert all(r["host"] == f"127.0.0.1:{n.port}" for r in reqs), reqs   # Host: the address dialed
    p = rnx(env, "--node", "n1", "--json", "job", "list")
    assert json.loads(out(p))[0]["name"] == "remote-job"
    p = rnx(env, "--node", "n1", "--version")
    assert p.returncode == 0 and "joblet fake-node-1" in out(p), err(p)


def test_the_default_node_and_rnx_node(env, tmp_path, pki, fake):
    n = fake()
    add(env, tmp_path, pki, "n1", f"127.0.0.1:{n.port}")
    # no node chosen: the local socket, as always
    p = rnx(env, "job", "list", more={"JOBLET_SOCKET": NO_DAEMON})
    assert f"cannot reach joblet at {NO_DAEMON}" in err(p)
    # RNX_NODE (over JOBLET_SOCKET too)
    p = rnx(env, "job", "list", more={"RNX_NODE": "n1", "JOBLET_SOCKET": NO_DAEMON})
    assert p.returncode == 0 and "remote-job" in out(p), err(p)
    assert len(n.requests()) == 2
    # the default
    assert rnx(env, "node", "use", "n1").returncode == 0
    p = rnx(env, "job", "list")
    assert p.returncode == 0 and "remote-job" in out(p), err(p)
    # --socket and --node local go to the local socket whatever the default
    p = rnx(env, "--socket", NO_DAEMON, "job", "list")
    assert p.returncode == 1 and f"cannot reach joblet at {NO_DAEMON}" in err(p)
    p = rnx(env, "--node", "local", "job", "list", more={"JOBLET_SOCKET": NO_DAEMON})
    assert p.returncode == 1 and f"cannot reach joblet at {NO_DAEMON}" in err(p)
    assert rnx(env, "node", "use", "local").returncode == 0
    p = rnx(env, "job", "list", more={"JOBLET_SOCKET": NO_DAEMON})
    assert f"cannot reach joblet at {NO_DAEMON}" in err(p)
    assert len(n.requests()) == 4


def test_a_dns_name_is_checked_against_the_dns_sans(env, tmp_path, pki, fake):
    n = fake()
    add(env, tmp_path, pki, "byname", f"localhost:{n.port}")
    p = rnx(env, "--node", "byname", "job", "list")
    assert p.returncode == 0, err(p)
    assert n.requests()[0]["host"] == f"localhost:{n.port}"
    # a certificate that names localhost in its CN only (and 127.0.0.1 as an IP): refused by name...
    m = fake(cert="srv_cn")
    add(env, tmp_path, pki, "cn", f"localhost:{m.port}")
    p = rnx(env, "--node", "cn", "job", "list")
    assert p.returncode == 1
    assert (f"node cn (localhost:{m.port}): the server's certificate does not name localhost (it names 127.0.0.1)"
            in err(p)), err(p)
    assert "refusing to talk to it" in err(p)
    # ... taken by its IP
    add(env, tmp_path, pki, "cnip", f"127.0.0.1:{m.port}")
    assert rnx(env, "--node", "cnip", "job", "list").returncode == 0
    assert len(m.requests()) == 2


def test_an_ipv6_address_in_brackets(env, tmp_path, pki, fake):
    n = fake(cert="srv6", binds=("::1",))
    add(env, tmp_path, pki, "v6", f"[::1]:{n.port}")
    p = rnx(env, "--node", "v6", "job", "list")
    assert p.returncode == 0, err(p)
    assert n.requests()[0]["host"] == f"[::1]:{n.port}"
    # the same certificate does not name 127.0.0.1
    m = fake(cert="srv6")
    add(env, tmp_path, pki, "v4", f"127.0.0.1:{m.port}")
    p = rnx(env, "--node", "v4", "job", "list")
    assert p.returncode == 1 and "does not name 127.0.0.1 (it names ::1)" in err(p), err(p)


def test_an_address_the_certificate_does_not_name_is_refused(env, tmp_path, pki, fake):
    n = fake(binds=("127.0.0.1", "127.0.0.2"))
    other = n.ports["127.0.0.2"]
    add(env, tmp_path, pki, "n2", f"127.0.0.2:{other}")
    p = rnx(env, "--node", "n2", "job", "list")
    assert p.returncode == 1
    assert (f"rnx: node n2 (127.0.0.2:{other}): the server's certificate does not name 127.0.0.2 "
            f"(it names localhost, 127.0.0.1)" in err(p)), err(p)
    assert "refusing to talk to it" in err(p)
    assert n.requests(port=other) == []   # nothing was sent
    add(env, tmp_path, pki, "n1", f"127.0.0.1:{n.port}")
    assert rnx(env, "--node", "n1", "job", "list").returncode == 0


def test_a_server_certificate_of_another_ca_is_refused(env, tmp_path, pki, fake):
    n = fake(cert="srv_other")
    add(env, tmp_path, pki, "n1", f"127.0.0.1:{n.port}")
    p = rnx(env, "--node", "n1", "job", "list")
    assert p.returncode == 1
    assert "the server's certificate is not signed by node n1's CA" in err(p), err(p)
    assert "The certificate issuer is unknown" in err(p)   # GnuTLS's own words, too
    assert n.requests() == []


def test_a_server_certificate_not_for_servers_is_refused(env, tmp_path, pki, fake):
    n = fake(cert="srv_client_eku")
    add(env, tmp_path, pki, "n1", f"127.0.0.1:{n.port}")
    p = rnx(env, "--node", "n1", "job", "list")
    assert p.returncode == 1
    assert "the server's certificate is not for a TLS server" in err(p), err(p)
    assert n.requests() == []


def test_tls_1_2_is_refused(env, tmp_path, pki, fake):
    n = fake(tls12=True)
    add(env, tmp_path, pki, "n1", f"127.0.0.1:{n.port}")
    p = rnx(env, "--node", "n1", "job", "list")
    assert p.returncode == 1
    assert f"node n1 (127.0.0.1:{n.port}):" in err(p) and "TLS 1.3 only" in err(p), err(p)
    assert n.requests() == []


def test_a_client_certificate_the_node_refuses(env, tmp_path, pki, fake):
    n = fake()
    add(env, tmp_path, pki, "n1", f"127.0.0.1:{n.port}", cert="cli_other")
    p = rnx(env, "--node", "n1", "job", "list")
    assert p.returncode == 1
    assert f"node n1 (127.0.0.1:{n.port})" in err(p) and "does not take rnx's client certificate" in err(p), err(p)
    assert n.requests() == []


def test_nothing_listening(env, tmp_path, pki, fake):
    n = fake()
    port = n.port
    n.stop()
    add(env, tmp_path, pki, "n1", f"127.0.0.1:{port}")
    p = rnx(env, "--node", "n1", "job", "list")
    assert p.returncode == 1
    assert f"node n1 (127.0.0.1:{port}): cannot connect to 127.0.0.1 port {port}: Connection refused" in err(p)


def test_an_ndjson_stream_over_tls(env, tmp_path, pki, fake):
    n = fake()
    add(env, tmp_path, pki, "n1", f"127.0.0.1:{n.port}")
    p = rnx(env, "--node", "n1", "--json", "runtime", "log", "7")
    assert p.returncode == 0, err(p)
    recs = [json.loads(line) for line in out(p).splitlines()]
    assert [r.get("line") for r in recs[:5]] == [f"step {i} of 5" for i in range(1, 6)]
    assert recs[-1] == {"end": True, "state": "succeeded", "name": "fake"}


def test_uploads_pass_intact_over_tls(env, tmp_path, pki, fake):
    n = fake()
    add(env, tmp_path, pki, "n1", f"127.0.0.1:{n.port}")
    data = os.urandom(5 * 1024 * 1024 + 321)
    want = hashlib.sha256(data).hexdigest()
    # a body of known length (client_post_file) ...
    f = tmp_path / "rt.tar.zst"
    f.write_bytes(data)
    p = rnx(env, "--node", "n1", "runtime", "import", str(f))
    assert p.returncode == 0, err(p)
    post = [r for r in n.requests() if r["method"] == "POST"]
    assert post and post[0]["bytes"] == len(data) and post[0]["sha256"] == want
    # ... and a chunked one (client_put_body: rnx job cp from stdin)
    p = rnx(env, "--node", "n1", "job", "cp", "-", "job1:/work", stdin=data)
    assert p.returncode == 0, err(p)
    put = [r for r in n.requests() if r["method"] == "PUT"]
    assert put and put[0]["bytes"] == len(data) and put[0]["sha256"] == want


def test_downloads_pass_intact_over_tls(env, tmp_path, pki, fake):
    n = fake()
    add(env, tmp_path, pki, "n1", f"127.0.0.1:{n.port}")
    want = hashlib.sha256(blob()).hexdigest()
    # a chunked body read a piece at a time (client_get_body) ...
    p = rnx(env, "--node", "n1", "job", "cp", "job1:/work/blob", "-")
    assert p.returncode == 0, err(p)
    assert len(p.stdout) == BLOB_SIZE and hashlib.sha256(p.stdout).hexdigest() == want
    # ... and one of known length written to a file (client_download)
    dest = tmp_path / "out.tar.zst"
    p = rnx(env, "--node", "n1", "runtime", "export", "fake", str(dest))
    assert p.returncode == 0, err(p)
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == want


def test_console_through_a_node(env, tmp_path, pki, fake):
    n = fake()
    add(env, tmp_path, pki, "n1", f"127.0.0.1:{n.port}")
    con = Console(None, args=["--node", "n1"], env=env)
    try:
        assert f"node n1 (127.0.0.1:{n.port})" in con.line
        con.sign_in()
        r, body = con.request("GET", "/v1/version", headers=con.auth(), timeout=30)
        assert r.status == 200 and json.loads(body)["version"] == "fake-node-1", body
        r, body = con.request("GET", "/", headers={"Cookie": con.jar}, timeout=30)
        assert r.status == 200 and b"fake node console" in body
        reqs = n.requests()
        assert {r["path"] for r in reqs} >= {"/v1/version", "/"} and all(r["cn"] == "alice" for r in reqs), reqs
        # the console's own key never reaches the node
        assert not any("console_key" in r["path"] for r in reqs)
    finally:
        con.stop()   # (a sanitizer report on its stderr fails the test)


def test_the_local_socket_loads_no_tls(env, tmp_path, pki, fake):
    """rnx does not link GnuTLS, and a command on the local socket does not open it: the start
    of every local rnx pays nothing for remote nodes."""
    ldd = subprocess.run(["ldd", RNX], capture_output=True, text=True).stdout
    assert "gnutls" not in ldd and "nettle" not in ldd, ldd
    p = rnx(env, "--socket", NO_DAEMON, "job", "list", more={"LD_DEBUG": "files"})
    assert "cannot reach joblet" in err(p) and "libgnutls" not in err(p)
    n = fake()
    add(env, tmp_path, pki, "n1", f"127.0.0.1:{n.port}")
    p = rnx(env, "--node", "n1", "job", "list", more={"LD_DEBUG": "files"})
    assert p.returncode == 0 and "file=libgnutls.so.30" in err(p)


NO_GNUTLS = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
/* dlopen as on a machine without libgnutls30 */
void *dlopen(const char *name, int flags)
{
    static void *(*real)(const char *, int);
    if (!real)
        real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    if (name && strstr(name, "libgnutls"))
        return NULL;
    return real(name, flags);
}
char *dlerror(void) { return (char *)"libgnutls.so.30: cannot open shared object file: No such file or directory"; }
"""


def test_without_gnutls_a_node_says_which_package(env, tmp_path, pki):
    src = tmp_path / "nognutls.c"
    src.write_text(NO_GNUTLS)
    lib = tmp_path / "nognutls.so"
    c = subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src), "-ldl"], capture_output=True, text=True)
    assert c.returncode == 0, c.stderr
    f = node_file(str(tmp_path / "n1.rnx.yml"), "127.0.0.1:7443", pki["ca"], pki["cli"], pki["cli.key"])
    assert rnx(env, "node", "add", "n1", f).returncode == 0
    more = {"LD_PRELOAD": str(lib), "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
    p = rnx(env, "--node", "n1", "job", "list", more=more)
    assert p.returncode == 1
    assert "node n1: talking to a node over TLS needs GnuTLS (Debian: libgnutls30)" in err(p), err(p)
    # the local socket does not need it
    p = rnx(env, "--socket", NO_DAEMON, "job", "list", more=more)
    assert p.returncode == 1 and f"cannot reach joblet at {NO_DAEMON}" in err(p), err(p)
