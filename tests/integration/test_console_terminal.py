"""The console's terminal (issue 29; docs/console.md, "Terminal"): GET /v1/jobs/{id}/attach with
Upgrade: websocket through rnx console, each binary message one channel frame (docs/api.md,
"Interactive streams"). A client of the test's own here; test_console_browser.py drives xterm.js
in chromium. Who may open one: the console's page with a ticket, at its own origin, for its
user's own job."""
import base64
import hashlib
import os
import shutil
import socket
import struct

import pytest

from conftest import need_root
from console_util import Console
from test_terminal import read_head

OTHER_UID = 4321


def ticket(con):
    r, body = con.request("POST", "/v1/console/ticket", headers=con.auth(**{"Content-Type": "application/json"}))
    assert r.status == 200, (r.status, body)
    return body.decode().strip()


def ws_open(con, job_id, tk=None, origin=None, key=b"0123456789abcdef", query=""):
    """A WebSocket's handshake through the console: (socket, status, head)."""
    s = socket.create_connection(("127.0.0.1", con.port), timeout=60)
    q = f"?ticket={tk}" if tk else query
    head = (f"GET /v1/jobs/{job_id}/attach{q} HTTP/1.1\r\nHost: {con.netloc}\r\n"
            f"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Key: {base64.b64encode(key).decode()}\r\nCookie: {con.jar}\r\n"
            + (f"Origin: {origin}\r\n" if origin else "") + "\r\n")
    s.sendall(head.encode())
    status, got = read_head(s)
    return s, status, got


def ws_send(s, payload, op=2, fin=True):
    mask = os.urandom(4)
    n = len(payload)
    h = bytes([(0x80 if fin else 0) | op])
    h += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else \
        bytes([0x80 | 127]) + struct.pack(">Q", n)
    s.sendall(h + mask + bytes(b ^ mask[i & 3] for i, b in enumerate(payload)))


class Reader:
    """The server's messages: (opcode, payload), fragments joined."""

    def __init__(self, s):
        self.s, self.buf = s, b""

    def _need(self, n):
        while len(self.buf) < n:
            c = self.s.recv(65536)
            if not c:
                raise EOFError(self.buf)
            self.buf += c

    def frame(self):
        self._need(2)
        b0, b1 = self.buf[0], self.buf[1]
        assert not b1 & 0x80, "a server's frame is not masked"
        n, at = b1 & 0x7f, 2
        if n == 126:
            self._need(4)
            n, at = struct.unpack(">H", self.buf[2:4])[0], 4
        elif n == 127:
            self._need(10)
            n, at = struct.unpack(">Q", self.buf[2:10])[0], 10
        self._need(at + n)
        body, self.buf = self.buf[at:at + n], self.buf[at + n:]
        return b0 & 0x80, b0 & 0x0f, body

    def message(self):
        fin, op, body = self.frame()
        while not fin:
            fin, op2, more = self.frame()
            assert op2 == 0, "a continuation expected"
            body += more
        return op, body


def channel_frame(ch, payload=b""):
    return struct.pack(">BI", ch, len(payload)) + payload


def until(rd, needle):
    """Messages until stdout holds needle; every message is one whole channel frame."""
    out = b""
    while needle not in out:
        op, body = rd.message()
        assert op == 2, (op, body)
        ch, n = struct.unpack(">BI", body[:5])
        assert len(body) == 5 + n, "one channel frame per message"
        if ch in (1, 2):
            out += body[5:]
    return out


def attached(daemon, con):
    """A job run with a terminal, attached through the console: (job id, socket, Reader)."""
    jid = daemon.submit("sh", tty=True, stdin=True)
    s, status, head = ws_open(con, jid, ticket(con), con.origin)
    assert status == 101, head
    return jid, s, Reader(s)


@pytest.fixture
def con(daemon):
    c = Console(daemon)
    c.sign_in()
    yield c
    c.stop()


