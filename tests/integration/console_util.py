"""Starting `rnx console` for the console's tests, and talking to its proxy."""
import http.client
import json
import os
import queue
import re
import subprocess
import threading
import time
import urllib.parse

from conftest import BUILD, SANITIZER_MARKS


class Console:
    """rnx console as root (uid None) or as uid, on a free port; .url is the one-time link, .line
    the lines it printed up to it, .file the path of the page that opens the link (None where it
    printed none: its environment has neither XDG_RUNTIME_DIR nor HOME by default), .netloc the console's NAME.localhost:PORT (the Host it answers to). args: more flags for rnx console; prefix: a command that runs it (e.g.
    prlimit). d: the daemon whose socket it serves; or d None and args naming a node
    (["--node", NAME]), with env: rnx's environment (its nodes.yml, its keepers' directory)."""

    def __init__(self, d, uid=None, args=(), prefix=(), env=None):
        where = ["--socket", d.sock] if d is not None else []
        cmd = [os.path.join(BUILD, "rnx"), *where, "console", *args]
        if uid is not None:
            cmd = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"] + cmd
        cmd = [*prefix, *cmd]
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env or {"PATH": "/usr/bin:/bin",
                                              **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}})
        line = ""
        m = None
        for _ in range(4):   # its heading, the file to open, the link
            line += self.p.stdout.readline()
            m = re.search(r"http://([0-9a-f]{32}\.localhost):(\d+)/\?token=([0-9a-f]{64})", line)
            if m:
                break
        self.line = line
        assert m, f"rnx console printed {line!r}; stderr: {self.p.stderr.read() if self.p.poll() is not None else ''}"
        f = re.search(r"^open this file in a browser: (file://\S+)$", line, re.M)
        self.file_uri = f and f.group(1)
        self.file = f and urllib.parse.unquote(f.group(1)[len("file://"):])
        self.name, self.port, self.token = m.group(1), int(m.group(2)), m.group(3)
        self.url = m.group(0)
        self.netloc = f"{self.name}:{self.port}"   # the Host the console answers to (on 127.0.0.1)
        self.origin = f"http://{self.netloc}"
        self.jar = self.key = None

    def request(self, method, path, headers=None, body=None, timeout=10):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        headers = dict(headers or {})
        if not any(k.lower() == "host" for k in headers):
            headers["Host"] = self.netloc
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r, data

    def sign_in(self):
        """Trades the token for the cookie; the Cookie header to send. The page's own key (the
        fragment of the redirect, "/#key=...") is kept in .key (None where there is none)."""
        r, _ = self.request("GET", f"/?token={self.token}")
        assert r.status == 303, r.status
        cookie = r.getheader("Set-Cookie")
        self.jar = cookie.split(";")[0]
        frag = urllib.parse.urlsplit(r.getheader("Location") or "").fragment
        self.key = urllib.parse.parse_qs(frag).get("key", [None])[0]
        return self.jar

    def auth(self, **more):
        """The headers the console's page sends: its cookie and its key."""
        h = {"Cookie": self.jar, **more}
        if self.key:
            h["X-Console-Key"] = self.key
        return h

    def stop(self):
        """Ends the console; a sanitizer report on its stderr (or its children's) fails the test."""
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        err = self.err = self.p.stderr.read()
        for mark in SANITIZER_MARKS:
            assert mark not in err, err


