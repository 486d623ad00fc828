#!/usr/bin/env python3
"""A stand-in for a joblet node's TLS listener, for tests/integration/test_rnx_nodes.py: Python's
ssl (OpenSSL), TLS 1.3 only (or 1.2 only with --tls12), a client certificate required and
checked against --ca, and a few routes of joblet's API answered the way rnx expects them.

    fake_tls_node.py --cert S.pem --key S.key --ca CA.pem --bind 127.0.0.1 [--bind 127.0.0.2]
                     --ports PORTS.json --log LOG.ndjson [--tls12]

Writes {"ADDRESS": PORT, ...} to --ports once it listens; appends one JSON line to --log per
request ({"method", "path", "host", "cn", "port", "bytes", "sha256", "version"}: the client
certificate's CN, the port it came in on, the request body as received, de-chunked, and the TLS
version) and per failed handshake ({"handshake": "why", "port"}).
Every answer ends the connection (rnx sends Connection: close).
"""
import argparse
import hashlib
import json
import os
import random
import socket
import ssl
import threading
import time
import urllib.parse

BLOB_SIZE = 3 * 1024 * 1024 + 12345   # what GET .../archive?path=/work/blob and the export send


def blob(n=BLOB_SIZE):
    """The bytes the node sends for a download; the test makes the same."""
    return random.Random(7).randbytes(n)


class Log:
    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()

    def write(self, rec):
        with self.lock, open(self.path, "a") as f:
            f.write(json.dumps(rec) + "\n")


def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return None, None, b""
        data += piece
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return lines[0], headers, rest


class Reader:
    """Bytes of the connection after the head, the head's leftovers first."""

    def __init__(self, conn, rest):
        self.conn, self.buf = conn, rest

    def fill(self):
        piece = self.conn.recv(262144)
        if not piece:
            raise EOFError("connection closed inside the body")
        self.buf += piece

    def exactly(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        out, self.buf = self.buf.split(b"\r\n", 1)
        return out


def read_body(conn, headers, rest, sink):
    r = Reader(conn, rest)
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int(r.line().split(b";")[0], 16)
            if size == 0:
                while r.line():   # trailers, then the blank line
                    pass
                return
            left = size
            while left:
                piece = r.exactly(min(left, 262144))
                sink(piece)
                left -= len(piece)
            assert r.exactly(2) == b"\r\n"
    n = int(headers.get("content-length", "0"))
    while n:
        piece = r.exactly(min(n, 262144))
        sink(piece)
        n -= len(piece)


def send_json(conn, status, obj, extra=""):
    body = json.dumps(obj).encode()
    conn.sendall(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                 f"Connection: close\r\n{extra}\r\n".encode() + body)


def send_chunked(conn, status, ctype, pieces, extra="", pause=0.0):
    conn.sendall(f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nTransfer-Encoding: chunked\r\n"
                 f"Connection: close\r\n{extra}\r\n".encode())
    for p in pieces:
        if p:
            conn.sendall(b"%x\r\n" % len(p) + p + b"\r\n")
        if pause:
            time.sleep(pause)
    conn.sendall(b"0\r\n\r\n")


def answer(conn, method, target, headers, log_rec):
    url = urllib.parse.urlsplit(target)
    path, query = url.path, urllib.parse.parse_qs(url.query)
    if method == "GET" and path == "/v1/version":
        return send_json(conn, "200 OK", {"version": "fake-node-1", "api": "v1", "max_upload_bytes": 1 << 30})
    if method == "GET" and path == "/v1/whoami":
        return send_json(conn, "200 OK", {"user": log_rec["cn"], "sees_all_jobs": False})
    if method == "GET" and path == "/v1/jobs":
        return send_json(conn, "200 OK", {"jobs": [{
            "id": "0f0f0f0f-1111-2222-3333-444444444444", "name": "remote-job", "status": "COMPLETED",
            "exit_code": 0, "command": "echo", "args": ["over", "tls"], "created_at": "2026-01-01T00:00:00Z"}]})
    if method == "GET" and path == "/v1/runtime-builds/7/log":
        lines = [json.dumps({"line": f"step {i} of 5", "phase": "import", "percent": i * 20}).encode() + b"\n"
                 for i in range(1, 6)]
        lines.append(json.dumps({"end": True, "state": "succeeded", "name": "fake"}).encode() + b"\n")
        # a line split across two chunks, and a pause between chunks: rnx reads as it arrives
        pieces = [lines[0][:7], lines[0][7:]] + lines[1:]
        return send_chunked(conn, "200 OK", "application/x-ndjson", pieces, pause=0.05)
    if method == "POST" and path == "/v1/runtime-imports":
        return send_json(conn, "202 Accepted", {"build": {"id": 7, "state": "running"}})
    if method == "GET" and path == "/v1/runtime-builds/7":
        return send_json(conn, "200 OK", {"id": 7, "name": "fake", "state": "succeeded", "elapsed_ms": 12})
    if method == "GET" and path == "/v1/runtimes/fake":
        return send_json(conn, "200 OK", {"name": "fake", "version": "1", "size_bytes": 4096, "provides": ["fake 1"]})
    if method == "GET" and path == "/v1/runtimes/fake/export":
        data = blob()
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: application/zstd\r\nContent-Length: {len(data)}\r\n"
                     "Connection: close\r\n\r\n".encode())
        return conn.sendall(data)
    if path.startswith("/v1/jobs/") and path.endswith("/archive"):
        if method == "GET" and "stat" in query:
            return send_json(conn, "200 OK", {"type": "dir"})
        if method == "PUT":
            return send_json(conn, "200 OK", {"bytes": log_rec["bytes"], "entries": 1})
        if method == "GET":
            data = blob()
            pieces = [data[i:i + 100000] for i in range(0, len(data), 100000)]
            return send_chunked(conn, "200 OK", "application/x-tar", pieces,
                                extra=f"X-Joblet-Path-Name: blob\r\nX-Joblet-Path-Type: file\r\n"
                                      f"X-Joblet-Path-Bytes: {len(data)}\r\n")
    if method == "GET" and path == "/":
        body = b"<!doctype html><title>fake node console</title>"
        return conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
                            b"Connection: close\r\n\r\n" % len(body) + body)
    return send_json(conn, "404 Not Found", {"error": {"code": "not_found", "field": "",
                                                       "message": f"fake node: no route {method} {path}"}})


