"""docs/networks.md as a new user runs it: what differed from the doc.

a. --max-netbps on a job without a link of its own (network none, the default, or host) is a
   conflict of flags: rnx refuses it before anything is sent, exit 2 (docs/cli.md: a bad command
   line), as a workflow file's is found with its line; the daemon still refuses it, 400 naming
   max_netbps. Before, rnx sent it and the daemon's refusal exited 1.
b. The first example of docs/networks.md, as written: the scripts go to the jobs with --upload
   (a job's /work starts empty; as first written, without --upload, both jobs failed with
   "can't open file '/work/server.py'"), the worker reaches the server by its name.

Traffic stays between the jobs' own namespaces on a network of the test's own; the fixture of
test_networks removes the network, the jobs' links and joblet's table."""
import ipaddress
import os
import re
import subprocess

import pytest

from conftest import BUILD, api_as, rnx_as
from test_networks import free_net, net_daemon  # noqa: F401 (a fixture)

RNX = os.path.join(BUILD, "rnx")
NO_DAEMON = "/nonexistent/joblet-test-docs-net.sock"
DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs")


def rnx(sock, *args, cwd=None):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JOBLET_SOCKET": sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    return subprocess.run([RNX, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_max_netbps_without_a_link_is_a_command_line_error(tmp_path):
    for flags, net in (([], "none (the default)"), (["--network=none"], "none"), (["--network=host"], "host")):
        p = rnx(NO_DAEMON, "job", "run", *flags, "--max-netbps=1MB", "true")
        assert p.returncode == 2, (flags, p.returncode, p.stderr)
        assert "cannot reach" not in p.stderr, p.stderr          # nothing was sent
        assert p.stderr.startswith("rnx: --max-netbps: only a job on isolated, bridge or a named network") \
            and f"this one's network is {net}" in p.stderr, p.stderr
    # a job on a network of joblet's may have one: rnx goes on to the daemon (here: none there)
    p = rnx(NO_DAEMON, "job", "run", "--network=bridge", "--max-netbps=1MB", "true")
    assert p.returncode == 1 and "--max-netbps" not in p.stderr, p.stderr
    # a workflow file's: found with its line, nothing sent
    wf = tmp_path / "rate.yml"
    wf.write_text("jobs:\n  a:\n    command: 'true'\n    network: host\n    resources:\n      max_net_bps: 1MB\n")
    p = rnx(NO_DAEMON, "workflow", "validate", str(wf))
    assert p.returncode == 1 and "cannot reach" not in p.stderr, p.stderr
    assert f"{wf}:6:20: job 'a': max_net_bps: only a job on isolated" in p.stderr, p.stderr


def test_the_daemon_refuses_max_netbps_without_a_link(net_daemon):  # noqa: F811 (the fixture)
    d = net_daemon
    for body in ({"command": "true", "max_netbps": 1 << 20},
                 {"command": "true", "max_netbps": 1 << 20, "network": "host"}):
        code, err = d.api("POST", "/v1/jobs", body)
        assert code == 400 and err["error"].get("field") == "max_netbps", (body, code, err)


SERVER = """import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 29500)); s.listen(4)
print("listening", flush=True)
while True:
    c, _ = s.accept(); c.sendall(b"echo:" + c.recv(100)); c.close()
"""
WORKER = """import socket, sys, time
host, port = sys.argv[1].split("=", 1)[1].rsplit(":", 1)
for i in range(100):
    try:
        c = socket.create_connection((host, int(port)), timeout=2); c.sendall(b"hello"); print(c.recv(100).decode()); break
    except OSError:
        time.sleep(0.2)
else:
    sys.exit(3)
"""


def test_the_first_network_example_runs_as_written(net_daemon, tmp_path):  # noqa: F811 (the fixture)
    d = net_daemon
    text = open(os.path.join(DOCS, "networks.md")).read()
    block = text.split("```\n", 2)[1].split("```", 1)[0]
    lines = [ln.split("#", 1)[0].strip() for ln in block.splitlines() if ln.strip()]
    assert lines[0].startswith("rnx network create train --cidr=") and "--upload=server.py" in lines[1], lines
    net = free_net(["10.218.10.0/24", "10.218.210.0/24"])
    lines = [ln.replace("10.218.10.0/24", str(net)) for ln in lines]
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "worker.py").write_text(WORKER)
    ids = []
    try:
        for ln in lines[:3]:
            p = rnx(d.sock, *ln.split()[1:], cwd=tmp_path)
            assert p.returncode == 0, (ln, p.stderr)
            ids.append(p.stdout.strip())
        server, worker = ids[1], ids[2]
        assert d.wait(worker)["status"] == "COMPLETED", rnx(d.sock, "job", "log", worker).stdout
        assert "echo:hello" in rnx(d.sock, "job", "log", worker).stdout
        assert rnx(d.sock, *lines[3].split()[1:]).returncode == 0               # network list
        p = rnx(d.sock, *lines[4].split()[1:])                                   # refused: ps runs
        assert p.returncode == 1 and "in use" in p.stderr, p.stderr
        rnx(d.sock, "job", "stop", server)
        d.wait(server)
        p = rnx(d.sock, *lines[4].split()[1:])
        assert p.returncode == 0, p.stderr
    finally:
        for j in ids[1:]:
            rnx(d.sock, "job", "stop", j)
        rnx(d.sock, "network", "remove", "train")


