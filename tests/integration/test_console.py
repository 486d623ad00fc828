"""The web console (docs/console.md): its files served by joblet, and `rnx console`'s loopback
proxy with its one-time token, session cookie, the page's key and 401s (the attacks of another
local user: test_hostile_console.py)."""
import json
import os
import shutil
import socket
import subprocess
import time

import pytest

from conftest import UnixHTTPConnection, wait_for
from console_util import Console

UID = 4323


def test_the_daemon_serves_the_console_files(daemon):
    for path, ctype in [("/", "text/html"), ("/console/console.js", "text/javascript"),
                        ("/console/console.css", "text/css"), ("/console/favicon.svg", "image/svg+xml")]:
        c = UnixHTTPConnection(daemon.sock)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        assert r.status == 200 and r.getheader("Content-Type").startswith(ctype), path
        assert body and "default-src 'none'" in r.getheader("Content-Security-Policy")
    c = UnixHTTPConnection(daemon.sock)
    c.request("GET", "/console/../../etc/passwd")
    r = c.getresponse()
    assert r.status == 404 and b"root:" not in r.read()
    st, me = daemon.api("GET", "/v1/whoami")
    assert st == 200 and me["uid"] == 0 and me["admin"] is True


def read_to_close(s):
    """What the console sends on s until it closes it (each connection carries one request)."""
    got = b""
    while True:
        d = s.recv(65536)
        if not d:
            return got
        got += d


def test_the_proxy_needs_the_token_then_the_cookie(daemon):
    con = Console(daemon)
    try:
        r, body = con.request("GET", "/")
        assert r.status == 401 and b"rnx console" in body
        r, _ = con.request("GET", "/v1/jobs")
        assert r.status == 401
        r, _ = con.request("GET", "/?token=" + "0" * 64)
        assert r.status == 401
        # the token at another loopback name than the printed one (an origin another user's
        # server may have held: test_hostile_console_worker) is refused and stays good
        for host in (f"127.0.0.1:{con.port}", f"localhost:{con.port}", f"other.localhost:{con.port}"):
            r, body = con.request("GET", f"/?token={con.token}", headers={"Host": host})
            assert r.status == 403 and b"not this console's name" in body, (host, r.status, body)
            assert con.name.encode() not in body  # (the name is the link's, not told to whoever asks)
        r, _ = con.request("GET", f"/?token={con.token}")
        assert r.status == 303 and r.getheader("Location").startswith("/#key=")
        key = r.getheader("Location")[len("/#key="):]
        assert len(key) == 64
        cookie = r.getheader("Set-Cookie")
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        jar = cookie.split(";")[0]
        # the link works once
        r, _ = con.request("GET", f"/?token={con.token}")
        assert r.status == 401
        r, _ = con.request("GET", "/", headers={"Cookie": f"joblet_console_{con.port}=" + "a" * 64})
        assert r.status == 401
        r, body = con.request("GET", "/", headers={"Cookie": "theme=dark; " + jar})
        assert r.status == 200 and b"<html" in body
        # the page's files with the cookie; the API needs the page's key too
        r, _ = con.request("GET", "/v1/whoami", headers={"Cookie": jar})
        assert r.status == 401
        r, body = con.request("GET", "/v1/whoami", headers={"Cookie": jar, "X-Console-Key": key})
        assert r.status == 200 and json.loads(body)["uid"] == 0
        # a name that resolves here by DNS rebinding is not this console's host
        r, _ = con.request("GET", "/v1/whoami", headers={"Cookie": jar, "X-Console-Key": key,
                                                         "Host": "evil.example:%d" % con.port})
        assert r.status == 403
        # each connection carries one request: a second one on it is not passed unchecked
        s = socket.create_connection(("127.0.0.1", con.port), timeout=10)
        s.sendall(f"GET /v1/whoami HTTP/1.1\r\nHost: {con.netloc}\r\nCookie: {jar}\r\nX-Console-Key: {key}\r\n"
                  "Connection: keep-alive\r\n\r\n"
                  f"GET /v1/jobs HTTP/1.1\r\nHost: {con.netloc}\r\n\r\n".encode())
        got = read_to_close(s)
        assert got.count(b"HTTP/1.1 200") == 1 and b'"uid":0' in got and b'"jobs"' not in got
        s.close()
    finally:
        con.stop()


