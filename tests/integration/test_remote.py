"""The TLS listener (docs/remote.md): TLS 1.3 only with a required client certificate, the
person and role a certificate names, the refusals (each with an audit line), the roles over
every route, revocation by SIGHUP, and the bounds that keep one identity from holding it.

Real outside clients: curl, gnutls-cli, and Python's ssl. Certificates from certtool (certs.py),
so that this file does not test joblet cert with itself (test_cert.py does that)."""
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import uuid

import pytest

import certs
from conftest import Daemon, DbLock, Keepers, free_port, need_root

pytestmark = pytest.mark.skipif(not (certs.CERTTOOL and shutil.which("curl") and shutil.which("gnutls-cli")),
                                reason="needs certtool, gnutls-cli (gnutls-bin) and curl")

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
ROLES = ("reader", "developer", "maintainer", "admin")


class Users:
    """Local accounts made for the test (useradd), removed after it."""

    def __init__(self):
        self.names = []

    def add(self, name):
        subprocess.run(["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name],
                       check=True, capture_output=True)
        self.names.append(name)
        return int(subprocess.run(["id", "-u", name], check=True, capture_output=True, text=True).stdout)

    def remove(self):
        for n in self.names:
            subprocess.run(["userdel", n], check=False, capture_output=True)


class Remote:
    """A daemon with a TLS listener on 127.0.0.1, its PKI, and one certificate per role."""

    def __init__(self, extra="", pace=1000, total=1000, preexec=None):
        """pace: remote.handshakes_per_s, total: remote.handshakes_total_per_s (joblet's defaults
        are 20 and 100; the tests that make hundreds of connections from 127.0.0.1 in a row are
        about other things: test_hostile_tls paces). preexec: Daemon.preexec (its rlimits)."""
        need_root()
        self.users = Users()
        tag = uuid.uuid4().hex[:5]
        self.pki = None
        self.port = free_port()
        # the people: one per role, each on an account of their name; "boss" is mapped onto
        # an account of another name by remote.users
        self.account = {r: f"jr{tag}{r[:2]}" for r in ROLES}
        self.account["other"] = f"jr{tag}ot"
        self.account["boss"] = f"jr{tag}bs"
        self.uid = {who: self.users.add(a) for who, a in self.account.items()}
        self.person = {r: self.account[r] for r in ROLES}
        self.person["other"] = self.account["other"]
        self.person["boss"] = "Boss.Person"
        self.d = Daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n"
                        f"remote:\n  listen: [\"127.0.0.1:{self.port}\"]\n  pki_dir: PKI\n  handshakes_per_s: {pace}\n"
                        f"  handshakes_total_per_s: {total}\n"
                        f"  users:\n    Boss.Person: {self.account['boss']}\n{extra}")
        self.pki = os.path.join(self.d.dir, "pki")
        self.keepers = Keepers(self.d.dir)
        with open(self.d.config) as f:
            text = f.read().replace("pki_dir: PKI", f"pki_dir: {self.pki}")
        with open(self.d.config, "w") as f:
            f.write(text)
        certs.ca(self.pki)
        certs.server(self.pki)
        for r in ROLES:
            certs.client(self.pki, self.person[r], r, name=r)
        certs.client(self.pki, self.person["other"], "developer", name="other")
        certs.client(self.pki, self.person["boss"], "admin", name="boss")
        self.d.preexec = preexec
        self.d.start()

    def ctx(self, who):
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        c.load_verify_locations(f"{self.pki}/ca.pem")
        if who:
            c.load_cert_chain(f"{self.pki}/{who}.pem", f"{self.pki}/{who}-key.pem")
        return c

    def api(self, who, method, path, body=None, raw=None, ctype=None):
        """(status, parsed body) of one request over TLS as `who` (a cert name in the PKI)."""
        import http.client
        c = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx(who), timeout=60)
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        headers = {"Content-Type": ctype or "application/json"} if data is not None else {}
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        out = r.read()
        c.close()
        try:
            return r.status, json.loads(out) if out else None
        except ValueError:
            return r.status, out

    def curl(self, who, *args):
        base = ["curl", "-sS", "--cacert", f"{self.pki}/ca.pem"]
        if who:
            base += ["--cert", f"{self.pki}/{who}.pem", "--key", f"{self.pki}/{who}-key.pem"]
        return subprocess.run(base + list(args), capture_output=True, text=True, timeout=60)

    def rnx(self, who, *args):
        """rnx --node WHO ...: a node file made of the PKI's files, added to an rnx config of its own."""
        cfg = os.path.join(self.d.dir, f"rnx-{who}")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RNX_CONFIG": os.path.join(cfg, "nodes.yml")}
        env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
        env = self.keepers.env(env)
        rnx = os.path.join(os.environ.get("JOBLET_BUILD", "build"), "rnx")
        if not os.path.exists(cfg):
            os.makedirs(cfg, mode=0o700)
            def block(path):
                with open(path) as f:
                    return "".join("  " + l + "\n" for l in f.read().strip().splitlines())
            node = os.path.join(cfg, f"{who}.rnx.yml")
            with open(node, "w") as f:
                role = {"other": "developer", "boss": "admin"}.get(who, who)   # (their certificates' roles)
                f.write(f"address: 127.0.0.1:{self.port}\nuser: {self.person[who]}\nrole: {role}\n"
                        f"ca: |\n{block(f'{self.pki}/ca.pem')}cert: |\n{block(f'{self.pki}/{who}.pem')}"
                        f"key: |\n{block(f'{self.pki}/{who}-key.pem')}")
            os.chmod(node, 0o600)
            subprocess.run([rnx, "node", "add", who, node], env=env, check=True, capture_output=True)
        return subprocess.run([rnx, "--node", who, *args], env=env, capture_output=True, text=True, timeout=120)

    def url(self, path):
        return f"https://127.0.0.1:{self.port}{path}"

    def audit(self):
        st, body = self.d.api("GET", "/v1/audit?limit=200")
        assert st == 200, body
        return body["records"]

    def close(self):
        try:
            self.keepers.end()
        finally:
            self.d.cleanup()
            self.users.remove()


