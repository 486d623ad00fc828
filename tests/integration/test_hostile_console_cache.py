"""What another local user's server leaves in the admin's browser for the console's port.

Browsers key their HTTP cache by site, and a site ignores the port: a script that a page on
127.0.0.1:OTHER loads from 127.0.0.1:PORT (while Mallory serves PORT, before the console takes
it) is cached for the console's own page on 127.0.0.1:PORT. Served with a long max-age, it is
used without asking the console (which answers no-cache), and runs in the console's origin,
where the page's key is.
"""
import shutil
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import free_port
from console_util import Console

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:   # pragma: no cover
    webdriver = None
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")

# Mallory's console.js: in the console's origin it takes the key and submits a job as the admin
EVIL = """(() => {{
  if (location.port !== "{port}") return;
  const m = /key=([0-9a-f]{{64}})/.exec(location.hash);
  const key = m ? m[1] : sessionStorage.getItem("joblet_console_key");
  if (!key) return;
  fetch("/v1/jobs", {{method: "POST", headers: {{"Content-Type": "application/json", "X-Console-Key": key}},
    body: JSON.stringify({{command: "true", name: "{mark}"}})}})
    .then((r) => {{ document.title = "evil " + r.status; }}, (e) => {{ document.title = "evil " + e; }});
}})();
"""


class Mallory(BaseHTTPRequestHandler):
    routes = {}

    def do_GET(self):
        ctype, body, cache = Mallory.routes.get(self.path.split("?")[0], ("text/plain", "", None))
        body = body.encode()
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", ctype)
        if cache:
            self.send_header("Cache-Control", cache)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def jobs_named(d, name):
    st, body = d.api("GET", "/v1/jobs")
    assert st == 200
    return [j for j in body["jobs"] if j.get("name") == name]


needs_browser = pytest.mark.skipif(webdriver is None or not CHROMIUM or not DRIVER,
                                   reason="needs chromium, chromium-driver and python3-selenium "
                                          "(scripts/install-deps.sh)")


@needs_browser
@pytest.mark.parametrize("lure", ["script", "page"])
def test_what_the_ports_earlier_server_left_in_the_cache_does_not_run_in_the_console(daemon, lure):
    """Mallory serves 127.0.0.1:PORT (the port the admin's console will use: --port, or the
    `ssh -L 8080:...` of the docs). Either a page of hers on another port has the admin's
    browser load PORT's /console/console.js (script), or the admin opens PORT's / itself
    (page), each cached for a day. She lets PORT go; the admin runs rnx console --port PORT and
    opens its link in the same browser: the page and its script must be the console's own, and
    no job of Mallory's making is submitted as root."""
    port, mark = free_port(), "jhcc-" + uuid.uuid4().hex[:8]
    Mallory.routes = {
        "/console/console.js": ("text/javascript", EVIL.format(port=port, mark=mark), "max-age=86400, immutable"),
        "/console/console.css": ("text/css", "body{}", "max-age=86400, immutable"),
    }
    evil = ThreadingHTTPServer(("127.0.0.1", port), Mallory)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    bait = ThreadingHTTPServer(("127.0.0.1", 0), Mallory)
    threading.Thread(target=bait.serve_forever, daemon=True).start()
    Mallory.routes["/cats"] = ("text/html", f"""<!doctype html><title>cats</title>
<script src="http://127.0.0.1:{port}/console/console.js"></script>
<link rel="stylesheet" href="http://127.0.0.1:{port}/console/console.css">
<script src="/done.js"></script>""", None)
    Mallory.routes["/done.js"] = ("text/javascript", 'document.title = "loaded";', None)
    if lure == "page":
        Mallory.routes["/"] = ("text/html", '<!doctype html><title>notebook</title>'
                               '<script src="/console/console.js"></script><script src="/done.js"></script>',
                               "max-age=86400")
    o = webdriver.ChromeOptions()
    o.binary_location = CHROMIUM
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]:
        o.add_argument(a)
    drv = webdriver.Chrome(service=Service(DRIVER), options=o)
    con = None
    try:
        drv.get(f"http://127.0.0.1:{port}/" if lure == "page" else f"http://127.0.0.1:{bait.server_address[1]}/cats")
        WebDriverWait(drv, 20).until(lambda x: x.title == "loaded")
        evil.shutdown()
        evil.server_close()
        con = Console(daemon, args=["--port", str(port)])
        drv.get(con.url)
        WebDriverWait(drv, 20).until(lambda x: x.title.startswith("evil") or
                                     x.find_element(By.ID, "live").text == "live")
        title = drv.title + " " + drv.page_source[:300]   # (the title and the page that ran)
        assert jobs_named(daemon, mark) == [], f"Mallory's cached script ran in the console ({title})"
        assert not title.startswith("evil"), title
        WebDriverWait(drv, 20).until(lambda x: x.find_element(By.ID, "who").text.endswith("(admin)"))
    finally:
        drv.quit()
        bait.shutdown()
        bait.server_close()
        if con:
            con.stop()
