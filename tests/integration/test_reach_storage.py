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


# -- a restart over a state directory changed behind joblet's back --------------------------------

SHOW_TOKEN = ["-c", 'echo "token:${TOKEN:-none}"']


def test_stored_requests_unsealed_damaged_or_unreadable_at_a_restart(fresh_daemon):
    """Rows of held jobs changed while joblet was down (killed: no clean stop, so every row is
    looked at): a secret environment stored in clear (an older joblet's row, one written by hand)
    is sealed at the start and reaches the job; a job whose sealed value is damaged, or whose
    request is not JSON, never runs as something else than it was asked (it ran without its
    secret, or failed "exec: : No such file or directory"): it ends FAILED at the start, saying
    why; the jobs beside it are untouched."""
    d = fresh_daemon()
    ids = []
    for token in ("kept", "in-clear", "damaged", "unreadable"):
        code, j = d.api("POST", "/v1/jobs", {"command": "sh", "args": SHOW_TOKEN, "secret_env": {"TOKEN": token},
                                             "hold": True})
        assert code == 201 and j["status"] == "HELD", j
        ids.append(j["id"])
    kept, clear, damaged, unreadable = ids
    d.kill9()
    c = sqlite3.connect(f"{d.state}/joblet.db")
    rows = {jid: json.loads(c.execute("SELECT request FROM jobs WHERE id = ?", (jid,)).fetchone()[0]) for jid in ids}
    r = rows[clear]
    del r["secret_env_sealed"]
    r["secret_env"] = {"TOKEN": "in-clear-by-hand"}
    rows[damaged]["secret_env_sealed"] = "v1:AAAA"
    for jid, req in ((clear, json.dumps(r)), (damaged, json.dumps(rows[damaged])), (unreadable, "not JSON {")):
        c.execute("UPDATE jobs SET request = ? WHERE id = ?", (req, jid))
    c.commit()
    c.close()
    d.start()
    assert "database: sealed the secret environment of 1 stored job" in d.log()
    assert not file_holds(os.path.join(d.state, "joblet.db"), b"in-clear-by-hand")
    c = sqlite3.connect(f"file:{d.state}/joblet.db?mode=ro", uri=True)
    (req,) = c.execute("SELECT request FROM jobs WHERE id = ?", (clear,)).fetchone()
    c.close()
    assert "secret_env_sealed" in req and '"secret_env"' not in req, req[:300]
    for jid, why in ((damaged, "its secret environment cannot be read (a sealed value is damaged)"),
                     (unreadable, "its stored request cannot be read (")):
        j = d.job(jid)
        assert j["status"] == "FAILED" and j["end_reason"] == "start_failed", j
        assert j["error"].startswith(f"joblet cannot run it: {why}"), j["error"]
        code, a = d.api("POST", f"/v1/jobs/{jid}/release")
        assert code == 409, a
    for jid, token in ((kept, "kept"), (clear, "in-clear-by-hand")):
        assert d.api("POST", f"/v1/jobs/{jid}/release")[0] == 200
        assert d.wait(jid)["status"] == "COMPLETED"
        assert d.output(jid) == f"token:{token}\n"
    # a second start decides the same from the same rows, and runs nothing of them
    d.stop()
    d.start()
    assert [d.job(jid)["status"] for jid in ids] == ["COMPLETED", "COMPLETED", "FAILED", "FAILED"]
    assert d.output(damaged) == "" and d.output(unreadable) == ""


@pytest.fixture
def loop_devices():
    import shutil
    if not os.path.exists("/dev/loop-control") or not shutil.which("mke2fs", path="/usr/sbin:/sbin"):
        pytest.skip("needs /dev/loop-control (the loop driver) and mke2fs (e2fsprogs)")


def test_a_volume_whose_image_is_gone_at_a_start_is_unavailable_saying_why(fresh_daemon, loop_devices):
    """A reboot (the mount gone) and the image removed meanwhile (a mistaken rm, a disk swapped):
    the volume is listed unavailable with the reason, a job naming it and a creation of it again
    are refused naming that reason, and it can be removed."""
    d = fresh_daemon()
    code, v = d.api("POST", "/v1/volumes", {"name": "lost", "size_mb": 16})
    assert code == 201, v
    d.stop()
    vdir = os.path.join(d.state, "volumes", "lost")
    subprocess.run(["umount", os.path.join(vdir, "mnt")], check=True)   # what a reboot does
    image = os.path.join(vdir, "image")
    os.unlink(image)
    d.start()
    v = d.api("GET", "/v1/volumes/lost")[1]
    why = f"its image {image}: No such file or directory"
    assert v["state"] == "unavailable" and v.get("error") == why, v
    code, a = d.api("POST", "/v1/jobs", {"command": "true", "volumes": ["lost"]})
    assert code == 409 and a["error"]["field"] == "volumes", a
    assert message(a) == f"volumes: volume 'lost' is unavailable: {why}"
    code, a = d.api("POST", "/v1/volumes", {"name": "lost", "size_mb": 16})
    assert code == 409 and message(a) == f"volume 'lost' exists but is unavailable: {why}", a
    assert d.job_count() == 0
    code, a = d.api("DELETE", "/v1/volumes/lost")
    assert code == 200, a
    assert d.api("GET", "/v1/volumes")[1]["volumes"] == [] and not os.path.exists(vdir)


