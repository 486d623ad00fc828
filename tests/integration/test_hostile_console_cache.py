"""What another local user's server leaves in the admin's browser for the console's port.

Browsers key their HTTP cache by site, and a site ignores the port: a script that a page on
127.0.0.1:OTHER loads from 127.0.0.1:PORT (while Mallory serves PORT, before the console takes
it) is cached for the console's own page on 127.0.0.1:PORT. Served with a long max-age, it is
used without asking the console (which answers no-cache), and runs in the console's origin,
where the page's key is.

Mallory's servers, the console and chromium share a network namespace of the test's own
(own_net: console_util.OwnNetwork), with only its loopback.
"""
import json
import shutil
import uuid

import pytest

from console_util import Console

try:
    from selenium import webdriver
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


def jobs_named(d, name):
    st, body = d.api("GET", "/v1/jobs")
    assert st == 200
    return [j for j in body["jobs"] if j.get("name") == name]


needs_browser = pytest.mark.skipif(webdriver is None or not CHROMIUM or not DRIVER,
                                   reason="needs chromium, chromium-driver and python3-selenium "
                                          "(scripts/install-deps.sh)")


@needs_browser
@pytest.mark.parametrize("lure", ["script", "page"])
def test_what_the_ports_earlier_server_left_in_the_cache_does_not_run_in_the_console(daemon, lure, own_net,
                                                                                     tmp_path):
    """Mallory serves 127.0.0.1:PORT (the port the admin's console will use: --port, or the
    `ssh -L 8080:...` of the docs). Either a page of hers on another port has the admin's
    browser load PORT's /console/console.js (script), or the admin opens PORT's / itself
    (page), each cached for a day. She lets PORT go; the admin runs rnx console --port PORT and
    opens its link in the same browser: the page and its script must be the console's own, and
    no job of Mallory's making is submitted as root."""
    mark = "jhcc-" + uuid.uuid4().hex[:8]
    routes = str(tmp_path / "mallory-routes.json")   # both servers', read at every request
    with open(routes, "w") as f:
        json.dump({}, f)
    evil = bait = drv = con = None
    try:
        evil = own_net.serve(routes)   # PORT: the kernel's pick in the namespace, free until taken
        bait = own_net.serve(routes)
        port = evil.port
        table = {
            "/console/console.js": ["text/javascript", EVIL.format(port=port, mark=mark), "max-age=86400, immutable"],
            "/console/console.css": ["text/css", "body{}", "max-age=86400, immutable"],
            "/cats": ["text/html", f"""<!doctype html><title>cats</title>
<script src="http://127.0.0.1:{port}/console/console.js"></script>
<link rel="stylesheet" href="http://127.0.0.1:{port}/console/console.css">
<script src="/done.js"></script>""", None],
            "/done.js": ["text/javascript", 'document.title = "loaded";', None],
        }
        if lure == "page":
            table["/"] = ["text/html", '<!doctype html><title>notebook</title>'
                          '<script src="/console/console.js"></script><script src="/done.js"></script>',
                          "max-age=86400"]
        with open(routes, "w") as f:
            json.dump(table, f)
        drv = own_net.browser(tmp_path, CHROMIUM, DRIVER)
        drv.get(f"http://127.0.0.1:{port}/" if lure == "page" else f"http://127.0.0.1:{bait.port}/cats")
        WebDriverWait(drv, 20).until(lambda x: x.title == "loaded")
        evil.stop()
        con = Console(daemon, args=["--port", str(port)], prefix=own_net.inside)
        drv.get(con.url)
        WebDriverWait(drv, 20).until(lambda x: x.title.startswith("evil") or
                                     x.find_element(By.ID, "live").text == "live")
        title = drv.title + " " + drv.page_source[:300]   # (the title and the page that ran)
        assert jobs_named(daemon, mark) == [], f"Mallory's cached script ran in the console ({title})"
        assert not title.startswith("evil"), title
        WebDriverWait(drv, 20).until(lambda x: x.find_element(By.ID, "who").text.endswith("(admin)"))
    finally:
        if drv:
            drv.quit()
        for srv in (evil, bait):
            if srv:
                srv.stop()
        if con:
            con.stop()
