"""Starting `rnx console` for the console's tests, and talking to its proxy."""
import http.client
import os
import re
import shutil
import subprocess
import time

from conftest import BUILD


class Console:
    """rnx console as root (uid None) or as uid, on a free port; .url is the one-time link."""

    def __init__(self, d, uid=None):
        cmd = [os.path.join(BUILD, "rnx"), "--socket", d.sock, "console"]
        if uid is not None:
            cmd = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"] + cmd
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env={"PATH": "/usr/bin:/bin"})
        line = self.p.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]{64})", line)
        assert m, f"rnx console printed {line!r}; stderr: {self.p.stderr.read() if self.p.poll() is not None else ''}"
        self.port, self.token = int(m.group(1)), m.group(2)
        self.url = m.group(0)

    def request(self, method, path, headers=None, body=None, timeout=10):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r, data

    def sign_in(self):
        """Trades the token for the cookie; the Cookie header to send."""
        r, _ = self.request("GET", f"/?token={self.token}")
        assert r.status == 303, r.status
        cookie = r.getheader("Set-Cookie")
        return cookie.split(";")[0]

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            self.p.wait(timeout=10)
