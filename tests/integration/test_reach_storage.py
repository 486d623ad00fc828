"""Paths of the daemon's storage and machine resources that a coverage run of the whole suite
found no test reached (volumes, networks, runtime routes, the database layer and its sealing):
refusals a user or an admin meets, and what a restart makes of a damaged state directory. Each
test checks the answer (status, the message naming the field and what is accepted) and the
state after (nothing lost, nothing left mounted).

One daemon serves the module's refusals: its job networks' helper (network.helper) is a script
of the test's own that changes nothing on the host, so networks are made and removed in joblet's
books only (no nftables table, no link: this module is not of conftest's "host-network" group).
The tests that restart a daemon, or lock its database, have one of their own."""
import http.client
import json
import os
import sqlite3
import subprocess

import pytest

import busybox_runtime
from conftest import Daemon, DbLock, UnixHTTPConnection, api_as, file_holds, need_root, rnx_as, wait_for

USER_A, USER_B = 4431, 4432


def raw(d, method, path, body=b"", ctype=None):
    """A request with a body of bytes as they are: (status, answer as JSON)."""
    c = UnixHTTPConnection(d.sock)
    try:
        c.request(method, path, body=body or None, headers={"Content-Type": ctype} if ctype else {})
        r = c.getresponse()
        data = r.read()
        return r.status, json.loads(data) if data else None
    finally:
        c.close()


def message(answer):
    return answer["error"]["message"]


@pytest.fixture(scope="module")
def d():
    need_root()
    dm = Daemon()
    helper = os.path.join(dm.dir, "net-helper")   # joblet-net's stand-in: reads its input, changes nothing
    with open(helper, "w") as f:
        f.write("#!/bin/sh\ncat >/dev/null\nexit 0\n")
    os.chmod(helper, 0o755)
    with open(dm.config, "a") as f:
        f.write(f"network:\n  helper: {helper}\n  max_per_user: 1\n  dns: 192.0.2.53, 192.0.2.54\n")
    if os.path.exists(busybox_runtime.BUSYBOX):
        rt = os.path.join(dm.state, "runtimes")
        busybox_runtime.make(rt, name="notest")
        manifest = os.path.join(rt, "notest", "manifest.yml")
        with open(manifest) as f:
            lines = [l for l in f if not l.startswith("test:")]
        with open(manifest, "w") as f:
            f.writelines(lines)
    dm.start()
    yield dm
    dm.cleanup()


# -- the API's refusals of bodies and routes -----------------------------------------------------

def test_bodies_that_are_not_objects_and_unknown_routes_are_refused_naming_what_is_accepted(d):
    code, a = d.api("POST", "/v1/networks", [1, 2])
    assert code == 400 and message(a) == 'the request body must be a JSON object {"name", "cidr"}', a
    code, a = d.api("POST", "/v1/networks", {"cidr": "10.218.40.0/24"})
    assert code == 400 and a["error"]["field"] == "name", a
    assert message(a) == "name: a network needs a name (a-z, 0-9, '_', '.', '-')"
    code, a = d.api("PUT", "/v1/networks/x")
    assert code == 404 and message(a) == "no route PUT /v1/networks/x; see docs/api.md", a

    code, a = d.api("POST", "/v1/volumes", [{"name": "v"}])
    assert code == 400 and message(a) == 'the request body must be a JSON object {"name", "size_mb", "type"}', a
    code, a = d.api("PUT", "/v1/volumes/x")
    assert code == 404 and message(a) == "no route PUT /v1/volumes/x; see docs/api.md", a

    code, a = d.api("PUT", "/v1/runtimes")
    assert code == 404 and message(a) == "no route PUT /v1/runtimes; see docs/api.md (Runtimes)", a
    code, a = d.api("POST", "/v1/runtime-builds")
    assert code == 404 and message(a) == "no route POST /v1/runtime-builds; see docs/api.md (Runtimes)", a
    for num in ("999", "abc", "99999999999999999999"):
        code, a = d.api("GET", f"/v1/runtime-builds/{num}/log")
        assert code == 404 and message(a).startswith(f"no runtime build '{num[:23]}' (rnx runtime builds"), a
    # nothing was made by any of them
    assert d.api("GET", "/v1/volumes")[1]["volumes"] == []
    assert [n["name"] for n in d.api("GET", "/v1/networks")[1]["networks"]] == ["bridge", "isolated"]


def test_a_recipe_or_an_archive_that_is_empty_or_too_large_is_refused(d):
    code, a = raw(d, "POST", "/v1/runtimes")
    assert code == 400, a
    assert message(a) == "recipe: the body is empty; send the recipe's YAML text (rnx runtime build RECIPE.yml)"
    code, a = raw(d, "POST", "/v1/runtimes", b"name: x\n#" + b"y" * 70000, "application/yaml")
    assert code == 413 and message(a) == "recipe: a recipe is at most 65536 bytes", a
    code, a = raw(d, "POST", "/v1/runtime-imports")
    assert code == 400, a
    assert message(a) == "archive: the body is empty; send a tar.zst as rnx runtime export writes it"
    # no build was started, and no file of the empty upload is left in the runtimes' directory
    assert d.api("GET", "/v1/runtime-builds")[1]["builds"] == []
    rt = os.path.join(d.state, "runtimes")
    assert not [n for n in os.listdir(rt) if n.startswith(".upload")] if os.path.isdir(rt) else True


