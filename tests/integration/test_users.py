"""Identity from SO_PEERCRED: a non-root caller's jobs run as that caller, and callers only
see and act on their own jobs (root sees all)."""
import json

import pytest

from conftest import api_as, need_setpriv, rnx_as

UID = 4321


def as_user(d, *args):
    """rnx run as uid/gid UID through setpriv."""
    return rnx_as(d, UID, *args)


def test_non_root_job_runs_as_its_submitter(daemon):
    """A job submitted by uid 4321 runs as uid 4321 and is owned by it."""
    p = as_user(daemon, "job", "run", "--follow", "sh", "-c", "id -u; id -g")
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [str(UID), str(UID)]
    mine = json.loads(as_user(daemon, "job", "list", "--json").stdout)
    assert mine and all(j["owner_uid"] == UID and j["uid"] == UID for j in mine)


def test_callers_see_only_their_own_jobs(daemon):
    """uid 4321 cannot list, read, stop or delete root's job; root sees uid 4321's jobs."""
    root_job = daemon.submit("sleep", "30")
    try:
        # started first: a loaded machine may take a while, and what is checked below is that
        # the other user's stop did not stop it
        daemon.wait_status(root_job, "RUNNING")
        listed = json.loads(as_user(daemon, "job", "list", "--json").stdout)
        assert root_job not in {j["id"] for j in listed}
        for cmd in (("job", "status"), ("job", "log", "--no-follow"), ("job", "stop"), ("job", "delete")):
            p = as_user(daemon, *cmd, root_job)
            assert p.returncode == 1, (cmd, p.stdout, p.stderr)
            # its full id: said to be another user's, and nothing else of it (issue 26)
            assert f"job {root_job} is another user's job" in p.stderr and "sleep" not in p.stderr, (cmd, p.stderr)
        assert daemon.job(root_job)["status"] == "RUNNING"
        p = as_user(daemon, "job", "run", "true")
        assert p.returncode == 0, p.stderr
        user_job = p.stdout.strip()
        assert daemon.job(user_job)["owner_uid"] == UID
    finally:
        daemon.api("POST", f"/v1/jobs/{root_job}/stop")
        daemon.wait(root_job)


def test_non_root_delete_all_spares_other_users(daemon):
    """delete-all by uid 4321 removes only its own finished jobs."""
    root_job = daemon.submit("true")
    daemon.wait(root_job)
    p = as_user(daemon, "job", "delete-all")
    assert p.returncode == 0, p.stderr
    assert daemon.job(root_job)["status"] == "COMPLETED"


def test_caller_with_a_job_uid_is_refused(daemon):
    """A caller whose uid lies in the range root's jobs run as may not submit (it could read them)."""
    need_setpriv()
    before = daemon.job_count()
    p = rnx_as(daemon, 2000000005, "job", "run", "true")
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "jobs.uid_range_start" in p.stderr, p.stderr
    assert daemon.job_count() == before


def test_roles_from_the_one_table(fresh_daemon):
    """The caller's role (docs/architecture.md, "Who may do what"): root is admin, a member of
    server.admin_group an operator (runs the machine, sees only its own jobs), anyone else a
    developer; whoami says it and the table's rows hold."""
    import grp
    try:
        gid = grp.getgrnam("nogroup").gr_gid
    except KeyError:
        pytest.skip("no group 'nogroup' to name as server.admin_group")
    need_setpriv()
    d = fresh_daemon("server:\n  admin_group: nogroup\n")

    code, me = d.api("GET", "/v1/whoami")
    assert code == 200 and me["role"] == "admin" and me["admin"] and me["sees_all_jobs"], me
    p = rnx_as(d, UID, "--json", "job", "run", "sleep", "30")
    assert p.returncode == 0, p.stderr
    dev_job = json.loads(p.stdout)["id"]
    # the operator runs the machine: the audit trail is theirs, another user's job is not
    p = rnx_as(d, (UID + 7, gid), "gpu", "list")
    assert p.returncode in (0, 1), p.stderr
    p = rnx_as(d, (UID + 7, gid), "job", "status", dev_job)
    assert p.returncode == 1 and "another user's job" in p.stderr, p.stderr
    p = rnx_as(d, UID, "job", "status", dev_job)
    assert p.returncode == 0, p.stderr
    d.rnx("job", "kill", dev_job, check=True)
    # whoami as each, over the API (rnx has no whoami command)
    for uid, g, role, admin in ((UID, UID, "developer", False), (UID + 7, gid, "operator", True)):
        ans = api_as(d, (uid, g), "GET", "/v1/whoami")[1]
        assert ans["role"] == role and ans["admin"] is admin and ans["sees_all_jobs"] is False, ans
        code, ans = api_as(d, (uid, g), "GET", "/v1/audit")
        assert code == (200 if admin else 403), (code, ans)
