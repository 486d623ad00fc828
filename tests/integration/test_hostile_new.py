"""Hostile tests of what was added on 2026-11-30 (tester hnew): a CA replaced by a reload, array
control by another uid, an array task's /work copy. Real daemon (conftest fixtures)."""
import http.client
import os
import shutil
import signal
import time

import pytest

import certs
from conftest import rnx_as, tasks_of

A, B = 4351, 4352


def _remote():
    from test_remote import Remote
    return Remote()


@pytest.mark.skipif(not (certs.CERTTOOL and shutil.which("curl") and shutil.which("gnutls-cli")),
                    reason="needs certtool, gnutls-cli (gnutls-bin) and curl")
def test_a_ca_replaced_by_a_reload_closes_the_old_cas_open_connections():
    # docs/remote.md "Replacing": the CA whose key leaked is replaced (init --force, server
    # --force) and the listener given it by SIGHUP; "nothing the old CA made is accepted". A
    # connection opened before with a certificate of the old CA (one the leaked key could have
    # made: an admin's) must not go on being served: http_reload_remote closes only the
    # connections of revoked serials, and a connection's identity is settled once.
    r = _remote()
    try:
        c = http.client.HTTPSConnection("127.0.0.1", r.port, context=r.ctx("admin"), timeout=30)
        c.request("GET", "/v1/whoami")
        resp = c.getresponse()
        assert resp.status == 200, resp.read()
        resp.read()
        sock = c.sock
        old = os.path.join(r.pki, "old")
        os.makedirs(old)
        for f in ("ca.pem", "ca-key.pem", "server.pem", "server-key.pem"):
            shutil.copy(os.path.join(r.pki, f), old)
        certs.ca(r.pki, name="new CA")
        certs.server(r.pki)
        before = r.d.log().count("certificates read again")
        r.d.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 30
        while time.time() < deadline and r.d.log().count("certificates read again") == before:
            time.sleep(0.1)
        assert r.d.log().count("certificates read again") > before, r.d.log()[-2000:]
        time.sleep(0.5)
        served = None
        try:
            c.request("GET", "/v1/whoami")
            resp = c.getresponse()
            body = resp.read()
            served = (resp.status, body, c.sock is sock)
        except (OSError, http.client.HTTPException):
            pass   # closed at the reload: what is wanted
        c.close()
        assert not (served and served[0] == 200 and served[2]), \
            f"the old CA's admin certificate is still served on its open connection after the CA was replaced: {served}"
    finally:
        r.close()


@pytest.mark.skipif(not (certs.CERTTOOL and shutil.which("curl") and shutil.which("gnutls-cli")),
                    reason="needs certtool, gnutls-cli (gnutls-bin) and curl")
def test_an_update_names_no_job_the_certificate_could_not_name_at_submission():
    # a developer's certificate mapped onto root (remote.users): at submission what the job uses
    # of others' is checked as the account acting within the certificate (authz_as_account), so
    # --after on another user's job is refused; `rnx job update --after` resolved it as the
    # owner's local account (root: every job) instead, which names (and shows the state of, in
    # the wait reason) another user's job the certificate may not see
    from test_remote import Remote
    r = Remote(extra="    Root.Dev: root\n")
    try:
        certs.client(r.pki, "Root.Dev", "developer", name="rootdev")
        st, theirs = r.api("other", "POST", "/v1/jobs", {"command": "/bin/sleep", "args": ["300"]})
        assert st == 201, theirs
        st, body = r.api("rootdev", "POST", "/v1/jobs", {"command": "true", "after": [{"job": theirs["id"]}]})
        assert st in (400, 403, 404), body   # refused at submission, as wanted
        st, mine = r.api("rootdev", "POST", "/v1/jobs", {"command": "true", "hold": True})
        assert st == 201, mine
        st, body = r.api("rootdev", "POST", f"/v1/jobs/{mine['id']}/update", {"after": [{"job": theirs["id"]}]})
        r.d.api("POST", f"/v1/jobs/{theirs['id']}/kill")
        assert st in (400, 403, 404), f"the update named another user's job the certificate could not name: {st} {body}"
    finally:
        r.close()


def test_another_uid_cannot_requeue_suspend_or_resume_an_array(fresh_daemon):
    d = fresh_daemon("limits:\n  max_queued_per_user: 0\n  max_jobs_per_user: 0\n")
    p = rnx_as(d, A, "job", "run", "--array=0-3", "sleep", "300")
    assert p.returncode == 0, p.stderr
    aid = d.job(p.stdout.strip().splitlines()[-1])["id"]
    deadline = time.time() + 30
    while time.time() < deadline and sum(j["status"] == "RUNNING" for j in tasks_of(d, aid)) < 4:
        time.sleep(0.2)
    assert sum(j["status"] == "RUNNING" for j in tasks_of(d, aid)) == 4
    for verb in ("requeue", "suspend", "resume", "hold", "release", "stop"):
        for name in (aid, f"{aid[:8]}_[0-3]", f"{aid[:8]}_1"):
            q = rnx_as(d, B, "job", verb, name)
            assert q.returncode != 0, f"uid {B} {verb} {name}: {q.stdout} {q.stderr}"
    q = rnx_as(d, A, "job", "requeue", "--hold", f"{aid[:8]}_[0-3]")
    assert q.returncode == 0, q.stderr
    q = rnx_as(d, B, "job", "release", f"{aid[:8]}_[0-3]")
    assert q.returncode != 0, q.stdout
    d.rnx("job", "kill", aid)