def test_a_terminal_through_the_console(daemon, con):
    need_root()
    jid, s, rd = attached(daemon, con)
    ws_send(s, channel_frame(3, struct.pack(">HH", 24, 80)))
    # a ping between the two fragments of a message: answered, the message whole
    msg = channel_frame(0, b"echo hi-$((6*7)); stty size\n")
    ws_send(s, msg[:7], fin=False)
    ws_send(s, b"ping!", op=9)
    ws_send(s, msg[7:], op=0)
    out = b""
    while b"hi-42" not in out or b"24 80" not in out:
        op, body = rd.message()
        if op == 10:
            assert body == b"ping!"
            continue
        assert op == 2, (op, body)
        if body[0] in (1, 2):
            out += body[5:]
    # the job's end: the exit frame, then the WebSocket's close
    ws_send(s, channel_frame(0, b"exit 3\n"))
    while True:
        op, body = rd.message()
        if op == 2 and body[0] == 4:
            assert struct.unpack(">i", body[5:9])[0] == 3
            break
    op, body = rd.message()
    assert op == 8 and struct.unpack(">H", body[:2])[0] == 1000
    s.close()


def test_closing_the_websocket_leaves_the_job_running(daemon, con):
    need_root()
    jid, s, rd = attached(daemon, con)
    ws_send(s, channel_frame(0, b"echo first-$((1+1))\n"))
    until(rd, b"first-2")
    ws_send(s, struct.pack(">H", 1000), op=8)
    op, body = rd.message()
    while op == 2:             # (the prompt may come after first-2)
        op, body = rd.message()
    assert op == 8 and body == struct.pack(">H", 1000), (op, body)
    s.close()
    assert daemon.job(jid)["status"] == "RUNNING"
    # again: the screen replayed
    s, status, head = ws_open(con, jid, ticket(con), con.origin)
    assert status == 101, head
    until(Reader(s), b"first-2")
    s.close()