@pytest.fixture(scope="module")
def remote():
    r = Remote()
    yield r
    r.close()


# ---- the acceptance's outside clients ----------------------------------------------------------

def test_curl_runs_a_job_and_reads_its_log(remote):
    # libmicrohttpd's messages are joblet's from the TLS servers' first too (the logger first)
    assert "is not the first option" not in remote.d.log(), remote.d.log()[-2000:]
    p = remote.curl("developer", "-H", "Content-Type: application/json",
                    "-d", json.dumps({"command": "/bin/echo", "args": ["over", "tls"]}), remote.url("/v1/jobs"))
    assert p.returncode == 0, p.stderr
    job = json.loads(p.stdout)
    assert job["owner_uid"] == remote.uid["developer"], job    # the person's own account
    remote.d.wait(job["id"])
    p = remote.curl("developer", remote.url(f"/v1/jobs/{job['id']}/logs"))
    assert p.returncode == 0, p.stderr
    lines = [json.loads(l) for l in p.stdout.splitlines()]
    assert lines[0]["data"] == "over tls\n" and lines[-1]["status"] == "COMPLETED", lines
    # the action is in the audit trail with the person, the serial, the role and the address
    rec = next(r for r in remote.audit() if r["action"] == "api" and r["detail"] == "POST /v1/jobs: 201"
               and r.get("person") == remote.person["developer"])
    assert rec["serial"] == certs.serial_of(f"{remote.pki}/developer.pem")
    assert rec["role"] == "developer" and rec["peer"].startswith("127.0.0.1:")
    assert rec["uid"] == remote.uid["developer"]
    assert rec["job"] == job["id"]                         # the job the change made


def test_rnx_audit_shows_the_person_the_role_the_serial_and_the_address(remote):
    # docs/remote.md, "The audit trail": rnx audit showed only the account's uid of a TLS caller's
    # record; who it was (the certificate) and from where were in --json alone
    p = remote.rnx("developer", "job", "run", "true")
    assert p.returncode == 0, p.stderr
    serial = certs.serial_of(f"{remote.pki}/developer.pem")
    p = remote.rnx("admin", "audit", "--limit", "200")
    assert p.returncode == 0, p.stderr
    who = f"({remote.person['developer']}, developer, serial {serial}, from 127.0.0.1:"
    assert any("POST /v1/jobs: 201 " + who in ln and ln.split()[1] == str(remote.uid["developer"])
               for ln in p.stdout.splitlines()), p.stdout[-3000:]
    # a refusal without a certificate: where it came from
    remote.curl(None, remote.url("/v1/jobs"))
    p = remote.rnx("admin", "audit", "--limit", "200")
    assert any(" refused " in ln and "no client certificate" in ln and "(from 127.0.0.1:" in ln
               for ln in p.stdout.splitlines()), p.stdout[-3000:]


def test_whoami_names_the_person_the_role_and_the_account(remote):
    st, me = remote.api("boss", "GET", "/v1/whoami")
    assert st == 200 and me["role"] == "admin" and me["uid"] == remote.uid["boss"], me
    assert me["user"] == remote.account["boss"]


