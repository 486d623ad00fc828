"""A small reader of joblet's server-sent events (GET /v1/events) over its unix socket, for the
console's tests: no third-party client, the format is four lines."""
import json
import os
import socket
import time


def connect_as(path, uid=None):
    """A unix socket connected to path by uid (its SO_PEERCRED identity): connected in a child
    that drops to uid, handed back over SCM_RIGHTS."""
    if uid is None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        return s
    a, b = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(path)
            socket.send_fds(b, [b"x"], [c.fileno()])
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    _, fds, _, _ = socket.recv_fds(a, 1, 1)
    a.close()
    b.close()
    return socket.socket(fileno=fds[0])


class Stream:
    def __init__(self, sock_path, last_id=None, timeout=10, uid=None):
        self.s = connect_as(sock_path, uid)
        self.s.settimeout(timeout)
        extra = f"Last-Event-ID: {last_id}\r\n" if last_id is not None else ""
        self.s.sendall(f"GET /v1/events HTTP/1.1\r\nHost: localhost\r\n{extra}\r\n".encode())
        self.buf = b""
        self.status, self.headers = self._head()
        self.body = b""          # de-chunked, not yet parsed
        self.chunked = "chunked" in self.headers.get("transfer-encoding", "")
        if self.status != 200:   # an error's JSON body
            self._dechunk()
            try:
                self.error = json.loads(self.body or self.s.recv(65536))
            except ValueError:
                self.error = None

    def _head(self):
        while b"\r\n\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                break
            self.buf += d
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for l in lines[1:]:
            k, _, v = l.partition(":")
            headers[k.strip().lower()] = v.strip()
        self.buf = rest
        return status, headers

    def _dechunk(self):
        if not self.chunked:
            self.body += self.buf
            self.buf = b""
            return
        while True:
            nl = self.buf.find(b"\r\n")
            if nl < 0:
                return
            size = int(self.buf[:nl].split(b";")[0], 16)
            if len(self.buf) < nl + 2 + size + 2:
                return
            self.body += self.buf[nl + 2:nl + 2 + size]
            self.buf = self.buf[nl + 2 + size + 2:]
            if size == 0:
                raise EOFError("the stream ended")

    def next(self, timeout=10):
        """The next event as (kind, data, id); comments (pings) are skipped."""
        deadline = time.time() + timeout
        while True:
            self._dechunk()
            while b"\n\n" in self.body:
                block, _, self.body = self.body.partition(b"\n\n")
                ev = {"event": "message", "data": "", "id": None}
                for line in block.decode().split("\n"):
                    if line.startswith(":") or not line:
                        continue
                    k, _, v = line.partition(":")
                    ev[k] = v[1:] if v.startswith(" ") else v
                if ev["data"] or ev["event"] != "message":
                    data = json.loads(ev["data"]) if ev["data"] else None
                    return ev["event"], data, ev["id"]
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no event")
            self.s.settimeout(left)
            d = self.s.recv(65536)
            if not d:
                raise EOFError("the connection closed")
            self.buf += d

    def until(self, pred, timeout=15):
        """Events until one for which pred(kind, data) holds; all of them, that one last."""
        seen = []
        deadline = time.time() + timeout
        while True:
            ev = self.next(timeout=max(0.01, deadline - time.time()))
            seen.append(ev)
            if pred(ev[0], ev[1]):
                return seen

    def drain(self, secs):
        """Every event within secs."""
        out = []
        deadline = time.time() + secs
        while True:
            try:
                out.append(self.next(timeout=max(0.01, deadline - time.time())))
            except TimeoutError:
                return out

    def close(self):
        self.s.close()
