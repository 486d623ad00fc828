"""Certificates made with GnuTLS's certtool, independently of joblet cert: the listener's tests
need ones joblet cert never makes (expired, of another CA, without a role, a server's used as a
client's), and a second maker checks the first one's conventions (CN = person, OU = role)."""
import os
import shutil
import subprocess

CERTTOOL = shutil.which("certtool")


def _run(*args):
    p = subprocess.run([CERTTOOL, *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"certtool {' '.join(args)}: {p.stderr}")
    return p.stdout


def _key(path):
    _run("--generate-privkey", "--key-type=ecdsa", "--curve=secp256r1", "--no-text", "--outfile", path)
    os.chmod(path, 0o600)


def _template(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def ca(d, name="test CA"):
    """d/ca.pem, d/ca-key.pem."""
    os.makedirs(d, exist_ok=True)
    _key(f"{d}/ca-key.pem")
    _template(f"{d}/ca.tmpl", [f'cn = "{name}"', "ca", "cert_signing_key", "crl_signing_key",
                               "expiration_days = 3650"])
    _run("--generate-self-signed", "--load-privkey", f"{d}/ca-key.pem", "--template", f"{d}/ca.tmpl",
         "--outfile", f"{d}/ca.pem")
    return f"{d}/ca.pem"


def _signed(d, name, lines):
    _key(f"{d}/{name}-key.pem")
    _template(f"{d}/{name}.tmpl", lines)
    _run("--generate-certificate", "--load-privkey", f"{d}/{name}-key.pem", "--load-ca-certificate",
         f"{d}/ca.pem", "--load-ca-privkey", f"{d}/ca-key.pem", "--template", f"{d}/{name}.tmpl",
         "--outfile", f"{d}/{name}.pem")
    return f"{d}/{name}.pem", f"{d}/{name}-key.pem"


def server(d, dns=("localhost",), ips=("127.0.0.1",), name="server"):
    """d/server.pem, d/server-key.pem for a node named by dns and ips."""
    lines = [f'cn = "{dns[0] if dns else ips[0]}"', "signing_key", "tls_www_server", "expiration_days = 365"]
    lines += [f'dns_name = "{n}"' for n in dns] + [f'ip_address = "{a}"' for a in ips]
    return _signed(d, name, lines)


def client(d, person, role, name=None, expired=False, usage="tls_www_client", serial=None):
    """d/NAME.pem, d/NAME-key.pem: CN person, OU role (None: no OU)."""
    lines = [f'cn = "{person}"', "signing_key", usage]
    if role:
        lines.append(f'unit = "{role}"')
    if serial:
        lines.append(f"serial = 0x{serial}")
    if expired:
        lines += ['activation_date = "2020-01-01 00:00:00 UTC"', 'expiration_date = "2021-01-01 00:00:00 UTC"']
    else:
        lines.append("expiration_days = 30")
    return _signed(d, name or person, lines)


def serial_of(cert):
    """The serial as joblet writes it: lowercase hex, no leading zero bytes."""
    out = subprocess.run(["openssl", "x509", "-noout", "-serial", "-in", cert], capture_output=True, text=True,
                         check=True).stdout
    s = out.strip().split("=", 1)[1].lower()
    while len(s) > 2 and s.startswith("00"):
        s = s[2:]
    return s
