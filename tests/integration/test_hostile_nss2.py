"""Account look-ups off the loop (core/nsscache.h), as a hostile or unlucky caller would use them:
what one account whose directory entry is slow may hold of everyone else's.

Uses test_hostile_nss's LD_PRELOAD object (slow_nss): the look-ups of one name take
SLOW_NSS_SECONDS."""
import http.client
import json
import os
import shutil
import ssl
import threading
import time

import pytest

import certs
from conftest import free_port
from test_hostile_nss import _lines, slow_nss  # noqa: F401 (the fixture)

SLOW_PERSON = "slow-nss-person"  # the name slow_nss slows: an unmapped person's account
FAST_PERSON = "Fast.Person"


def _ctx(pki, who):
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    c.load_verify_locations(f"{pki}/ca.pem")
    c.load_cert_chain(f"{pki}/{who}.pem", f"{pki}/{who}-key.pem")
    return c


def _get(port, pki, who, path, out=None, timeout=60):
    c = http.client.HTTPSConnection("127.0.0.1", port, context=_ctx(pki, who), timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        try:
            body = json.loads(body)
        except ValueError:
            pass
        if out is not None:
            out.append((r.status, body))
        return r.status, body
    finally:
        c.close()


@pytest.mark.skipif(not (certs.CERTTOOL and shutil.which("gnutls-cli")), reason="needs certtool")
def test_a_person_whose_account_is_slow_does_not_refuse_other_persons_their_look_up(fresh_daemon, slow_nss, tmp_path):
    """TLS connections whose person's account is being looked up park (api/park.c) before who
    asks is settled. They were all counted as one user (uid -1): one person whose directory entry
    is slow, with 16 requests waiting on it (a client that retries, a few scripts), took every
    ticket of that user, and every other person whose account was not kept yet was refused 503
    "too many requests wait already" instead of waiting the moment its own look-up takes."""
    env, log = slow_nss
    env = dict(env, SLOW_NSS_SECONDS="6")
    port = free_port()
    pki = str(tmp_path / "pki")
    certs.ca(pki)
    certs.server(pki)
    certs.client(pki, SLOW_PERSON, "developer", name="slow")
    certs.client(pki, FAST_PERSON, "reader", name="fast")
    os.chmod(tmp_path, 0o755)
    d = fresh_daemon(f"remote:\n  listen: [\"127.0.0.1:{port}\"]\n  pki_dir: {pki}\n"
                     f"  users:\n    {FAST_PERSON}: daemon\n", env=env)
    slow_answers = []
    threads = [threading.Thread(target=_get, args=(port, pki, "slow", "/v1/version", slow_answers))
               for _ in range(16)]
    for t in threads:
        t.start()
    try:
        deadline = time.time() + 30
        while "enter" not in _lines(log) and time.time() < deadline:
            time.sleep(0.02)
        assert "enter" in _lines(log), f"the slow person's account was never looked up\n{d.log()[-2000:]}"
        time.sleep(1.5)  # every one of the 16 connections handshaken and parked on it
        assert "leave" not in _lines(log), "the slow look-up ended before the other person asked (a slow machine?)"
        t0 = time.time()
        code, body = _get(port, pki, "fast", "/v1/whoami")
        took = time.time() - t0
        fast_before_leave = "leave" not in _lines(log)
    finally:
        for t in threads:
            t.join(timeout=120)
    print(f"another person's first request while 16 of {SLOW_PERSON}'s waited: {code} in {took:.3f} s")
    assert code == 200, (code, body)
    assert body["user"] == "daemon" and body["role"] == "reader", body
    assert fast_before_leave, f"the other person's request waited for {SLOW_PERSON}'s look-up ({took:.3f} s)"
    # the slow person is answered once its look-up is done: no such account, refused
    assert len(slow_answers) == 16 and all(s == 403 for s, _ in slow_answers), slow_answers



def test_a_look_up_that_never_ends_holds_no_request_past_a_deadline(fresh_daemon, slow_nss):
    """A directory server that does not answer (here: the look-up takes longer than joblet's
    deadline, core/nsscache.h NSSCACHE_DEADLINE_MS) must not hold the request parked for ever
    (libmicrohttpd never times out a suspended connection): past the deadline the look-up counts
    as failed, so the request is answered as for an account that could not be looked up (the
    lesser role, no name; a submission is refused 503) before the look-up ends, and the late
    answer is kept."""
    from conftest import api_as
    from test_hostile_nss import SLOW_UID
    env, log = slow_nss
    env = {**env, "SLOW_NSS_SECONDS": "16"}
    d = fresh_daemon(env=env)
    t = time.time()
    code, who = api_as(d, SLOW_UID, "GET", "/v1/whoami")
    took = time.time() - t
    print(f"the request waited {took:.1f} s for a look-up of 16 s")
    assert "leave" not in _lines(log), "the answer came only once the look-up had ended"
    assert code == 200 and who["uid"] == SLOW_UID and who.get("user") is None and who["role"] == "developer", who
    assert "no answer in 10 s" in d.log(), d.log()[-2000:]
    code, body = api_as(d, SLOW_UID, "POST", "/v1/jobs", {"command": "true"})
    assert code == 503 and "could not be looked up" in body["error"]["message"], (code, body)
    assert "leave" not in _lines(log)
    # once the late answer is in (no account), a submission goes through
    deadline = time.time() + 30
    while "leave" not in _lines(log) and time.time() < deadline:
        time.sleep(0.1)
    code, job = api_as(d, SLOW_UID, "POST", "/v1/jobs", {"command": "true"})
    assert code == 201, (code, job)