class OwnNetwork:
    """A network namespace of the test's own, with only its loopback up, for rnx console and the
    browser (a context manager): chromium fails every request under way with
    net::ERR_NETWORK_CHANGED when the host's links or addresses change, and the suite's network
    tests beside the console's make and remove links all the time (CI runs: "Failed to fetch" for
    the job page's Stop, lighthouse's "errors-in-console" on #/admin). rnx reaches joblet by its
    unix socket, which no network namespace separates. .inside: the prefix that runs a command
    there (Console's prefix); .chromium(dir): a chromium that runs there, written into dir (the
    browser is driven over a pipe, --remote-debugging-pipe: chromedriver, outside, cannot reach a
    port of the namespace)."""

    count = 0

    def __enter__(self):
        OwnNetwork.count += 1
        self.name = f"jl-console-{os.getpid()}-{OwnNetwork.count}"
        subprocess.run(["ip", "netns", "add", self.name], check=True)
        self.inside = ["ip", "netns", "exec", self.name]
        subprocess.run([*self.inside, "ip", "link", "set", "lo", "up"], check=True)
        return self

    def browser(self, directory, chromium, driver, *extra, uid=None, home=None, url=None):
        """A selenium Chrome driving a headless chromium in this namespace (over a pipe), its
        wrapper written into directory; extra: more of chromium's flags; uid: the user it runs
        as (then home: its HOME, and give it a --user-data-dir of the user's); url: a page its
        command line opens (as `chromium URL`; chromedriver makes any argument a flag)."""
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        o = webdriver.ChromeOptions()
        o.binary_location = self.chromium(str(directory), chromium, uid, home, url)
        for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                  "--remote-debugging-pipe", *extra]:
            o.add_argument(a)
        return webdriver.Chrome(service=Service(driver), options=o)

    def chromium(self, directory, binary, uid=None, home=None, url=None):
        path = os.path.join(directory, "chromium-in-" + self.name)
        who = f"setpriv --reuid={uid} --regid={uid} --clear-groups env HOME={home} " if uid is not None else ""
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\nexec ip netns exec {self.name} {who}{binary} \"$@\"{' ' + url if url else ''}\n")
        os.chmod(path, 0o755)
        return path

    def serve(self, routes, port=0):
        """An HTTP server on 127.0.0.1:port (0: the kernel's pick) in this namespace, where the
        browser can reach it: a python3 of its own (a NetServer; stop it)."""
        return NetServer(self, routes, port)

    def __exit__(self, *exc):
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
        return False


SERVE = r"""
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
routes, port = sys.argv[1], int(sys.argv[2])
told = threading.Lock()   # one line a request, whole, though requests come in threads of their own


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        path, _, query = self.path.partition("?")
        with told:
            seen = {"path": path, "query": query, "cookie": self.headers.get("Cookie") or ""}
            sys.stdout.write(json.dumps(seen) + "\n")
            sys.stdout.flush()
        with open(routes) as f:
            table = json.load(f)
        route = table.get(path, table.get("*"))
        ctype, body, cache = route or ("text/plain", "", None)
        body = body.encode()
        self.send_response(200 if route else 404)
        self.send_header("Content-Type", ctype)
        if cache:
            self.send_header("Cache-Control", cache)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
print(srv.server_address[1], flush=True)
srv.serve_forever()
"""


class NetServer:
    """A page server of the test's in an OwnNetwork (net.serve): routes, a JSON file it reads at
    every request, maps a path to [Content-Type, body, Cache-Control or null] ("*": every path
    not named); a path it does not name is a 404. .port: where it listens; .requests: a queue of
    every request it got, {"path", "query", "cookie"}, in order; stop() ends it (by its PID) and
    frees the port."""

    def __init__(self, net, routes, port=0):
        self.requests = queue.Queue()
        self.p = subprocess.Popen([*net.inside, "/usr/bin/python3", "-c", SERVE, routes, str(port)],
                                  stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise AssertionError(f"the page server in {net.name} did not start: {line!r}")
        self.port = int(line)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stdout:
            self.requests.put(json.loads(line))

    def seen(self, at_least=1, timeout=10):
        """Every request got so far, waiting up to timeout for at_least of them."""
        out, deadline = [], time.monotonic() + timeout
        while True:
            try:
                out.append(self.requests.get(timeout=max(0.0, deadline - time.monotonic())
                                             if len(out) < at_least else 0.2))
            except queue.Empty:
                return out

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        if getattr(self, "reader", None):
            self.reader.join(timeout=10)
        self.p.stdout.close()