def test_tls_13_only(remote):
    base = ["gnutls-cli", "--x509cafile", f"{remote.pki}/ca.pem", "--x509certfile", f"{remote.pki}/developer.pem",
            "--x509keyfile", f"{remote.pki}/developer-key.pem", "-p", str(remote.port), "127.0.0.1"]
    ok = subprocess.run(base, input="", capture_output=True, text=True, timeout=60)
    assert "Description: (TLS1.3-X.509)" in ok.stdout, ok.stdout + ok.stderr
    old = subprocess.run(base + ["--priority", "NORMAL:-VERS-ALL:+VERS-TLS1.2"], input="", capture_output=True,
                         text=True, timeout=60)
    # joblet offers nothing below 1.3: the handshake never completes (it closes the connection)
    assert old.returncode != 0 and "Handshake was completed" not in old.stdout, old.stdout + old.stderr
    p = remote.curl("developer", "--tls-max", "1.2", remote.url("/v1/version"))
    assert p.returncode != 0


@pytest.mark.parametrize("case", ["none", "expired", "other_ca", "server_cert", "no_role"])
def test_bad_client_certificates_are_refused_and_audited(remote, case):
    other = os.path.join(remote.d.dir, "other-ca")
    if case == "expired":
        certs.client(remote.pki, remote.person["developer"], "developer", name="expired", expired=True)
        who = "expired"
    elif case == "other_ca":
        certs.ca(other, name="somebody else's CA")
        certs.client(other, remote.person["developer"], "developer", name="dev")
        for f in ("dev.pem", "dev-key.pem"):
            shutil.copy(os.path.join(other, f), os.path.join(remote.pki, "foreign-" + f))
        who = "foreign-dev"
    elif case == "server_cert":
        who = "server"
    elif case == "no_role":
        certs.client(remote.pki, remote.person["developer"], None, name="norole")
        who = "norole"
    else:
        who = None
    p = remote.curl(who, remote.url("/v1/jobs"))
    assert p.returncode == 0, p.stderr       # TLS completes: joblet refuses at the first request
    err = json.loads(p.stdout)["error"]
    assert err["code"] == "forbidden", err
    want = {"none": "no client certificate", "expired": "it expired on 2021-01-01",
            "other_ca": "this node's CA did not sign it", "server_cert": "not made for a client",
            "no_role": "names no role"}[case]
    assert want in err["message"], err
    assert any(r["action"] == "refused" and want in (r["detail"] or "") for r in remote.audit())