def test_a_memory_volume_whose_removal_the_database_refused_goes_once_it_takes_it(fresh_daemon):
    """A memory volume's last job ends while another process holds the database's write lock:
    its removal is not committed, so the volume stays (listed, mounted); once the lock goes, its
    removal is written again and the volume goes, its tmpfs unmounted, nothing of it left."""
    d = fresh_daemon()
    code, v = d.api("POST", "/v1/volumes", {"name": "mem", "size_mb": 4, "type": "memory"})
    assert code == 201, v
    jid = d.submit("sh", "-c", "echo x > /volumes/mem/f; while [ ! -e /volumes/mem/go ]; do sleep 0.05; done",
                   volumes=["mem"])
    d.wait_status(jid, "RUNNING")
    mnt = os.path.join(d.state, "volumes", "mem", "mnt")
    gate = os.path.join(mnt, "go")
    wait_for(lambda: os.path.exists(os.path.join(mnt, "f")), "the job's file in the volume")
    lock = DbLock(d.state)
    try:
        open(gate, "w").close()
        wait_for(lambda: "memory volume mem: its last job ended, but:" in d.log(), "the refused removal", 60)
        assert os.path.ismount(mnt)
    finally:
        lock.release()
    assert d.wait(jid)["status"] == "COMPLETED"
    wait_for(lambda: d.api("GET", "/v1/volumes")[1]["volumes"] == [], "the volume removed once committed", 120)
    wait_for(lambda: not os.path.exists(os.path.join(d.state, "volumes", "mem")), "its directory removed", 30)
    assert "memory volume mem removed: its last job ended, and its removal is committed now" in d.log()
    d.stop()
    d.start()
    assert d.api("GET", "/v1/volumes")[1]["volumes"] == []


def test_a_key_file_that_is_not_joblets_refuses_the_start_naming_it(fresh_daemon):
    """<state>/joblet.db.key cut short (a copy that failed, a disk error) or readable by others:
    joblet refuses to start, naming the file and what it must be, rather than seal with it or make
    another over it; with the key back as it was, it starts and its jobs are there."""
    d = fresh_daemon()
    jid = d.submit("true")
    d.wait(jid)
    d.stop()
    key = os.path.join(d.state, "joblet.db.key")
    with open(key, "rb") as f:
        good = f.read()
    with open(key, "wb") as f:
        f.write(good[:10])
    with pytest.raises(RuntimeError) as refused:
        d.start()
    assert f"{key}: not joblet's secret key (a root-owned 0600 file of 32 bytes)" in str(refused.value)
    with open(key, "wb") as f:
        f.write(good)
    os.chmod(key, 0o644)
    with pytest.raises(RuntimeError) as refused:
        d.start()
    assert f"{key}: not joblet's secret key" in str(refused.value)
    with open(key, "rb") as f:
        assert f.read() == good          # not replaced
    os.chmod(key, 0o600)
    d.start()
    assert d.job(jid)["status"] == "COMPLETED"


def test_an_array_whose_stored_request_is_damaged_makes_none_of_its_tasks(fresh_daemon):
    """The arrays' side of the test above: a held array's row changed while joblet was down, its
    sealed secret damaged (or its request not JSON): its tasks not made yet were made without
    their secret (or command) once released; now joblet cancels them at the start, saying why
    (the array ends CANCELED, its error naming the row's damage), and an array beside it runs."""
    d = fresh_daemon()
    ids = []
    for token in ("kept", "damaged", "unreadable"):
        code, a = d.api("POST", "/v1/jobs", {"command": "sh", "args": SHOW_TOKEN, "secret_env": {"TOKEN": token},
                                             "array": "0-2", "hold": True})
        assert code == 201, a
        ids.append(a["id"])
    kept, damaged, unreadable = ids
    d.kill9()
    c = sqlite3.connect(f"{d.state}/joblet.db")
    (req,) = c.execute("SELECT request FROM arrays WHERE id = ?", (damaged,)).fetchone()
    r = json.loads(req)
    assert "secret_env_sealed" in r, sorted(r)
    r["secret_env_sealed"] = "v1:AAAA"
    c.execute("UPDATE arrays SET request = ? WHERE id = ?", (json.dumps(r), damaged))
    c.execute("UPDATE arrays SET request = ? WHERE id = ?", ("not JSON {", unreadable))
    c.commit()
    c.close()
    d.start()
    for aid, why in ((damaged, "its secret environment cannot be read (a sealed value is damaged)"),
                     (unreadable, "its stored request cannot be read (")):
        a = d.api("GET", f"/v1/jobs/{aid}")[1]
        assert a["status"] == "CANCELED", a
        assert f"joblet cannot make its tasks: {why}" in json.dumps(a), a
        d.api("POST", f"/v1/jobs/{aid}/release")
    assert d.api("POST", f"/v1/jobs/{kept}/release")[0] == 200
    wait_for(lambda: d.api("GET", f"/v1/jobs/{kept}")[1]["status"] == "COMPLETED", "the array beside them runs")
    for t in range(3):
        assert d.output(f"{kept}_{t}") == "token:kept\n"
    # none of theirs was made, and a second start decides the same
    d.stop()
    d.start()
    for aid in (damaged, unreadable):
        a = d.api("GET", f"/v1/jobs/{aid}")[1]
        assert a["status"] == "CANCELED" and a["array"]["counts"] == {"CANCELED": 3}, a