def test_a_silent_connection_is_kept_and_a_half_sent_head_gets_408(daemon):
    """A browser opens connections before it needs them and sends its request on one many seconds
    later: past the 10 s a head has, such a connection still carries the request. A head begun
    and not finished gets 408 after 10 s from its first byte."""
    con = Console(daemon)
    try:
        jar = con.sign_in()
        idle = socket.create_connection(("127.0.0.1", con.port), timeout=30)
        half = socket.create_connection(("127.0.0.1", con.port), timeout=30)
        time.sleep(3)
        start = time.monotonic()
        half.sendall(b"GET /v1/whoami HTTP/1.1\r\n")        # its 10 s start now, not at connect
        got = half.recv(4096)
        assert got.startswith(b"HTTP/1.1 408 "), got
        assert time.monotonic() - start >= 8.5, time.monotonic() - start
        half.close()
        time.sleep(1)                                          # the idle one is 14 s old now
        idle.sendall(f"GET /v1/whoami HTTP/1.1\r\nHost: {con.netloc}\r\nCookie: {jar}\r\n"
                     f"X-Console-Key: {con.key}\r\n\r\n".encode())
        got = read_to_close(idle)
        assert got.startswith(b"HTTP/1.1 200 ") and b'"uid":0' in got, got[:300]
        idle.close()
    finally:
        con.stop()


def test_the_proxy_listens_on_loopback_only(daemon):
    con = Console(daemon)
    try:
        out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True).stdout
        mine = [l for l in out.splitlines() if f":{con.port} " in l]
        # 127.0.0.1 and [::1] (where browsers go first for NAME.localhost: test_hostile_console)
        assert mine and all("127.0.0.1:" in l or "[::1]:" in l for l in mine), mine
        assert any("[::1]:" in l for l in mine), mine
    finally:
        con.stop()


def test_the_proxy_carries_the_calling_users_identity(daemon):
    con = Console(daemon, uid=UID)
    try:
        con.sign_in()
        r, body = con.request("GET", "/v1/whoami", headers=con.auth())
        me = json.loads(body)
        assert me["uid"] == UID and me["admin"] is False
        root_job = daemon.submit("sleep", "60")
        r, body = con.request("GET", "/v1/jobs", headers=con.auth())
        assert r.status == 200 and root_job not in {j["id"] for j in json.loads(body)["jobs"]}
        r, body = con.request("POST", "/v1/gpus/0/drain", headers=con.auth(**{"Content-Type": "application/json"}))
        assert r.status in (403, 404)
        daemon.rnx("job", "stop", root_job)
    finally:
        con.stop()


def test_another_local_user_cannot_use_the_url(daemon):
    """uid 4324 on the same machine: without the cookie, 401; with the link after its owner
    used it, 401."""
    con = Console(daemon)
    try:
        con.sign_in()
        probe = ("import http.client,sys\n"
                 "c=http.client.HTTPConnection('127.0.0.1',%d,timeout=10)\n"
                 "c.request('GET',sys.argv[1],headers={'Host':%r}); print(c.getresponse().status)\n") % (con.port, con.netloc)
        for path in ["/", "/v1/jobs", "/v1/events", f"/?token={con.token}"]:
            p = subprocess.run(["setpriv", f"--reuid={UID + 1}", f"--regid={UID + 1}", "--clear-groups",
                                "/usr/bin/python3", "-c", probe, path], capture_output=True, text=True, timeout=20)
            assert p.stdout.strip() == "401", (path, p.stdout, p.stderr)
    finally:
        con.stop()


def test_events_through_the_proxy(daemon):
    con = Console(daemon)
    try:
        jar = con.sign_in()
        s = socket.create_connection(("127.0.0.1", con.port), timeout=10)
        # an EventSource cannot send headers: the page's key rides in the URL
        s.sendall(f"GET /v1/events?console_key={con.key} HTTP/1.1\r\nHost: {con.netloc}\r\n"
                  f"Cookie: {jar}\r\n\r\n".encode())
        buf = b""
        while b"event: hello" not in buf:
            got = s.recv(4096)
            assert got, buf
            buf += got
        assert b"text/event-stream" in buf
        jid = daemon.submit("true")
        while jid.encode() not in buf:
            got = s.recv(4096)
            assert got, buf
            buf += got
        s.close()
    finally:
        con.stop()


ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "assets", "console")