def test_revoked_after_sighup_while_its_job_runs(remote):
    certs.client(remote.pki, remote.person["developer"], "developer", name="soon-revoked")
    st, job = remote.api("soon-revoked", "POST", "/v1/jobs", {"command": "/bin/sleep", "args": ["300"]})
    assert st == 201, job
    remote.d.wait_status(job["id"], "RUNNING")
    serial = certs.serial_of(f"{remote.pki}/soon-revoked.pem")
    with open(f"{remote.pki}/revoked.txt", "a") as f:
        f.write(f"# revoked by the test\n{serial} soon-revoked 2026-11-28T00:00:00Z\n")
    # before the reload it still works: the list is read at start and at SIGHUP only
    assert remote.api("soon-revoked", "GET", f"/v1/jobs/{job['id']}")[0] == 200
    # a stream it follows, opened before: closed by the reload, not served on (review finding)
    raw = socket.create_connection(("127.0.0.1", remote.port), timeout=30)
    follow = remote.ctx("soon-revoked").wrap_socket(raw, server_hostname="127.0.0.1")
    follow.sendall(f"GET /v1/jobs/{job['id']}/logs?follow=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += follow.recv(4096)
    assert b" 200 " in head.split(b"\r\n")[0], head
    remote.d.proc.send_signal(signal.SIGHUP)
    follow.settimeout(30)
    try:
        while follow.recv(4096):
            pass
    except (ConnectionError, ssl.SSLError):
        pass   # closed under it: what is wanted
    follow.close()
    deadline = time.time() + 30
    while time.time() < deadline and remote.api("soon-revoked", "GET", "/v1/version")[0] != 403:
        time.sleep(0.1)
    st, body = remote.api("soon-revoked", "GET", f"/v1/jobs/{job['id']}")
    assert st == 403 and "revoked" in body["error"]["message"], body
    # the job goes on; the person's other certificates, and everyone else, are served
    assert remote.d.job(job["id"])["status"] == "RUNNING"
    assert remote.api("developer", "GET", f"/v1/jobs/{job['id']}")[0] == 200
    assert any(r["action"] == "refused" and r.get("serial") == serial for r in remote.audit())
    assert any(r["action"] == "closed" and r.get("serial") == serial for r in remote.audit())
    remote.d.api("POST", f"/v1/jobs/{job['id']}/kill")
    with open(f"{remote.pki}/revoked.txt", "w") as f:
        f.write("")


def test_a_bad_revocation_list_keeps_the_one_in_use(remote):
    with open(f"{remote.pki}/revoked.txt", "w") as f:
        f.write("not-a-serial\n")
    remote.d.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 30
    while time.time() < deadline and "is not a serial" not in remote.d.log():
        time.sleep(0.1)
    assert "the certificates in use stay" in remote.d.log()
    assert remote.api("developer", "GET", "/v1/version")[0] == 200
    with open(f"{remote.pki}/revoked.txt", "w") as f:
        f.write("")
    remote.d.proc.send_signal(signal.SIGHUP)


def test_a_person_mapped_to_no_account_is_told_so():
    """remote.users maps a person to an account this host does not have: the refusal said "there
    is no user 'ACCOUNT' and remote.users maps nobody to it", though remote.users maps them; it
    now names the mapping."""
    r = Remote(extra="    Ghost.Mapped: jrnoacct0\n")
    try:
        certs.client(r.pki, "Ghost.Mapped", "developer", name="mapped")
        st, body = r.api("mapped", "GET", "/v1/jobs")
        msg = body["error"]["message"]
        assert st == 403 and "no local account: remote.users maps Ghost.Mapped to the account 'jrnoacct0', and " \
            "there is no user 'jrnoacct0' here" in msg and "maps nobody" not in msg, body
    finally:
        r.close()


def test_unmapped_person_and_root_are_refused(remote):
    # a person without an account of their name and without a mapping
    certs.client(remote.pki, "nobody-here-" + uuid.uuid4().hex[:6], "developer", name="ghost")
    st, body = remote.api("ghost", "GET", "/v1/jobs")
    assert st == 403 and "no local account" in body["error"]["message"], body
    # what to do about it (docs/remote.md, "Who a remote person is"): before, "remote.users maps
    # nobody to it", which reads as the account 'nobody'
    assert "remote.users does not map nobody-here-" in body["error"]["message"] \
        and ": ACCOUNT' to remote.users" in body["error"]["message"], body
    # a certificate for "root" acts as root only when remote.users maps it so
    certs.client(remote.pki, "root", "admin", name="root")
    st, body = remote.api("root", "GET", "/v1/jobs")
    assert st == 403 and "would act as root" in body["error"]["message"], body


# ---- roles over every route ----------------------------------------------------------------------

# Every route of docs/api.md, with what each role gets. "own": on the person's own job;
# "theirs": on another developer's. The numbers are the statuses; 403 is "may not".
# A route's body or object that does not exist gives 4xx other than 403 for those who may.
R, D, M, A = ROLES
ROUTES = [
    # method, path, body, {role: status}
    ("GET", "/v1/version", None, {R: 200, D: 200, M: 200, A: 200}),
    ("GET", "/v1/whoami", None, {R: 200, D: 200, M: 200, A: 200}),
    ("GET", "/v1/jobs", None, {R: 200, D: 200, M: 200, A: 200}),
    ("GET", "/v1/jobs/{theirs}", None, {R: 403, D: 403, M: 200, A: 200}),
    ("GET", "/v1/jobs/{theirs}?detail=1", None, {R: 403, D: 403, M: 200, A: 200}),
    ("GET", "/v1/jobs/{theirs}/logs", None, {R: 403, D: 403, M: 200, A: 200}),
    ("GET", "/v1/jobs/{theirs}/archive?path=/work", None, {R: 403, D: 403, M: 200, A: 200}),
    # files put into a running job are its user's to run: an admin's, as exec (an empty tar here)
    ("PUT", "/v1/jobs/{theirs}/archive?path=/work", "\0" * 1024, {R: 403, D: 403, M: 403, A: 200}),
    ("POST", "/v1/jobs", {"command": "/bin/true"}, {R: 403, D: 201, M: 201, A: 201}),
    ("POST", "/v1/jobs/{theirs}/stop", None, {R: 403, D: 403, M: 200, A: 200}),
    ("POST", "/v1/jobs/{theirs}/kill", None, {R: 403, D: 403, M: 200, A: 200}),
    ("POST", "/v1/jobs/{theirs}/cancel", None, {R: 403, D: 403, M: 409, A: 409}),
    ("DELETE", "/v1/jobs/{theirs_ended}", None, {R: 403, D: 403, M: 200, A: 200}),
    ("DELETE", "/v1/jobs", None, {R: 403, D: 200, M: 200, A: 200}),
    ("PUT", "/v1/uploads/nope", "x", {R: 403, D: 404, M: 404, A: 404}),
    ("GET", "/v1/workflows", None, {R: 200, D: 200, M: 200, A: 200}),
    ("POST", "/v1/workflows", {"jobs": {}}, {R: 403, D: 400, M: 400, A: 400}),
    ("GET", "/v1/gpus", None, {R: 200, D: 200, M: 200, A: 200}),
    ("GET", "/v1/gpus/0", None, {R: 200, D: 200, M: 200, A: 200}),
    ("POST", "/v1/gpus/7/drain", None, {R: 403, D: 403, M: 403, A: 200}),
    ("POST", "/v1/gpus/7/online", None, {R: 403, D: 403, M: 403, A: 200}),
    ("GET", "/v1/audit", None, {R: 403, D: 403, M: 403, A: 200}),
    ("GET", "/metrics", None, {R: 403, D: 403, M: 200, A: 200}),
    ("GET", "/v1/monitor", None, {R: 200, D: 200, M: 200, A: 200}),
    ("GET", "/v1/history?hours=1", None, {R: 200, D: 200, M: 200, A: 200}),
    ("GET", "/v1/volumes", None, {R: 200, D: 200, M: 200, A: 200}),
    ("POST", "/v1/volumes", {"name": "v-{role}", "size_mb": 1, "type": "memory"}, {R: 403, D: 201, M: 201, A: 201}),
    ("DELETE", "/v1/volumes/v-{role}", None, {R: 403, D: 200, M: 200, A: 200}),
    ("GET", "/v1/runtimes", None, {R: 200, D: 200, M: 200, A: 200}),
    ("POST", "/v1/runtimes", "name: x\n", {R: 403, D: 403, M: 403, A: 400}),
    ("DELETE", "/v1/runtimes/none-such", None, {R: 403, D: 403, M: 403, A: 404}),
    ("POST", "/v1/runtime-imports", "x", {R: 403, D: 403, M: 403, A: 202}),   # fails later: not an archive
    ("GET", "/v1/runtime-builds", None, {R: 200, D: 200, M: 200, A: 200}),
    ("GET", "/", None, {R: 200, D: 200, M: 200, A: 200}),
    ("GET", "/v1/workflows/none-such", None, {R: 404, D: 404, M: 404, A: 404}),
    ("POST", "/v1/workflows/none-such/cancel", None, {R: 403, D: 404, M: 404, A: 404}),
    ("POST", "/v1/gpus/6/offline", None, {R: 403, D: 403, M: 403, A: 200}),
    ("GET", "/v1/runtimes/none-such", None, {R: 404, D: 404, M: 404, A: 404}),
    ("POST", "/v1/runtimes/none-such/test", None, {R: 403, D: 404, M: 404, A: 404}),
    ("GET", "/v1/runtime-builds/999", None, {R: 404, D: 404, M: 404, A: 404}),
]


def test_roles_over_every_route(remote):
    """One table: every route for every role. Jobs of 'other' (a developer) are the objects of
    the others; the maintainer acts on them, a developer cannot even see them."""
    seen = []
    for method, path, body, want in ROUTES:
        for role in ROLES:
            st, job = remote.api("other", "POST", "/v1/jobs", {"command": "/bin/sleep", "args": ["300"]})
            assert st == 201, job
            st, ej = remote.api("other", "POST", "/v1/jobs", {"command": "/bin/true"})
            remote.d.wait(ej["id"])
            # "theirs" is a running job (archive 200, cancel 409): on a loaded machine a
            # job just submitted may not have started yet (CI's sanitizer pass: archive 409)
            remote.d.wait_status(job["id"], "RUNNING", timeout=120)
            p = path.replace("{theirs}", job["id"]).replace("{theirs_ended}", ej["id"]).replace("{role}", role)
            b = body
            raw = ctype = None
            if isinstance(b, dict):
                b = json.loads(json.dumps(b).replace("{role}", role))
            elif isinstance(b, str):
                raw, b = b, None
                ctype = "application/yaml" if "runtimes" in path else "application/octet-stream"
            st, out = remote.api(role, method, p, b, raw=raw, ctype=ctype)
            seen.append((method, path, role, st, want[role]))
            if st != want[role]:
                pytest.fail(f"{role} {method} {path}: {st}, want {want[role]}: {out}")
            if st == 403:   # each refusal says what it is for
                msg = out["error"]["message"]
                assert "role" in msg or "your own" in msg, out
            remote.d.api("POST", f"/v1/jobs/{job['id']}/kill")
    assert len(seen) == len(ROUTES) * len(ROLES)


def _ws_attach(remote, who, job_id, query=""):
    """A WebSocket attach (the console's GET) over TLS as who: the socket and the answer's head."""
    import base64
    raw = socket.create_connection(("127.0.0.1", remote.port), timeout=30)
    s = remote.ctx(who).wrap_socket(raw, server_hostname="127.0.0.1")
    key = base64.b64encode(b"0123456789abcdef").decode()
    s.sendall((f"GET /v1/jobs/{job_id}/attach{query} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
               f"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n\r\n").encode())
    from test_terminal import read_head
    _, head = read_head(s)
    text = head.decode(errors="replace")
    if " 101 " not in text.split("\r\n")[0]:   # a refusal's body: what it says
        n = next((int(h.split(":")[1]) for h in text.split("\r\n") if h.lower().startswith("content-length:")), 0)
        body = b""
        while len(body) < n:
            c = s.recv(n - len(body))
            if not c:
                break
            body += c
        text += body.decode(errors="replace")
    return s, text


def test_a_reader_may_watch_a_terminal_but_not_type_into_it(remote):
    """Typing is a change whatever the method: a reader's certificate, whose POST attach is refused,
    was let type by the console's GET WebSocket into its account's interactive job (a shell left
    open: commands as the account). It may watch (?stdin=0), not type (review finding)."""
    from conftest import api_as
    st, job = api_as(remote.d, remote.uid["reader"], "POST", "/v1/jobs",
                     {"command": "/bin/sh", "args": ["-c", "read x; echo got:$x"], "stdin": True})
    assert st == 201, job
    try:
        s, head = _ws_attach(remote, "reader", job["id"])
        s.close()
        assert head.split("\r\n")[0].split()[1] == "403", head
        assert "typing into a job's terminal" in head and "role" in head, head
        s, head = _ws_attach(remote, "reader", job["id"], "?stdin=0")
        s.close()
        assert " 101 " in head.split("\r\n")[0], head
    finally:
        remote.d.api("POST", f"/v1/jobs/{job['id']}/kill")


def test_a_submission_is_ordered_by_the_certificate_and_uses_no_more_than_its_account_may():
    """At submission the certificate's role counts, as everywhere else: an admin's certificate on
    an ordinary account may give a priority above 0 (as rnx job update lets it raise one), a
    developer's may not. What the job will use of others' (a volume) is its account's to use and
    no more than the certificate gives: a developer's certificate on an account of the admin
    group cannot reach another user's volume through a job, which that account may on the
    socket (review finding: the account's local role was used for both)."""
    group = "jrag" + uuid.uuid4().hex[:5]
    subprocess.run(["groupadd", group], check=True, capture_output=True)
    r = None
    try:
        # account look-ups are kept server.account_cache_s (core/nsscache.h): 1 s here, so that the
        # membership given below counts once that has passed
        r = Remote(extra=f"server:\n  admin_group: {group}\n  account_cache_s: 1\n")
        from conftest import api_as
        st, out = r.api("admin", "POST", "/v1/jobs", {"command": "/bin/true", "priority": 5})
        assert st == 201, out
        st, out = r.api("developer", "POST", "/v1/jobs", {"command": "/bin/true", "priority": 5})
        assert st == 403 and out["error"]["field"] == "priority" and "role" in out["error"]["message"], out
        subprocess.run(["usermod", "-aG", group, r.account["developer"]], check=True, capture_output=True)
        time.sleep(1.2)  # (the account as looked up before it, kept 1 s, is asked again)
        st, v = api_as(r.d, r.uid["other"], "POST", "/v1/volumes", {"name": "theirs", "size_mb": 4, "type": "memory"})
        assert st in (200, 201), v
        st, out = r.api("developer", "POST", "/v1/jobs", {"command": "/bin/true", "volumes": ["theirs"]})
        assert st == 403 and out["error"]["field"] == "volumes", out
        # the account itself, an operator on the socket, may (server.admin_group)
        st, out = api_as(r.d, r.uid["developer"], "POST", "/v1/jobs", {"command": "/bin/true", "volumes": ["theirs"]})
        assert st == 201, out
        r.d.wait(out["id"])
    finally:
        if r:
            r.close()
        subprocess.run(["groupdel", group], capture_output=True)


# ---- bounds ------------------------------------------------------------------------------------------

def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(l for l in f if l.startswith("VmRSS:")).split()[1])


