"""Issue 25, findings 5 and 7: what another local user gets from `rnx console`'s loopback port.

5. Browsers scope cookies by host, not port: any listener on the console's host (127.0.0.1, before
   the console had a name of its own: NAME.localhost) receives the console's cookie, and a page
   there is "same site" with the console. So the
   cookie alone no longer opens the API: every API request must also carry the page's own key
   (handed to the page in the redirect's fragment, never sent to a server by the browser, kept
   in the tab's sessionStorage) and come from the console's exact origin, and every change
   must be application/json.
7. An idle connection costs the console's owner no process: the head is read and checked in
   the console's one process; only a request that passes forks, and those are bounded too.
"""
import concurrent.futures
import json
import re
import os
import shutil
import socket
import subprocess
import time
import uuid

import pytest

from conftest import sockets_of
from console_util import Console

UID = 4361           # the console's owner (a uid no other module uses: prlimit --nproc counts it machine-wide)
MALLORY = 4342       # another local user


def jobs_named(d, name):
    st, body = d.api("GET", "/v1/jobs")
    assert st == 200
    return [j for j in body["jobs"] if j.get("name") == name]


def as_other_user(con, requests, net=None):
    """Sends each (method, path, headers, body) to the console as uid MALLORY (a process of
    hers, as she would replay a cookie her own server received; with the console's host name,
    as if she had learned it); their statuses. net: the OwnNetwork the console runs in, if any."""
    probe = ("import http.client,json,sys\n"
             "out=[]\n"
             "for m,p,h,b in json.loads(sys.argv[1]):\n"
             "    c=http.client.HTTPConnection('127.0.0.1',%d,timeout=10)\n"
             "    c.request(m,p,body=b,headers={'Host': %r, **h}); out.append(c.getresponse().status); c.close()\n"
             "print(json.dumps(out))\n") % (con.port, con.netloc)
    p = subprocess.run([*(net.inside if net else ()),
                        "setpriv", f"--reuid={MALLORY}", f"--regid={MALLORY}", "--clear-groups",
                        "/usr/bin/python3", "-c", probe, json.dumps(requests)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_a_replayed_cookie_without_the_pages_key_is_refused(daemon):
    """Mallory holds the victim's cookie (her server on another port received it): replayed from
    her process it reads nothing, submits nothing and opens no event stream."""
    con = Console(daemon, uid=UID)
    try:
        jar = con.sign_in()
        mark = "jhc-replay-" + uuid.uuid4().hex[:8]
        submit = json.dumps({"command": "true", "name": mark})
        same = {"Origin": con.origin, "Sec-Fetch-Site": "same-origin"}
        statuses = as_other_user(con, [
            ["GET", "/v1/whoami", {"Cookie": jar}, None],
            ["GET", "/v1/jobs", {"Cookie": jar, **same}, None],
            ["POST", "/v1/jobs", {"Cookie": jar, "Content-Type": "application/json", **same}, submit],
            ["GET", "/v1/events", {"Cookie": jar}, None],
            # a key that is not the page's, in the header and in the event stream's query
            ["GET", "/v1/whoami", {"Cookie": jar, "X-Console-Key": "0" * 64}, None],
            ["GET", "/v1/events?console_key=" + "0" * 64, {"Cookie": jar}, None],
        ])
        assert statuses == [401] * 6, statuses
        assert jobs_named(daemon, mark) == []
        # the page's key without the cookie is no session either
        if con.key:
            r, _ = con.request("GET", "/v1/whoami", headers={"X-Console-Key": con.key})
            assert r.status == 401
        # the page itself, with both, is the console's owner
        r, body = con.request("GET", "/v1/whoami", headers=con.auth(**same))
        assert r.status == 200 and json.loads(body)["uid"] == UID
        # the key is never passed on to joblet: the daemon's log does not hold it
        assert con.key and con.key not in daemon.log()
    finally:
        con.stop()


def test_a_cross_origin_request_with_a_valid_session_is_refused(daemon):
    """Cookie and key both right, but the browser says the request comes from another origin
    (another port of 127.0.0.1, another scheme or host name, an opaque origin) or another site:
    403, and nothing is submitted."""
    con = Console(daemon, uid=UID)
    try:
        con.sign_in()
        mark = "jhc-xorigin-" + uuid.uuid4().hex[:8]
        submit = json.dumps({"command": "true", "name": mark})
        other = con.port + 1 if con.port < 65535 else con.port - 1
        for hdrs in [{"Origin": f"http://127.0.0.1:{other}"},
                     {"Origin": f"http://127.0.0.1:{other}", "Sec-Fetch-Site": "same-site"},
                     {"Origin": f"https://127.0.0.1:{con.port}"},
                     {"Origin": f"http://localhost:{con.port}"},
                     {"Origin": f"http://127.0.0.1:{con.port}"},
                     {"Origin": "null"},
                     {"Sec-Fetch-Site": "same-site"},
                     {"Sec-Fetch-Site": "cross-site"},
                     {"Origin": con.origin, "Sec-Fetch-Site": "same-site"}]:
            r, body = con.request("POST", "/v1/jobs", headers=con.auth(**{"Content-Type": "application/json", **hdrs}),
                                  body=submit)
            assert r.status == 403, (hdrs, r.status, body)
            assert b"origin" in body.lower() or b"sec-fetch-site" in body.lower(), body
            r, _ = con.request("GET", "/v1/whoami", headers=con.auth(**hdrs))
            assert r.status == 403, hdrs
        # a navigation from a page on another port does not even get the page
        r, _ = con.request("GET", "/", headers={"Cookie": con.jar, "Sec-Fetch-Site": "same-site"})
        assert r.status == 403
        assert jobs_named(daemon, mark) == []
        # the console's own origin passes
        r, body = con.request("GET", "/v1/whoami",
                              headers=con.auth(Origin=con.origin, **{"Sec-Fetch-Site": "same-origin"}))
        assert r.status == 200 and json.loads(body)["uid"] == UID
    finally:
        con.stop()


def test_a_change_must_be_application_json(daemon):
    """A form can send text/plain (or urlencoded, multipart) cross-origin without a preflight:
    a change in any other type than application/json is refused unread, naming the type."""
    con = Console(daemon, uid=UID)
    try:
        con.sign_in()
        mark = "jhc-plain-" + uuid.uuid4().hex[:8]
        submit = json.dumps({"command": "true", "name": mark})
        same = {"Origin": con.origin, "Sec-Fetch-Site": "same-origin"}
        for ctype in ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                      "multipart/form-data; boundary=x", "application/jsonx", None]:
            h = con.auth(**same)
            if ctype:
                h["Content-Type"] = ctype
            r, body = con.request("POST", "/v1/jobs", headers=h, body=submit)
            assert r.status == 415, (ctype, r.status, body)
            assert b"application/json" in body and b"Content-Type" in body, body
        assert jobs_named(daemon, mark) == []
        r, body = con.request("POST", "/v1/jobs", body=submit,
                              headers=con.auth(**same, **{"Content-Type": "application/json; charset=utf-8"}))
        assert r.status == 201, body
        daemon.wait(json.loads(body)["id"])
        assert len(jobs_named(daemon, mark)) == 1
    finally:
        con.stop()


# ---- the browser: a page on another port of 127.0.0.1 tries it --------------------------------

try:
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:   # pragma: no cover
    webdriver = None
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")

ATTACK = """<!doctype html><title>cat pictures</title>
<form id="f" method="POST" enctype="text/plain" action="{console}/v1/jobs" target="sink">
<input name='{{"command":"true","name":"{mark}-form","x":"' value='"}}'></form>
<iframe name="sink" id="sink"></iframe>
<script>
const done = [];
const note = (what) => {{ done.push(what); if (done.length === 3) document.title = "done"; }};
fetch("{console}/v1/jobs", {{method: "POST", mode: "no-cors", credentials: "include",
  headers: {{"Content-Type": "text/plain"}}, body: JSON.stringify({{command: "true", name: "{mark}-fetch"}})}})
  .then(() => note("fetch"), () => note("fetch"));
const es = new EventSource("{console}/v1/events", {{withCredentials: true}});
es.onopen = () => {{ document.body.dataset.events = "open"; }};
setTimeout(() => {{ es.close(); note("events"); }}, 1500);
document.getElementById("sink").addEventListener("load", () => note("form"), {{once: true}});
document.getElementById("f").submit();
</script>"""


@pytest.mark.skipif(webdriver is None or not CHROMIUM or not DRIVER,
                    reason="needs chromium, chromium-driver and python3-selenium (scripts/install-deps.sh)")
def test_a_page_on_another_loopback_port_cannot_act_as_the_console_user(daemon, own_net, tmp_path):
    """The victim signed in to her console in chromium, then opens a page that another local
    user serves on 127.0.0.1:OTHER. Cookies ignore ports, but the console's is its own host
    name's (NAME.localhost), not 127.0.0.1's: that server gets none. The page auto-submits a
    text/plain form, a no-cors fetch and an event stream to the console: no job is made, no
    stream opens; and the cookie, had she got it otherwise (a server of hers on another port of
    NAME.localhost, were the name known), is worth nothing replayed. Her console tab then still
    works. The console, the other user's server and chromium share a network namespace of the
    test's own (own_net: console_util.OwnNetwork), with only its loopback."""
    con = Console(daemon, uid=UID, prefix=own_net.inside)
    srv = drv = None
    try:
        mark = "jhc-page-" + uuid.uuid4().hex[:8]
        routes = os.path.join(str(tmp_path), "attacker-routes.json")
        with open(routes, "w") as f:   # every path: the page
            json.dump({"*": ["text/html; charset=utf-8", ATTACK.format(console=con.origin, mark=mark), None]}, f)
        srv = own_net.serve(routes)
        drv = own_net.browser(tmp_path, CHROMIUM, DRIVER)
        drv.get(con.url)
        WebDriverWait(drv, 20).until(lambda x: x.find_element(By.ID, "who").text.startswith("uid %d" % UID))
        drv.get(f"http://127.0.0.1:{srv.port}/")
        WebDriverWait(drv, 20).until(lambda x: x.title == "done")
        opened = drv.execute_script("return document.body.dataset.events || ''")
        # cookies are per host, and the console's host is not 127.0.0.1: the server got none
        cookies = [r["cookie"] for r in srv.seen()]
        assert cookies and not [c for c in cookies if "joblet_console_" in c], cookies
        assert opened == "", "the other port's page opened the console's event stream"
        assert jobs_named(daemon, mark + "-form") == [] and jobs_named(daemon, mark + "-fetch") == []
        # the victim's own tab (its sessionStorage) still has its console
        drv.get(con.origin + "/")
        WebDriverWait(drv, 20).until(lambda x: x.find_element(By.ID, "live").text == "live")
        WebDriverWait(drv, 20).until(lambda x: x.find_element(By.ID, "who").text.startswith("uid %d" % UID))
        # its cookie, replayed from another user's process, is no session without the page's key
        jar = next(f"{c['name']}={c['value']}" for c in drv.get_cookies() if c["name"] == f"joblet_console_{con.port}")
        assert as_other_user(con, [["GET", "/v1/whoami", {"Cookie": jar}, None]], own_net) == [401]
    finally:
        if drv:
            drv.quit()
        if srv:
            srv.stop()
        con.stop()


# ---- finding 7: connections that are not the owner's cost the owner nothing -----------------

FLOOD = r"""
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
held = []
for i in range(n):
    s = socket.socket()
    s.settimeout(10)
    try:
        s.connect(("127.0.0.1", port))
        held.append(s)
    except OSError:
        s.close()
print(len(held), flush=True)
sys.stdin.readline()
"""


def children(pid):
    """The processes whose parent is pid."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                st = f.read()
        except OSError:
            continue
        if int(st[st.rindex(")") + 2:].split()[1]) == pid:
            out.append(int(p))
    return out


def flood(port, n):
    """uid MALLORY opens n connections to port and holds them, sending nothing."""
    f = subprocess.Popen(["setpriv", f"--reuid={MALLORY}", f"--regid={MALLORY}", "--clear-groups",
                          "/usr/bin/python3", "-c", FLOOD, str(port), str(n)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    held = int(f.stdout.readline())
    return f, held


def test_idle_connections_of_another_user_fork_nothing(daemon):
    """Another user's 300 idle connections against a console whose owner may have 40 processes
    (RLIMIT_NPROC): the console forks for none of them, holds a bounded number open, and the
    owner's own requests are still served."""
    con = Console(daemon, uid=UID, prefix=["prlimit", "--nproc=40"])
    f = None
    try:
        con.sign_in()
        f, held = flood(con.port, 300)
        assert held >= 100, held
        # served after every connection of the flood was accepted (the listener's queue is FIFO)
        r, body = con.request("GET", "/v1/whoami", headers=con.auth())
        assert r.status == 200 and json.loads(body)["uid"] == UID, (r.status, body)
        kids = children(con.p.pid)
        assert len(kids) <= 1, f"{len(kids)} processes of the console's owner for {held} idle connections"
        fds = len(os.listdir(f"/proc/{con.p.pid}/fd"))
        assert fds <= 64 + 16, fds       # --max-pending's default, and the console's own few
    finally:
        if f:
            f.kill()
            f.wait()
        con.stop()


def test_pending_connections_are_bounded_oldest_first(daemon):
    """--max-pending 4: 10 idle connections, then a request: the request and the 3 newest idle
    ones fit, the 7 oldest are closed; one that waited is served when it speaks."""
    con = Console(daemon, uid=UID, args=["--max-pending", "4"])
    socks = []
    try:
        con.sign_in()
        for _ in range(10):
            socks.append(socket.create_connection(("127.0.0.1", con.port), timeout=10))
        r, _ = con.request("GET", "/v1/whoami", headers=con.auth())
        assert r.status == 200
        closed = []
        for s in socks:
            s.setblocking(False)
            try:
                closed.append(s.recv(1) == b"")
            except BlockingIOError:
                closed.append(False)
        assert closed == [True] * 7 + [False] * 3, closed
        # one still waiting is served when it speaks
        s = socks[-1]
        s.setblocking(True)
        s.sendall(f"GET /v1/whoami HTTP/1.1\r\nHost: {con.netloc}\r\nCookie: {con.jar}\r\n"
                  f"X-Console-Key: {con.key}\r\n\r\n".encode())
        got = b""
        while (d := s.recv(65536)):
            got += d
        assert got.startswith(b"HTTP/1.1 200") and b'"uid":%d' % UID in got, got[:200]
    finally:
        for s in socks:
            s.close()
        con.stop()


def test_open_relays_are_bounded(daemon):
    """--max-connections 2: two event streams open, a third request gets 503 naming the flag;
    when one stream closes, requests pass again."""
    con = Console(daemon, uid=UID, args=["--max-connections", "2"])
    streams = []
    try:
        con.sign_in()
        for _ in range(2):
            s = socket.create_connection(("127.0.0.1", con.port), timeout=10)
            s.sendall(f"GET /v1/events?console_key={con.key} HTTP/1.1\r\nHost: {con.netloc}\r\n"
                      f"Cookie: {con.jar}\r\n\r\n".encode())
            buf = b""
            while b"event: hello" not in buf:
                d = s.recv(4096)
                assert d, buf
                buf += d
            streams.append(s)
        assert len(children(con.p.pid)) == 2
        r, body = con.request("GET", "/v1/whoami", headers=con.auth())
        assert r.status == 503 and b"--max-connections" in body, (r.status, body)
        streams.pop().close()
        for _ in range(200):
            r, body = con.request("GET", "/v1/whoami", headers=con.auth())
            if r.status == 200:
                break
            assert r.status == 503
            time.sleep(0.05)
        assert r.status == 200, body
    finally:
        for s in streams:
            s.close()
        con.stop()


# ---- the sibling in joblet's own listener: connections never take the daemon's descriptors ---

HOLD = r"""
import socket, sys
held = []
for i in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    held.append(s)
print(len(held), flush=True)
sys.stdin.readline()
"""


def test_other_users_connections_leave_the_daemon_its_descriptors(fresh_daemon):
    """joblet under a descriptor limit below its connection cap (ulimit -n 256, as when started by
    hand): five users each hold their 64 connections (server.max_connections_per_user) while root's
    scheduled job launches. Before, the connections took every descriptor and the launch failed
    ("memfd for the job spec: Too many open files"); now connections are held to a quarter of the
    limit (half of the connections' half: the other is what they hold besides, core/connfds.h) and
    the job runs."""
    from conftest import BUILD
    d = fresh_daemon(start=False)
    log = open(d.log_path, "a")
    d.proc = subprocess.Popen(["prlimit", "--nofile=256", os.path.join(BUILD, "joblet"), "--config", d.config,
                               "--state-dir", d.state, "--socket", d.sock, "--log-level", "debug"],
                              stdout=log, stderr=log,
                              env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                   **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}})
    log.close()
    for _ in range(400):
        try:
            d.api("GET", "/v1/version")
            break
        except OSError:
            time.sleep(0.05)
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 4))
    st, job = d.api("POST", "/v1/jobs", {"command": "sh", "args": ["-c", "echo ran"], "schedule_at": at})
    assert st == 201, job
    holders = []
    try:
        for u in range(5):
            holders.append(subprocess.Popen(["setpriv", f"--reuid={MALLORY + 10 + u}", f"--regid={MALLORY + 10 + u}",
                                             "--clear-groups", "/usr/bin/python3", "-c", HOLD, d.sock, "64"],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        assert sum(int(h.stdout.readline()) for h in holders) == 320
        # the launch happens while every connection is held: the daemon's log says how it went
        deadline = time.time() + 60
        while time.time() < deadline and not re.search(job["id"] + r" (COMPLETED|FAILED)", d.log()):
            time.sleep(0.2)
        ended = re.search(job["id"] + r" (COMPLETED|FAILED).*", d.log())
        sockets = sockets_of(d.proc.pid)   # (CI run 14: a descriptor closed during the count)
    finally:
        for h in holders:
            h.kill()
            h.wait()
    assert ended and ended.group(1) == "COMPLETED", (ended and ended.group(0), d.log()[-2000:])
    assert sockets <= 64 + 8, sockets       # a quarter of 256, and the daemon's own few
    assert "at most 64 connections at once" in d.log()
    st, j = d.api("GET", f"/v1/jobs/{job['id']}")
    assert j["status"] == "COMPLETED" and j["exit_code"] == 0


# as MALLORY: listen on [::1]:PORT (argv[1]; 0: the kernel's pick), print the port, or why not
HOLD6 = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
try:
    s.bind(("::1", int(sys.argv[1]))); s.listen()
except OSError as e:
    print("refused:", e, flush=True); sys.exit(0)
print(s.getsockname()[1], flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_another_user_cannot_listen_on_the_consoles_port_on_ipv6_loopback(daemon, own_net):
    """The console's link is NAME.localhost:PORT, which chromium tries at [::1] first. The console
    listened on 127.0.0.1 only: Mallory listening on [::1]:PORT (free to any user) received the
    link's token as the browser opened it, and every later request's cookie and key, and acted
    as the console's user (root's console: root's jobs, the GPUs' drain). The console now holds
    [::1]:PORT too: her listener is refused there, [::1]:PORT answers as the console; a --port
    whose [::1] she holds first is refused (a port the kernel picks is taken again elsewhere)."""
    con = Console(daemon, uid=UID, prefix=own_net.inside)
    mallory = [*own_net.inside, "setpriv", f"--reuid={MALLORY}", f"--regid={MALLORY}", "--clear-groups",
               "/usr/bin/python3", "-c", HOLD6]
    try:
        p = subprocess.run([*mallory, str(con.port), "0"], capture_output=True, text=True, timeout=60)
        assert p.stdout.startswith("refused:"), f"Mallory listens on [::1]:{con.port}: {p.stdout} {p.stderr}"
        # [::1]:PORT is the console's: the sign-in works there as on 127.0.0.1
        probe = ("import http.client,sys\n"
                 "c=http.client.HTTPConnection('::1',%d,timeout=10)\n"
                 "c.request('GET','/?token=%s',headers={'Host': %r}); print(c.getresponse().status)\n"
                 ) % (con.port, con.token, con.netloc)
        p = subprocess.run([*own_net.inside, "/usr/bin/python3", "-c", probe], capture_output=True, text=True,
                           timeout=60)
        assert p.stdout.strip() == "303", (p.stdout, p.stderr)
    finally:
        con.stop()
    # Mallory holds [::1]:P first: rnx console --port=P does not start
    holder = subprocess.Popen([*mallory, "0", "60"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(holder.stdout.readline())
        from conftest import BUILD
        p = subprocess.run([*own_net.inside, os.path.join(BUILD, "rnx"), "--socket", daemon.sock, "console",
                            f"--port={port}"], capture_output=True, text=True, timeout=60)
        assert p.returncode != 0 and f"cannot listen on [::1]:{port}" in p.stderr and "another process holds it" \
            in p.stderr, (p.returncode, p.stdout, p.stderr)
    finally:
        holder.kill()
        holder.wait()


def test_the_cross_site_sign_in_is_not_kept_and_works_once(daemon):
    """The sign-in as a navigation from the link's file (Sec-Fetch-Site: cross-site) is answered
    with a page that holds the page's key: it must not be stored (Cache-Control: no-store; the
    key goes on in a fragment, no Referer), nor run anything (CSP default-src 'none'). Another
    user's cross-site tries, with a wrong token, with none, or as a subresource, take nothing and
    spend nothing; the token raced from several connections at once signs in one of them."""
    nav = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    con = Console(daemon, uid=UID)
    try:
        wrong = "0" * 64 if con.token != "0" * 64 else "1" * 64
        sub = {**nav, "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "iframe"}
        assert as_other_user(con, [["GET", f"/?token={wrong}", nav, None], ["GET", "/", nav, None],
                                   ["GET", f"/?token={con.token}", sub, None]]) == [401, 403, 403]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda _: con.request("GET", f"/?token={con.token}", nav), range(4)))
        statuses = sorted(r.status for r, _ in got)
        assert statuses == [200, 401, 401, 401], statuses
        r, page = next((r, page) for r, page in got if r.status == 200)
        assert r.getheader("Cache-Control") == "no-store" and r.getheader("Location") is None
        assert r.getheader("Content-Security-Policy") == "default-src 'none'"
        assert r.getheader("Content-Type").startswith("text/html")
        cookie = r.getheader("Set-Cookie")
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie, cookie
        page = page.decode()
        key = re.search(r'content="0;url=/#key=([0-9a-f]{64})"', page).group(1)
        assert '<meta name="referrer" content="no-referrer">' in page and "<script" not in page
        assert page.count(key) == 2 and con.token not in page
        # the key and cookie are the session's: the API answers them, from the console's origin
        jar = cookie.split(";")[0]
        r, _ = con.request("GET", "/v1/jobs", {"Cookie": jar, "X-Console-Key": key, "Sec-Fetch-Site": "same-origin"})
        assert r.status == 200
        assert as_other_user(con, [["GET", f"/?token={con.token}", nav, None]]) == [401]
    finally:
        con.stop()