def served(name):
    """The bytes joblet serves for the console's file name: the source file with its integrity
    placeholders filled in, as the build fills them (scripts/embed_assets.py)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "embed_assets", os.path.join(ASSETS, "..", "..", "scripts", "embed_assets.py"))
    embed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(embed)
    raw = {n: open(os.path.join(ASSETS, n), "rb").read() for n in os.listdir(ASSETS)}
    return embed.served(name, raw, {})


def curl(*args):
    """curl's head and body bytes (no decoding by curl: --compressed is never given)."""
    p = subprocess.run(["curl", "-sS", *([] if "-I" in args else ["-D", "-"]), *args], capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr
    head, _, body = p.stdout.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers.setdefault(k.strip().lower(), []).append(v.strip())
    return status, {k: ", ".join(v) for k, v in headers.items()}, body


@pytest.mark.skipif(not shutil.which("curl"), reason="needs curl")
def test_the_files_are_served_gzipped_where_the_browser_takes_it(daemon):
    import gzip
    for name, path in [("index.html", "/"), ("console.js", "/console/console.js"),
                       ("console.css", "/console/console.css"), ("favicon.svg", "/console/favicon.svg")]:
        src = served(name)
        url = ["--unix-socket", daemon.sock, "http://joblet" + path]
        # gzip taken: compressed, and the bytes are the file's once decompressed
        st, h, body = curl(*url, "-H", "Accept-Encoding: gzip, deflate, br")
        assert st == 200 and h.get("content-encoding") == "gzip", (path, h)
        assert "Accept-Encoding" in h["vary"] and h["cache-control"] == "no-cache"
        assert int(h["content-length"]) == len(body) and gzip.decompress(body) == src, path
        if len(src) > 2000:   # (index.html's integrity hashes, 200 random-looking bytes, do not compress)
            assert len(body) < len(src) / 2, (path, len(body), len(src))
        gz_tag = h["etag"]
        # no Accept-Encoding, or gzip refused (q=0, also under "*"), or only others: the file as it is
        for ae in [None, "identity", "gzip;q=0", "br, *;q=0", "*;q=1, gzip; q=0.000", "deflate"]:
            st, h, body = curl(*url, *(["-H", f"Accept-Encoding: {ae}"] if ae else []))
            assert st == 200 and "content-encoding" not in h and body == src, (path, ae, h)
            assert "Accept-Encoding" in h["vary"] and h["etag"] != gz_tag
        for ae in ["br;q=1, *;q=0.5", "GZIP;q=0.001", "x-gzip"]:
            st, h, body = curl(*url, "-H", f"Accept-Encoding: {ae}")
            assert st == 200 and h.get("content-encoding") == "gzip" and gzip.decompress(body) == src, (path, ae)
        # revalidation: the tag of the representation asked for gives 304, the other's does not
        st, h, body = curl(*url, "-H", "Accept-Encoding: gzip", "-H", f"If-None-Match: {gz_tag}")
        assert st == 304 and body == b"" and h["etag"] == gz_tag and "Accept-Encoding" in h["vary"]
        st, h, body = curl(*url, "-H", f"If-None-Match: {gz_tag}")
        assert st == 200 and body == src
        st, h, body = curl(*url, "-I", "-H", "Accept-Encoding: gzip")
        assert st == 200 and h.get("content-encoding") == "gzip" and body == b"" and h["etag"] == gz_tag
    # through rnx console, as a browser gets them
    con = Console(daemon)
    try:
        con.sign_in()
        st, h, body = curl(f"{con.origin}/console/console.js", "-H", f"Cookie: {con.jar}", "-H", "Accept-Encoding: gzip")
        assert st == 200 and h.get("content-encoding") == "gzip"
        assert gzip.decompress(body) == served("console.js")
        st, h, body = curl(f"{con.origin}/console/console.js", "-H", f"Cookie: {con.jar}")
        assert st == 200 and "content-encoding" not in h and body == served("console.js")
    finally:
        con.stop()


FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")


def test_the_audit_trail_pages_by_record_id(fresh_daemon):
    """GET /v1/audit?before=ID / after=ID: bounded pages that, walked either way, give every
    record once, newest first, with older/newer saying where more lie; filters hold on every page."""
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n")
    for k in range(30):
        for act in ("drain", "online"):
            st, g = d.api("POST", f"/v1/gpus/{k % 3}/{act}", {})
            assert st == 200, g
    st, full = d.api("GET", "/v1/audit")
    assert st == 200 and full["older"] is False and full["newer"] is False
    ids = [r["id"] for r in full["records"]]
    assert len(ids) >= 120 and ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids)

    def walk(q, ids):
        pages, cur = [], None
        while True:
            st, p = d.api("GET", f"/v1/audit?limit=7{q}" + (f"&before={cur}" if cur else ""))
            assert st == 200, p
            assert len(p["records"]) <= 7 and p["newer"] is bool(pages)
            pages.append([r["id"] for r in p["records"]])
            if not p["older"]:
                break
            cur = pages[-1][-1]
        assert [i for pg in pages for i in pg] == ids and all(len(pg) == 7 for pg in pages[:-1])
        # and back towards the newest with after=
        back, cur = [], pages[-1][0]
        while True:
            st, p = d.api("GET", f"/v1/audit?limit=7{q}&after={cur}")
            assert st == 200, p
            got = [r["id"] for r in p["records"]]
            assert got == sorted(got, reverse=True) and len(got) <= 7 and p["older"] is True
            back = got + back
            if not p["newer"]:
                break
            cur = got[0]
        assert back == ids[:len(back)] and len(back) == len(ids) - len(pages[-1])
        return pages

    walk("", ids)
    st, g1 = d.api("GET", "/v1/audit?gpu=1")
    pages = walk("&gpu=1", [r["id"] for r in g1["records"]])
    assert all(r["gpu"] == 1 for r in g1["records"]) and len(pages) > 3
    # the edges: beyond the oldest, beyond the newest
    st, p = d.api("GET", f"/v1/audit?before={ids[-1]}")
    assert st == 200 and p == {"records": [], "older": False, "newer": True}
    st, p = d.api("GET", f"/v1/audit?after={ids[0]}")
    assert st == 200 and p == {"records": [], "older": True, "newer": False}
    st, p = d.api("GET", f"/v1/audit?limit=3&before={ids[0]}")
    assert [r["id"] for r in p["records"]] == ids[1:4] and p["newer"] is True and p["older"] is True
    # bad input names its field
    for q, field in [("before=abc", "before"), ("before=0", "before"), ("after=-3", "after"),
                     (f"before={ids[0]}&after={ids[-1]}", "after"), ("limit=0&before=5", "limit")]:
        st, p = d.api("GET", "/v1/audit?" + q)
        assert st == 400 and p["error"]["field"] == field, (q, p)