def test_idle_connections_and_slow_handshakes_do_not_lock_others_out(remote):
    """2,000 TLS connections of one identity that never ask, and clients that never finish
    their handshake: another person's job runs and is followed to its end all the same, and
    the daemon's memory stays bounded (only remote.max_pending of them are kept)."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    before = rss_kb(remote.d.proc.pid)
    ctx = remote.ctx("developer")
    held, slow = [], []
    try:
        for _ in range(20):                       # slow handshakes: TCP only, nothing sent
            s = socket.create_connection(("127.0.0.1", remote.port))
            slow.append(s)
        for i in range(2000):
            s = socket.create_connection(("127.0.0.1", remote.port), timeout=30)
            try:
                held.append(ctx.wrap_socket(s, server_hostname="127.0.0.1"))
            except (ssl.SSLError, OSError):
                s.close()                         # the listener pushed an old one out: fine
        peak = rss_kb(remote.d.proc.pid)
        # and a flood of requests from that identity on keep-alive connections meanwhile
        import http.client
        import threading
        stop, served = threading.Event(), [0]

        def flood():
            c = http.client.HTTPSConnection("127.0.0.1", remote.port, context=ctx, timeout=60)
            while not stop.is_set():
                try:
                    c.request("GET", "/v1/jobs")
                    c.getresponse().read()
                    served[0] += 1
                except (OSError, http.client.HTTPException):
                    c.close()
                    c = http.client.HTTPSConnection("127.0.0.1", remote.port, context=ctx, timeout=60)
            c.close()

        flooders = [threading.Thread(target=flood) for _ in range(16)]
        for t in flooders:
            t.start()
        try:
            # another identity: rnx job run --follow, to the job's end
            p = remote.rnx("maintainer", "job", "run", "--follow", "/bin/echo", "still", "served")
        finally:
            stop.set()
            for t in flooders:
                t.join()
        assert p.returncode == 0 and p.stdout == "still served\n", p.stdout + p.stderr
        assert served[0] > 0
        open_now = len(os.listdir(f"/proc/{remote.d.proc.pid}/fd"))
    finally:
        for s in held + slow:
            s.close()
    print(f"\nRSS before {before} kB, with 2,000 idle TLS connections {peak} kB; daemon fds {open_now}")
    assert open_now < 256 + 200, open_now        # remote.max_pending (256) bounds what is held
    assert peak - before < 256 * 1024, (before, peak)   # far below 2,000 sessions' worth


def test_a_silent_connection_is_closed_after_the_handshake_timeout():
    d = Remote(extra="  handshake_timeout_s: 1\n")
    try:
        s = socket.create_connection(("127.0.0.1", d.port))
        s.settimeout(60)
        assert s.recv(1) == b""                   # closed by joblet, not by the client
        s.close()
    finally:
        d.close()


def server_serial(port):
    p = subprocess.run(["gnutls-cli", "--insecure", "--print-cert", "-p", str(port), "127.0.0.1"], input="",
                       capture_output=True, text=True, timeout=60)
    pem = p.stdout[p.stdout.index("-----BEGIN CERTIFICATE-----"):]
    pem = pem[:pem.index("-----END CERTIFICATE-----") + 25]
    out = subprocess.run(["openssl", "x509", "-noout", "-serial"], input=pem, capture_output=True, text=True,
                         check=True).stdout
    return out.strip().split("=", 1)[1].lower().lstrip("0")


def test_server_certificate_replaced_by_sighup_without_disturbing_streams(remote):
    """A new server certificate (rotation) is read at SIGHUP: new connections get it; a log
    being followed over a connection made before goes on to the job's end."""
    st, job = remote.api("developer", "POST", "/v1/jobs",
                         {"command": "/bin/sh", "args": ["-c", "for i in $(seq 1 40); do echo tick $i; sleep 0.1; done"]})
    assert st == 201, job
    follow = subprocess.Popen(["curl", "-sSN", "--cacert", f"{remote.pki}/ca.pem", "--cert",
                               f"{remote.pki}/developer.pem", "--key", f"{remote.pki}/developer-key.pem",
                               remote.url(f"/v1/jobs/{job['id']}/logs?follow=1")], stdout=subprocess.PIPE, text=True)
    try:
        first = follow.stdout.readline()
        assert "tick" in first, first
        old = server_serial(remote.port)
        certs.server(remote.pki, name="server")   # a new key and certificate, same names
        remote.d.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 30
        while time.time() < deadline and server_serial(remote.port) == old:
            time.sleep(0.1)
        assert server_serial(remote.port) == certs.serial_of(f"{remote.pki}/server.pem").lstrip("0")
        rest = follow.stdout.read()
    finally:
        follow.kill()
        follow.wait()
    lines = [json.loads(l) for l in (first + rest).splitlines()]
    assert lines[-1].get("end") and lines[-1]["status"] == "COMPLETED", lines[-3:]
    assert sum(1 for l in lines if "data" in l and "tick" in l["data"]) == 40
    # and the new certificate serves requests
    assert remote.api("developer", "GET", "/v1/version")[0] == 200