def serve_one(raw, ctx, log):
    raw.settimeout(30)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # as joblet's listener: no Nagle wait
    try:
        conn = ctx.wrap_socket(raw, server_side=True)
    except (ssl.SSLError, OSError) as e:
        log.write({"handshake": str(e), "port": raw.getsockname()[1]})
        raw.close()
        return
    try:
        cert = conn.getpeercert() or {}
        cn = next((v for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName"), None)
        line, headers, rest = read_head(conn)
        if line is None:
            log.write({"cn": cn, "closed": "before a request"})
            return
        method, target, _ = line.split(" ", 2)
        h = hashlib.sha256()
        count = [0]

        def sink(p):
            h.update(p)
            count[0] += len(p)

        read_body(conn, headers, rest, sink)
        rec = {"method": method, "path": target, "host": headers.get("host"), "cn": cn,
               "port": conn.getsockname()[1],
               "bytes": count[0], "sha256": h.hexdigest(), "version": conn.version()}
        log.write(rec)
        answer(conn, method, target, headers, rec)
        try:
            conn.settimeout(2)
            conn.unwrap().close()
        except (ssl.SSLError, OSError, ValueError):
            pass
    except (ssl.SSLError, OSError, EOFError, ValueError) as e:
        log.write({"error": repr(e)})
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--bind", action="append", required=True)
    ap.add_argument("--ports", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--tls12", action="store_true")
    a = ap.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if a.tls12:
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    else:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(cafile=a.ca)
    ctx.load_cert_chain(a.cert, a.key)
    log = Log(a.log)
    ports = {}
    listeners = []
    for addr in a.bind:
        s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, 0))
        s.listen(64)
        ports[addr] = s.getsockname()[1]
        listeners.append(s)
    with open(a.ports + ".tmp", "w") as f:
        json.dump(ports, f)
    os.rename(a.ports + ".tmp", a.ports)

    def accept_loop(s):
        while True:
            raw, _ = s.accept()
            threading.Thread(target=serve_one, args=(raw, ctx, log), daemon=True).start()

    for s in listeners[1:]:
        threading.Thread(target=accept_loop, args=(s,), daemon=True).start()
    accept_loop(listeners[0])


if __name__ == "__main__":
    main()