def test_the_numbers_the_console_shows_come_through_it(daemon):
    """The Jobs table and a job's page show each job's and array's number (SLURM_JOB_ID; an
    array's is its tasks' SLURM_ARRAY_JOB_ID): the served script draws them, and the requests it
    makes through rnx console give them: GET /v1/jobs for jobs and arrays, and, for an expanded
    array, GET /v1/jobs/ID_[LIST] with LIST its spec without the throttle (the tasks not made yet
    have none), the numbers rnx job status prints."""
    jid = daemon.rnx("job", "run", "--slurm-env", "sleep", "600", check=True).stdout.split()[-1]
    aid = daemon.rnx("job", "run", "--array=0-6:3%1", "sleep", "600", check=True).stdout.split()[-1]
    con = Console(daemon)
    try:
        con.sign_in()
        r, js = con.request("GET", "/console/console.js", headers={"Cookie": con.jar})
        assert r.status == 200
        for drawn in (b"dash(j.number)", b"SLURM_JOB_ID", b"SLURM_ARRAY_JOB_ID", b'"NUM"'):
            assert drawn in js, drawn

        def get(path):
            r, body = con.request("GET", path, headers=con.auth())
            assert r.status == 200, (path, body)
            return json.loads(body)
        listed = {j["id"]: j for j in get("/v1/jobs")["jobs"]}
        job = listed[jid]
        arr = next(j for j in listed.values() if j.get("kind") == "array" and j["id"].startswith(aid))
        assert isinstance(job["number"], int) and isinstance(arr["number"], int) and job["number"] != arr["number"]
        assert f"Number: {job['number']} (SLURM_JOB_ID)" in daemon.rnx("job", "status", jid, check=True).stdout
        spec = arr["array"]["spec"]
        assert spec == "0-6:3%1"
        expanded = f"/v1/jobs/{arr['id']}_[{spec.split('%')[0]}]"      # as the page asks for its tasks

        def made_first():
            ts = get(expanded)["tasks"]
            return ts if ts[0].get("made") is not False else None
        tasks = wait_for(made_first, "task 0 made")
        assert [t["array"]["task"] for t in tasks] == [0, 3, 6]
        made, later = tasks[0], tasks[1:]
        assert made["number"] not in (job["number"], arr["number"]) and made["array"]["number"] == arr["number"]
        assert all(t["made"] is False and t.get("number") is None and t["array"]["number"] == arr["number"] for t in later)
        assert get(f"/v1/jobs/{made['id']}")["number"] == made["number"]     # a task's page, opened by its id
    finally:
        con.stop()
        daemon.rnx("job", "kill", jid)
        daemon.rnx("job", "kill", aid)