@pytest.mark.skipif(not os.path.exists(busybox_runtime.BUSYBOX), reason="busybox-static is not installed")
def test_a_runtime_without_a_test_command_says_so_and_runs_nothing(d):
    before = d.job_count()
    code, a = d.api("POST", "/v1/runtimes/notest/test")
    assert code == 409, a
    assert message(a) == "runtime 'notest' has no test command (its recipe has no test:)"
    code, a = d.api("GET", "/v1/runtimes/notest/nothing")
    assert code == 404 and message(a) == "no route GET /v1/runtimes/notest/nothing; see docs/api.md (Runtimes)", a
    assert d.job_count() == before


# -- volumes and networks of other users --------------------------------------------------------

def test_another_users_volume_is_refused_by_name_not_shown(d):
    code, v = api_as(d, USER_A, "POST", "/v1/volumes", {"name": "a-scratch", "size_mb": 4, "type": "memory"})
    assert code == 201, v
    try:
        code, a = api_as(d, USER_B, "GET", "/v1/volumes/a-scratch")
        assert code == 403, a
        assert message(a) == "volume 'a-scratch' is another user's; only its owner, root and admins may see it"
        assert "4431" not in json.dumps(a)
        assert api_as(d, USER_B, "GET", "/v1/volumes")[1]["volumes"] == []
        assert api_as(d, USER_A, "GET", "/v1/volumes/a-scratch")[0] == 200
    finally:
        assert api_as(d, USER_A, "DELETE", "/v1/volumes/a-scratch")[0] == 200


def test_networks_dns_is_what_jobs_on_networks_resolve_with(d):
    with open(os.path.join(d.state, "networks", "resolv.conf")) as f:
        lines = [l for l in f.read().splitlines() if not l.startswith("#")]
    assert lines == ["nameserver 192.0.2.53", "nameserver 192.0.2.54"], lines


def test_network_removal_and_creation_refused_naming_why(d):
    code, n = api_as(d, USER_A, "POST", "/v1/networks", {"name": "ra", "cidr": "10.218.7.0/24"})
    assert code == 201 and n["owner_uid"] == USER_A, n
    aid = None
    try:
        # network.max_per_user 1: the second is refused, saying how many and what to do
        code, a = api_as(d, USER_A, "POST", "/v1/networks", {"name": "rb", "cidr": "10.218.8.0/24"})
        assert code == 429, a
        assert message(a) == ("you own 1 network, the most network.max_per_user (1) allows; remove one first "
                              "(rnx network remove NAME)"), a
        # the built-in ones are nobody's to remove, root's neither
        for name in ("bridge", "isolated"):
            code, a = d.api("DELETE", f"/v1/networks/{name}")
            assert code == 409, a
            assert message(a) == f"network {name} is built in (network.{name}_cidr): it cannot be removed"
        # another user neither sees it nor removes it; a workflow of theirs may not take its name
        assert api_as(d, USER_B, "DELETE", "/v1/networks/ra")[0] == 404
        wf = os.path.join(d.dir, "wf.yaml")   # (d.dir: 0755, readable by USER_B)
        with open(wf, "w") as f:
            f.write("jobs:\n  a:\n    command: 'true'\n    network: {name: ra, cidr: 10.218.7.0/24}\n")
        os.chmod(wf, 0o644)
        p = rnx_as(d, USER_B, "workflow", "validate", wf)
        assert p.returncode == 1 and p.stderr.endswith("network ra exists and is another user's; choose another "
                                                       "name\n"), p.stderr
        # an array whose tasks are still to make names it: not removed under it
        code, arr = api_as(d, USER_A, "POST", "/v1/jobs", {"command": "true", "array": "0-3", "network": "ra",
                                                            "hold": True})
        assert code == 201, arr
        aid = arr["id"]
        code, a = api_as(d, USER_A, "DELETE", "/v1/networks/ra")
        assert code == 409, a
        assert message(a) == f"network ra is named by 1 job array with tasks still to make ({aid[:8]})", a
        code, a = api_as(d, USER_B, "DELETE", "/v1/networks/ra")
        assert code == 404, a
        assert [x["name"] for x in api_as(d, USER_A, "GET", "/v1/networks")[1]["networks"]] == \
            ["bridge", "isolated", "ra"]
        assert api_as(d, USER_A, "POST", f"/v1/jobs/{aid}/cancel")[0] == 200
        aid = None
        code, a = api_as(d, USER_A, "DELETE", "/v1/networks/ra")
        assert code == 200, a
    finally:
        if aid:
            d.api("POST", f"/v1/jobs/{aid}/cancel")
        d.api("DELETE", "/v1/networks/ra")
    assert [x["name"] for x in d.api("GET", "/v1/networks")[1]["networks"]] == ["bridge", "isolated"]


def test_networks_without_their_helper_are_refused_saying_why(fresh_daemon):
    missing = "/nonexistent/joblet-net-of-the-test"
    d = fresh_daemon(f"network:\n  helper: {missing}\n")
    code, lst = d.api("GET", "/v1/networks")
    why = f"{missing}: No such file or directory (network.helper)"
    assert code == 200 and lst["available"] is False and lst["why"] == why, lst
    code, a = d.api("POST", "/v1/networks", {"name": "nh", "cidr": "10.218.9.0/24"})
    assert code == 503 and message(a) == f"job networks are not available on this machine: {why}", a
    code, a = d.api("POST", "/v1/jobs", {"command": "true", "network": "bridge"})
    assert code == 503 and why in message(a), a
    assert [n["name"] for n in d.api("GET", "/v1/networks")[1]["networks"]] == ["bridge", "isolated"]
    assert d.job_count() == 0