def test_refused_without_a_ticket_with_a_used_one_or_another_origin(daemon, con):
    need_root()
    jid = daemon.submit("sh", tty=True, stdin=True)
    for tk, origin, want in ((None, con.origin, 401), ("0" * 64, con.origin, 401),
                             (ticket(con), "http://127.0.0.1:1", 403), (ticket(con), None, 403)):
        s, status, head = ws_open(con, jid, tk, origin)
        assert status == want, (tk, origin, head)
        s.close()
    # the key itself does not open one, nor the key in the URL
    s, status, head = ws_open(con, jid, None, con.origin, query=f"?console_key={con.key}")
    assert status == 401, head
    s.close()
    # good once
    tk = ticket(con)
    s, status, head = ws_open(con, jid, tk, con.origin)
    assert status == 101, head
    accept = base64.b64encode(hashlib.sha1(base64.b64encode(b"0123456789abcdef") +
                                           b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    assert b"\r\nSec-WebSocket-Accept: " + accept + b"\r\n" in head, head
    s.close()
    s, status, head = ws_open(con, jid, tk, con.origin)
    assert status == 401, head
    s.close()
    # a text message or an unmasked frame: closed with 1003 or 1002
    for bad, code in ((lambda s: ws_send(s, b"hello", op=1), 1003), (lambda s: s.sendall(b"\x82\x01x"), 1002)):
        s, status, head = ws_open(con, jid, ticket(con), con.origin)
        assert status == 101, head
        bad(s)
        rd = Reader(s)
        while True:
            op, body = rd.message()
            if op == 8:
                assert struct.unpack(">H", body[:2])[0] == code
                break
        s.close()


def test_another_users_job_is_refused(daemon):
    need_root()
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is not installed")
    jid = daemon.submit("sh", tty=True, stdin=True)
    other = Console(daemon, uid=OTHER_UID)
    try:
        other.sign_in()
        s, status, head = ws_open(other, jid, ticket(other), other.origin)
        assert status == 403 and b"another user's" in head + s.recv(4096), head
        s.close()
    finally:
        other.stop()


# ---- xterm.js in chromium ----------------------------------------------------------------------

def test_the_terminal_page_in_chromium(daemon, tmp_path, own_net):
    """The console's Terminal for a job run with a terminal: the typed command's output in
    xterm.js's rows, the size the page fitted inside the job, a detach that leaves the job
    running and a replay when it comes back, the exit code shown at the end."""
    need_root()
    import test_console_browser as tb
    if tb.webdriver is None or not tb.CHROMIUM or not tb.DRIVER:
        pytest.skip("needs chromium, chromium-driver and python3-selenium (scripts/install-deps.sh)")
    from selenium.webdriver.common.by import By
    jid = daemon.submit("sh", tty=True, stdin=True, env={"PS1": "job$ "})
    con = Console(daemon, prefix=own_net.inside)
    drv = tb.browser(own_net, tmp_path)
    rows = "return (document.querySelector('.xterm-rows') || {}).textContent || ''"
    try:
        drv.get(con.url)
        tb.wait(drv, lambda x: x.find_element(By.ID, "live").text == "live")
        tb.go(drv, "#/jobs/" + jid)
        tb.wait(drv, lambda x: tb.css(x, "#job-terminal"))[0].click()
        tb.wait(drv, lambda x: x.find_element(By.ID, "term-status").text.startswith("attached"))
        box = tb.wait(drv, lambda x: tb.css(x, ".xterm-helper-textarea"))[0]
        box.send_keys("echo hi-$((6*7)); stty size\n")
        tb.wait(drv, lambda x: "hi-42" in x.execute_script(rows))
        size = drv.execute_script("return [TERM.term.rows, TERM.term.cols]")
        tb.wait(drv, lambda x: f"{size[0]} {size[1]}" in x.execute_script(rows))
        # the palette's colours, though the CSP refuses xterm.js's own <style> elements
        box.send_keys("printf '\\033[31mred-%s\\033[0m\\n' $((40+2))\n")
        red = tb.wait(drv, lambda x: x.execute_script(
            "const s = [...document.querySelectorAll('.xterm-rows span')].find(e => e.textContent === 'red-42');"
            "return s && getComputedStyle(s).color"))
        fg = drv.execute_script("return getComputedStyle(document.querySelector('.xterm-rows')).color")
        assert red == "rgb(204, 0, 0)" and fg != red, (red, fg)   # xterm.js 5.5's palette: red is #cc0000
        # the rows' height is xterm.js's own rule (else "normal")
        assert drv.execute_script("return getComputedStyle(document.querySelector('.xterm-rows > div')).lineHeight")\
            .endswith("px")
        drv.save_screenshot(str(tmp_path / "terminal.png"))
        # away (the WebSocket closes: a detach), the job goes on; back: the screen replayed
        tb.go(drv, "#/jobs")
        assert daemon.job(jid)["status"] == "RUNNING"
        tb.go(drv, "#/terminal/" + jid)
        tb.wait(drv, lambda x: "hi-42" in x.execute_script(rows))
        box = tb.wait(drv, lambda x: tb.css(x, ".xterm-helper-textarea"))[0]
        box.send_keys("exit 7\n")
        tb.wait(drv, lambda x: x.find_element(By.ID, "term-status").get_attribute("data-exit") == "7")
        assert "exit code 7" in drv.find_element(By.ID, "term-status").text
        # the page's own CSP held: nothing loaded from elsewhere, no script refused
        errs = [e for e in drv.get_log("browser") if e["level"] == "SEVERE" and "Content Security Policy" in
                e["message"] and "script" in e["message"]]
        assert not errs, errs
    finally:
        drv.quit()
        con.stop()


def test_joblet_refuses_a_websocket_that_carries_an_origin(daemon):
    """A page's WebSocket reaches joblet through rnx console only (which checks the Origin and
    takes it off): one straight to joblet with an Origin (a browser holding a client certificate
    for the TLS listener, say) is refused; without, it is an attach like any."""
    need_root()
    jid = daemon.submit("sh", tty=True, stdin=True)
    for origin, want in (("http://evil.example", 403), (None, 101)):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(60)
        s.connect(daemon.sock)
        s.sendall((f"GET /v1/jobs/{jid}/attach HTTP/1.1\r\nHost: joblet\r\nConnection: Upgrade\r\n"
                   f"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                   f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}\r\n"
                   + (f"Origin: {origin}\r\n" if origin else "") + "\r\n").encode())
        status, head = read_head(s)
        assert status == want, head
        s.close()