def test_the_cidr_rnx_suggests_is_one_a_user_may_take(net_daemon, tmp_path):  # noqa: F811 (the fixture)
    """`rnx network create NAME` without --cidr, typed by a user who is not an admin: rnx says
    what to type. It suggested --cidr=10.10.0.0/24, outside network.user_pool (10.218.0.0/15,
    docs/networks.md "Whose addresses"), so the suggested command, typed next, was refused 403.
    The workflow parser's and the API's examples said the same. Now they name an address in the
    pool, and the command typed as suggested makes the network."""
    d = net_daemon
    uid = 64000 + os.getpid() % 1000
    p = rnx_as(d, uid, "network", "create", "sugg")
    assert p.returncode == 2 and "network.user_pool" in p.stderr, p.stderr
    typed = re.search(r"e\.g\. (rnx network create \S+ --cidr=\S+)", p.stderr).group(1)
    net = ipaddress.ip_network(typed.rsplit("=", 1)[1])
    assert net.subnet_of(ipaddress.ip_network("10.218.0.0/15")), typed
    if free_net([str(net)]) != net:
        pytest.skip(f"{net} is used by this host")
    try:
        p = rnx_as(d, uid, *typed.split()[1:])
        assert p.returncode == 0 and "network sugg created" in p.stdout, p.stderr
    finally:
        rnx_as(d, uid, "network", "remove", "sugg")
    # a workflow's mapping without a name shows the same kind of address
    wf = tmp_path / "n.yml"
    wf.write_text("jobs:\n  a:\n    command: 'true'\n    network: {cidr: 10.218.10.0/24}\n")
    p = rnx(NO_DAEMON, "workflow", "validate", str(wf))
    assert p.returncode == 1 and "{name: train, cidr: 10.218.10.0/24}" in p.stderr, p.stderr
    # and the API's, to a client that sends no cidr
    code, err = api_as(d, uid, "POST", "/v1/networks", {"name": "sugg"})
    assert code == 400 and err["error"]["field"] == "cidr" and "--cidr=10.218.10.0/24" in err["error"]["message"], err


def test_a_network_that_is_not_there_says_how_to_make_it(net_daemon, tmp_path):  # noqa: F811 (the fixture)
    """docs/networks.md typed out of order, as a Docker user does (`docker run --network=train`
    before `docker network create`): the refusal listed the networks to use, not how to make the
    one named, neither with rnx nor in a workflow, where `network: {name: train}` without cidr
    only names it. Now it says both."""
    d = net_daemon
    p = rnx(d.sock, "job", "run", "--network=trainx", "true")
    assert p.returncode == 1 and "no network 'trainx'" in p.stderr, p.stderr
    assert "rnx network create trainx --cidr=10.218.10.0/24" in p.stderr, p.stderr
    wf = tmp_path / "w.yml"
    wf.write_text("jobs:\n  a:\n    command: 'true'\n    network: {name: trainx}\n")
    p = rnx(d.sock, "workflow", "run", str(wf))
    assert p.returncode == 1 and p.stderr.startswith(f"{wf}:4:14: job 'a': network: no network 'trainx'"), p.stderr
    assert "network: {name: trainx, cidr: 10.218.10.0/24}" in p.stderr, p.stderr


def test_a_name_another_user_took_says_whose_and_what_to_do(net_daemon):  # noqa: F811 (the fixture)
    """docs/networks.md, "Who may do what": a named network is its maker's, unseen by others;
    its name is the host's (its bridge is jb-NAME). Typed as a second user after the first made
    `train`: `rnx network create train ...` said "network train already exists", which that user's
    `rnx network list` does not show, and `rnx job run --network=train` said there is no such
    network. Now the refusal says it is another user's and to choose another name."""
    d = net_daemon
    net = free_net(["10.218.40.0/24", "10.218.240.0/24"])
    other = free_net(["10.218.41.0/24", "10.218.241.0/24"])
    uid = 64000 + os.getpid() % 1000
    assert rnx(d.sock, "network", "create", "taken", f"--cidr={net}").returncode == 0
    try:
        p = rnx_as(d, uid, "network", "create", "taken", f"--cidr={other}")
        assert p.returncode == 1 and "network taken already exists, another user's" in p.stderr \
            and "choose another name" in p.stderr, p.stderr
        p = rnx(d.sock, "network", "create", "taken", f"--cidr={other}")      # its owner's own
        assert p.returncode == 1 and "network taken already exists (rnx network list)" in p.stderr, p.stderr
    finally:
        rnx(d.sock, "network", "remove", "taken")


def test_a_named_networks_size_is_said_one_way(net_daemon, tmp_path):  # noqa: F811 (the fixture)
    """docs/networks.md, "Limits": a network is /16 to /30. Typed: --cidr=.../31 was refused
    "prefix /31 is outside /8../30", and the /8 that allows, "/8 is larger than a named network may
    be (/16 to /30)". Now both name /16 to /30."""
    d = net_daemon
    p = rnx(d.sock, "network", "create", "sz", "--cidr=10.218.50.0/31")
    assert p.returncode == 1 and "/31 is smaller than a named network may be (/16 to /30" in p.stderr, p.stderr
    p = rnx(d.sock, "network", "create", "sz", "--cidr=10.0.0.0/8")
    assert p.returncode == 1 and "/8 is larger than a named network may be (/16 to /30)" in p.stderr, p.stderr
    wf = tmp_path / "sz.yml"
    wf.write_text("jobs:\n  a:\n    command: 'true'\n    network: {name: sz, cidr: 10.218.50.0/31}\n")
    p = rnx(d.sock, "workflow", "validate", str(wf))
    assert p.returncode == 1 and "/31 is smaller than a named network may be (/16 to /30" in p.stderr, p.stderr