def test_joblet_cert_makes_what_the_listener_takes(tmp_path):
    """The whole way with joblet's own tool: init, server, client, the listener takes the
    client; revoke and SIGHUP, and it is refused with the revocation named."""
    need_root()
    users = Users()
    name = "jc" + uuid.uuid4().hex[:6]
    uid = users.add(name)
    port = free_port()
    pki = tmp_path / "pki"
    joblet = os.path.join(os.environ.get("JOBLET_BUILD", "build"), "joblet")

    def cert(*args):
        p = subprocess.run([joblet, "cert", *args], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return p

    cert("init", "--dir", str(pki))
    cert("server", "--dir", str(pki), "--name", "node-a", "--san", "localhost,127.0.0.1")
    cert("client", "--dir", str(pki), "--user", name, "--role", "developer", "--address", f"127.0.0.1:{port}")
    d = Daemon(f"remote:\n  listen: [\"127.0.0.1:{port}\"]\n  pki_dir: {pki}\n")
    try:
        d.start()
        base = ["curl", "-sS", "--cacert", f"{pki}/ca.pem", "--cert", f"{pki}/{name}.pem", "--key",
                f"{pki}/{name}-key.pem", f"https://127.0.0.1:{port}/v1/whoami"]
        me = json.loads(subprocess.run(base, capture_output=True, text=True, check=True, timeout=60).stdout)
        assert me["uid"] == uid and me["role"] == "developer", me
        cert("revoke", "--dir", str(pki), name)
        d.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 30
        while time.time() < deadline:
            out = json.loads(subprocess.run(base, capture_output=True, text=True, check=True, timeout=60).stdout)
            if "error" in out:
                break
            time.sleep(0.1)
        assert "is revoked" in out["error"]["message"], out
    finally:
        d.cleanup()
        users.remove()


def test_a_streamed_submission_over_tls_while_the_database_is_locked_is_sent_again(tmp_path):
    """rnx job run --upload over TLS while another process holds joblet's database for 9 s (a
    backup): the 202 that names the upload carries no change of the database, and is answered
    so, its audit record kept for a later commit; the files' PUT makes the job once the lock
    goes (or is refused busy, and rnx sends them again: upload.c upload_submit). Before, the 202's own commit
    (its audit record) failed on the lock and the answer became "not saved" (503 without
    Retry-After): rnx failed, and the upload it had opened held one of the user's
    limits.uploads_per_user until jobs.upload_timeout_s."""
    import threading
    r = Remote()
    try:
        data = tmp_path / "data.bin"
        data.write_bytes(os.urandom(1 << 20))
        assert r.rnx("developer", "job", "run", "true").returncode == 0  # (the account looked up)
        lock = DbLock(r.d.state)
        threading.Timer(9, lock.release).start()
        try:
            p = r.rnx("developer", "--json", "job", "run", "--name", "tls-busy-up", "--upload", str(data), "sh", "-c",
                      "wc -c < /work/data.bin")
        finally:
            lock.release()
        assert p.returncode == 0, p.stderr
        assert "not saved" not in p.stderr, p.stderr
        made = json.loads(p.stdout)["id"]
        assert r.d.wait(made, 60)["status"] == "COMPLETED"
        assert r.d.output(made).strip() == str(1 << 20)
        assert [j["id"] for j in r.d.api("GET", "/v1/jobs")[1]["jobs"] if j.get("name") == "tls-busy-up"] == [made]
        # a workflow's the same
        (tmp_path / "flow.yml").write_text("name: tls-busy-wf\njobs:\n  count:\n    command: sh\n"
                                           "    args: [-c, 'wc -c < data.bin']\n    uploads: [data.bin]\n")
        lock = DbLock(r.d.state)
        threading.Timer(9, lock.release).start()
        try:
            p = r.rnx("developer", "--json", "workflow", "run", str(tmp_path / "flow.yml"))
        finally:
            lock.release()
        assert p.returncode == 0 and "not saved" not in p.stderr, p.stderr
        wf = json.loads(p.stdout)["id"]
        (wj,) = r.d.api("GET", f"/v1/workflows/{wf}")[1]["jobs"]
        assert r.d.wait(wj["job_id"], 60)["status"] == "COMPLETED"
        assert r.d.output(wj["job_id"]).strip() == str(1 << 20)
        # no upload left waiting: the user's slots are all free again
        for _ in range(4):
            st, ans = r.api("developer", "POST", "/v1/jobs", {"command": "true", "uploads": [{"path": "f", "size": 1}]})
            assert st == 202, (st, ans)
    finally:
        r.close()
