"""Uploads at scale (docs/api.md, "Streamed uploads"): rnx lists the files in the request and
streams their bytes after it; the daemon checks the request first, writes the bytes as they
come, and creates the job only once every byte is there. Links stay inside /work, modes are
kept (without setuid/setgid/sticky), limits hold on declared and actual sizes, a stalled or
vanished client leaves nothing behind, and the old JSON+base64 form still works."""
import hashlib
import http.server
import json
import os
import pathlib
import pty
import re
import shutil
import socket
import socketserver
import stat
import subprocess
import tempfile
import time

import pytest

from conftest import BUILD, TERMINAL, setpriv, wait_for

UID = 4321


# ---- helpers -------------------------------------------------------------------------------------

def staged(d):
    """What the daemon has under jobs/ for uploads still arriving."""
    return [n for n in d.job_dirs() if n.startswith(".incoming-")]


def raw_request(d, method, path, headers=None, chunks=(), read=True, close_after=False, timeout=30):
    """One HTTP request over the daemon's socket, byte by byte as the test wants it: the body's
    pieces are sent as given (so a test can lie, stop, or stall). Returns (status, json) or the
    open socket when read is False."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(d.sock)
    head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n"
    for k, v in (headers or {}).items():
        head += f"{k}: {v}\r\n"
    s.sendall((head + "\r\n").encode())
    try:
        for c in chunks:
            s.sendall(c)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the daemon answered early and closed: read the answer
    if close_after:
        s.close()
        return None
    if not read:
        return s
    return read_answer(s)


def read_answer(s):
    data = b""
    while True:
        try:
            got = s.recv(65536)
        except ConnectionResetError:
            break
        if not got:
            break
        data += got
        if b"\r\n\r\n" in data:
            head, _, body = data.partition(b"\r\n\r\n")
            m = re.search(rb"Content-Length: *(\d+)", head, re.I)
            if m and len(body) >= int(m.group(1)):
                break
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split()[1]) if head else 0
    return status, (json.loads(body) if body.strip() else None)


def post_listing(d, uploads, **fields):
    return d.api("POST", "/v1/jobs", {"command": "true", **fields, "uploads": uploads})


def put(d, upload, data, headers=None):
    h = {"Content-Length": str(len(data))}
    h.update(headers or {})
    return raw_request(d, "PUT", upload["path"], h, [data])


def chunked(*pieces):
    """The pieces as a chunked body."""
    out = [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces if p]
    return out + [b"0\r\n\r\n"]


def as_user(d, *args, timeout=120):
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    return subprocess.run([*setpriv(UID), *args], capture_output=True, text=True, timeout=timeout, env=env)


INSPECT = r"""
import hashlib, json, os
out = {}
for root, dirs, files in os.walk("/work"):
    for n in dirs + files:
        p = os.path.join(root, n)
        st = os.lstat(p)
        e = {"mode": oct(st.st_mode & 0o7777), "uid": st.st_uid}
        if os.path.islink(p):
            e = {"type": "symlink", "target": os.readlink(p), "uid": st.st_uid}
        elif os.path.isdir(p):
            e["type"] = "dir"
        else:
            e["type"] = "file"
            e["sha256"] = hashlib.sha256(open(p, "rb").read()).hexdigest()
        out[os.path.relpath(p, "/work")] = e
print(json.dumps(out, sort_keys=True))
"""


def expected_tree(base, names, uid):
    """What INSPECT should print for the uploads named (paths under base), with modes the job
    gets (no setuid/setgid/sticky) and the job's uid as owner."""
    out = {}
    for name in names:
        top = os.path.join(base, name)
        for path in [top] + sorted(os.path.join(r, n) for r, ds, fs in os.walk(top) for n in ds + fs):
            rel = os.path.relpath(path, base)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = {"type": "symlink", "target": os.readlink(path), "uid": uid}
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = {"type": "dir", "mode": oct(st.st_mode & 0o777), "uid": uid}
            else:
                out[rel] = {"type": "file", "mode": oct(st.st_mode & 0o777), "uid": uid,
                            "sha256": hashlib.sha256(open(path, "rb").read()).hexdigest()}
    return out


def make_tree(base):
    """A dataset: nested directories of several modes, files of several sizes and modes (one
    setuid, one empty), links inside the tree (to a file, to a directory, through '..')."""
    root = base / "dataset"
    (root / "train" / "class_a").mkdir(parents=True)
    (root / "train" / "class_b").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "train" / "class_a" / "x.bin").write_bytes(os.urandom(3 << 20))
    (root / "train" / "class_b" / "y.bin").write_bytes(os.urandom(123457))
    (root / "train" / "class_b" / "zero").write_bytes(b"")
    (root / "run.sh").write_bytes(b"#!/bin/sh\necho ran\n")
    (root / "secret.key").write_bytes(os.urandom(64))
    (root / "tool").write_bytes(b"#!/bin/sh\n")
    os.symlink("train/class_a/x.bin", root / "latest")
    os.symlink("../class_a", root / "train" / "class_b" / "sibling")
    os.symlink("../../run.sh", root / "train" / "class_a" / "run")
    os.chmod(root / "run.sh", 0o755)
    os.chmod(root / "secret.key", 0o600)
    os.chmod(root / "tool", 0o4755)        # setuid: not kept
    os.chmod(root / "train" / "class_b" / "y.bin", 0o640)
    os.chmod(root / "train" / "class_a", 0o750)
    os.chmod(root / "empty", 0o700)
    os.chmod(root / "train", 0o2775)       # setgid directory: not kept
    return root


# ---- the tree arrives intact -----------------------------------------------------------------

def test_tree_arrives_with_contents_modes_and_links(daemon, tmp_path):
    """A multi-file directory with modes and in-tree symlinks arrives intact: contents (sha256),
    modes (setuid/setgid stripped, said once by rnx), links with their targets, owned by the job."""
    root = make_tree(tmp_path)
    p = daemon.rnx("job", "run", "-f", "--upload", str(root), "python3", "-c", INSPECT)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    job = daemon.api("GET", "/v1/jobs")[1]["jobs"][-1]
    assert got == expected_tree(tmp_path, ["dataset"], job["uid"])
    assert got["dataset/tool"]["mode"] == "0o755" and got["dataset/train"]["mode"] == "0o775"
    assert "setuid, setgid and sticky bits are not uploaded (2 entries, e.g." in p.stderr
    # the listing says what was written
    listing = {u["path"]: u for u in job["uploads"]}
    assert listing["dataset/tool"]["mode"] == "0755"
    assert listing["dataset/train/class_a/x.bin"]["size"] == 3 << 20
    assert listing["dataset/latest"] == {"path": "dataset/latest", "type": "symlink", "mode": "0644", "size": 0,
                                         "target": "train/class_a/x.bin"}
    p = daemon.rnx("job", "run", "-f", "--upload", str(root), "sh", "dataset/train/class_a/run")
    assert p.returncode == 0 and p.stdout == "ran\n", p
    assert not staged(daemon)


def test_non_root_upload_is_owned_by_the_user(daemon):
    """A user's upload reads the user's files and arrives owned by the user's uid."""
    base = tempfile.mkdtemp(prefix="joblet-up-")  # pytest's tmp_path is root's alone
    os.chmod(base, 0o755)
    root = pathlib.Path(base) / "mine"
    root.mkdir()
    (root / "a.txt").write_bytes(b"hello\n")
    os.chown(root, UID, UID)
    os.chown(root / "a.txt", UID, UID)
    p = as_user(daemon, os.path.join(BUILD, "rnx"), "job", "run", "-f", "--upload", str(root),
                "sh", "-c", "stat -c '%u %a %n' mine mine/a.txt; cat mine/a.txt")
    shutil.rmtree(base)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"{UID} 755 mine\n{UID} 644 mine/a.txt\nhello\n"


def test_over_the_limit_refused_before_sending(daemon, tmp_path):
    """A file over jobs.max_upload_bytes (256 MB by default) is refused before a byte is sent."""
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate(300 << 20)
    p = daemon.rnx("job", "run", "--upload", str(big), "true")
    assert p.returncode == 1
    assert "exceed the limit of 268435456 bytes (jobs.max_upload_bytes)" in p.stderr, p.stderr
    assert not staged(daemon)


@pytest.fixture(scope="module")
def big_daemon():
    from conftest import Daemon, need_root
    need_root()
    d = Daemon("  max_upload_bytes: 1GB\n  upload_timeout_s: 5\n").start()
    yield d
    d.cleanup()


def test_300mb_upload_arrives_unchanged(big_daemon, tmp_path):
    """300 MB of random bytes through rnx arrive unchanged (sha256 inside the job), in seconds."""
    big = tmp_path / "big.bin"
    h = hashlib.sha256()
    with open(big, "wb") as f:
        block = os.urandom(1 << 20)
        for i in range(300):
            chunk = block[i:] + block[:i]
            h.update(chunk)
            f.write(chunk)
    t0 = time.time()
    p = big_daemon.rnx("job", "run", "-f", "--upload", str(big), "sha256sum", "big.bin")
    took = time.time() - t0
    assert p.returncode == 0, p.stderr
    assert p.stdout.split()[0] == h.hexdigest()
    assert took < 60, took
    assert "uploading" not in p.stderr  # stderr is not a terminal: no progress


def test_progress_on_a_terminal(big_daemon, tmp_path):
    """On a terminal, rnx shows bytes and % on stderr while it uploads, then what it sent."""
    big = tmp_path / "sparse.bin"
    with open(big, "wb") as f:
        f.truncate(1 << 30)  # 1 GiB: takes more than the 300 ms after which progress shows
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["JOBLET_SOCKET"] = big_daemon.sock
        os.execv(os.path.join(BUILD, "rnx"), ["rnx", "job", "run", "--upload", str(big), "true"])
    out = b""
    while True:
        try:
            got = os.read(fd, 4096)
        except OSError:
            break
        if not got:
            break
        out += got
    _, status = os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert re.search(r"rnx: uploading [0-9.]+ [KMG]?i?B of 1\.0 GB \(\d+%\)", text), text
    assert "rnx: uploaded 1.0 GB in " in text, text


# ---- links that leave the upload -----------------------------------------------------------

def test_link_to_etc_shadow_refused_by_rnx(daemon, tmp_path):
    """rnx refuses a tree holding a link to /etc/shadow before sending anything, naming it."""
    root = tmp_path / "data"
    root.mkdir()
    (root / "ok.txt").write_text("ok\n")
    os.symlink("/etc/shadow", root / "pw")
    before = daemon.job_count()
    p = daemon.rnx("job", "run", "--upload", str(root), "true")
    assert p.returncode == 2, p
    assert f"--upload: {root}/pw: a symlink to '/etc/shadow', outside what is uploaded" in p.stderr, p.stderr
    # also a link that climbs out through '..'
    os.unlink(root / "pw")
    os.symlink("../../../../../../etc/shadow", root / "pw")
    p = daemon.rnx("job", "run", "--upload", str(root), "true")
    assert p.returncode == 2 and f"{root}/pw: a symlink to '../../../../../../etc/shadow'" in p.stderr, p.stderr
    assert daemon.job_count() == before
    assert not staged(daemon)


@pytest.mark.parametrize("links", [
    [{"path": "pw", "type": "symlink", "target": "/etc/shadow"}],
    [{"path": "d", "type": "dir"}, {"path": "d/pw", "type": "symlink", "target": "../../etc/shadow"}],
    # through another link: d/up is /work, one more '..' leaves it
    [{"path": "d", "type": "dir"}, {"path": "d/up", "type": "symlink", "target": ".."},
     {"path": "d/pw", "type": "symlink", "target": "up/../etc/shadow"}],
])
def test_link_to_etc_shadow_refused_by_the_api(daemon, links):
    """A client that skips rnx's check is refused by the daemon (400 naming the link), in the
    streamed form and in the JSON form; nothing is created."""
    before = daemon.job_count()
    bad = links[-1]["path"]
    for extra in ([{"path": "f", "size": 5}], [{"path": "f", "content_b64": "aGVsbG8="}]):
        code, ans = post_listing(daemon, extra + links)
        assert code == 400, ans
        assert ans["error"]["field"] == "uploads"
        assert ans["error"]["message"].startswith(f"uploads: '{bad}' is a symlink to "), ans
        assert "outside the uploads" in ans["error"]["message"]
    assert daemon.job_count() == before
    assert not staged(daemon)


# ---- limits on sizes --------------------------------------------------------------------------

@pytest.fixture
def small_daemon(fresh_daemon):
    return fresh_daemon("  max_upload_bytes: 1MB\n  upload_timeout_s: 2\n")


def test_declared_too_big_refused_before_any_byte(small_daemon, tmp_path):
    """Sizes declared over jobs.max_upload_bytes: 413 to the listing, no upload opened, no byte
    written (rnx sends none)."""
    d = small_daemon
    code, ans = post_listing(d, [{"path": "a", "size": 700 << 10}, {"path": "b", "size": 700 << 10}])
    assert code == 413, ans
    assert ans["error"]["message"] == ("uploads: 1433600 bytes in total exceed the limit of 1048576 bytes "
                                       "(jobs.max_upload_bytes)")
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(2 << 20))
    p = d.rnx("job", "run", "--upload", str(big), "true")
    assert p.returncode == 1 and "jobs.max_upload_bytes" in p.stderr, p.stderr
    assert "to come" not in d.log()          # no upload was ever opened
    assert d.job_dirs() == []


def test_lying_sizes_refused_nothing_left(small_daemon):
    """Actual bytes must match the declared ones: a Content-Length that differs is refused at the
    headers; a chunked body that goes on past the declared size, or ends short, is refused
    when it ends; in every case no job and no file remain."""
    d = small_daemon
    code, ans = post_listing(d, [{"path": "a", "size": 10}])
    assert code == 202, ans
    up = ans["upload"]
    assert up["bytes"] == 10 and up["files"] == 1
    # Content-Length above what was declared: refused before the body is read
    code, err = put(d, up, b"x" * 20)
    assert code == 400 and "Content-Length 20 is not the 10 bytes" in err["error"]["message"], err
    # the upload still waits; a chunked body with more bytes than declared
    code, err = raw_request(d, "PUT", up["path"], {"Transfer-Encoding": "chunked"}, chunked(b"y" * 8, b"z" * 12))
    assert code == 400, err
    assert err["error"]["message"] == "uploads: the body goes on past the 10 bytes the listing declares"
    assert staged(d) == [] and d.job_dirs() == [] and d.job_count() == 0
    # the upload is gone after a failed PUT
    code, err = put(d, up, b"x" * 10)
    assert code == 404 and "no upload" in err["error"]["message"], err
    # a chunked body that ends short
    code, ans = post_listing(d, [{"path": "d", "type": "dir"}, {"path": "d/a", "size": 10}, {"path": "d/b", "size": 4}])
    assert code == 202, ans
    code, err = raw_request(d, "PUT", ans["upload"]["path"], {"Transfer-Encoding": "chunked"}, chunked(b"0123456789ab"))
    assert code == 400, err
    assert err["error"]["message"] == ("uploads: the body ended after 12 of the 14 bytes declared: 'd/b' lacks 2 of "
                                       "its 4 bytes")
    assert staged(d) == [] and d.job_dirs() == [] and d.job_count() == 0


def test_put_by_another_user_is_not_found(small_daemon):
    """An upload can be sent only by the user who opened it."""
    d = small_daemon
    code, ans = post_listing(d, [{"path": "a", "size": 3}])
    assert code == 202
    script = ("import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
              "s.sendall(b'PUT %s HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 3\\r\\n\\r\\nabc' % sys.argv[2].encode()); "
              "print(s.recv(4096).split()[1].decode())")
    p = as_user(d, "/usr/bin/python3", "-c", script, d.sock, ans["upload"]["path"])
    assert p.returncode == 0 and p.stdout.strip() == "404", (p.stdout, p.stderr)
    code, job = put(d, ans["upload"], b"abc")
    assert code == 201, job


# ---- clients that stop -------------------------------------------------------------------------

@pytest.fixture
def one_upload_daemon(fresh_daemon):
    return fresh_daemon("  upload_timeout_s: 2\nlimits:\n  uploads_per_user: 1\n")


def test_stalled_client_is_dropped_after_the_timeout(one_upload_daemon):
    """A client that stops sending midway: no job is created, the staged files are removed, and
    its slot (limits.uploads_per_user) is free again once jobs.upload_timeout_s has passed."""
    d = one_upload_daemon
    code, ans = post_listing(d, [{"path": "big", "size": 1 << 20}])
    assert code == 202, ans
    s = raw_request(d, "PUT", ans["upload"]["path"], {"Content-Length": str(1 << 20)}, [b"x" * (300 << 10)],
                    read=False)
    time.sleep(0.5)
    assert len(staged(d)) == 1
    # its slot is taken meanwhile
    code, err = post_listing(d, [{"path": "other", "size": 1}])
    assert code == 429 and "limits.uploads_per_user is 1" in err["error"]["message"], err
    deadline = time.time() + 10
    while staged(d) and time.time() < deadline:
        time.sleep(0.1)
    assert staged(d) == [] and d.job_count() == 0
    assert s.recv(100) == b""  # closed by the daemon, without an answer
    s.close()
    assert "dropped after 307200 of 1048576 bytes: no byte came for jobs.upload_timeout_s" in d.log()
    code, ans = post_listing(d, [{"path": "other", "size": 1}])
    assert code == 202, ans
    assert put(d, ans["upload"], b"1")[0] == 201


def test_no_put_at_all_expires(one_upload_daemon):
    """A 202 that is never followed by its PUT is dropped after jobs.upload_timeout_s."""
    d = one_upload_daemon
    code, ans = post_listing(d, [{"path": "a", "size": 5}])
    assert code == 202
    assert len(staged(d)) == 1
    wait_for(lambda: staged(d) == [], "the upload dropped after jobs.upload_timeout_s", 60)
    code, err = put(d, ans["upload"], b"12345")
    assert code == 404, err
    assert "no PUT of its bytes within jobs.upload_timeout_s" in d.log()


def test_client_that_vanishes_midway_leaves_nothing(one_upload_daemon):
    """A connection closed before the last byte: dropped at once, nothing left behind."""
    d = one_upload_daemon
    code, ans = post_listing(d, [{"path": "a", "size": 1000}])
    assert code == 202
    raw_request(d, "PUT", ans["upload"]["path"], {"Content-Length": "1000"}, [b"x" * 400], close_after=True)
    deadline = time.time() + 8
    while staged(d) and time.time() < deadline:
        time.sleep(0.05)
    assert staged(d) == [] and d.job_count() == 0
    # usually at once; when libmicrohttpd reads the headers and the close together it never
    # hands the request over, and the upload is dropped by its timeout instead
    assert re.search(r"dropped after \d+ of 1000 bytes: (the connection closed before every byte arrived|no PUT)",
                     d.log()), d.log()


# ---- many uploads at once ----------------------------------------------------------------------

def test_concurrent_uploads_are_bounded(fresh_daemon):
    """limits.uploads_per_user open uploads per user (429 past it, naming the key), while
    another user still gets one; server.max_uploads in all (503); an open upload counts among
    the user's waiting jobs (limits.max_queued_per_user)."""
    d = fresh_daemon("  upload_timeout_s: 30\nserver:\n  max_uploads: 3\n"
                     "limits:\n  uploads_per_user: 2\n  max_queued_per_user: 3\n")
    opened = [post_listing(d, [{"path": "a", "size": 1}]) for _ in range(2)]
    assert [c for c, _ in opened] == [202, 202]
    code, err = post_listing(d, [{"path": "a", "size": 1}])
    assert code == 429, err
    assert err["error"]["message"].startswith("uid 0 already has 2 uploads and copies open; limits.uploads_per_user is 2")
    # the two promised jobs count: one more waiting job fits under max_queued_per_user 3, not two
    code, job = d.api("POST", "/v1/jobs", {"command": "sleep", "args": ["30"], "schedule_at": "2031-01-01T00:00:00Z"})
    assert code == 201, job
    code, err = d.api("POST", "/v1/jobs", {"command": "true", "schedule_at": "2031-01-01T00:00:00Z"})
    assert code == 429 and "limits.max_queued_per_user is 3" in err["error"]["message"], err
    # an array's upload promises each of its tasks: a second one of 2 tasks does not fit beside
    # the first's 2 (the check counted 1 for the first, and 4 tasks waited under a limit of 3)
    done = [put(d, o[1]["upload"], b"1") for o in opened]
    assert [c for c, _ in done] == [201, 201], done
    for j in done:
        d.wait(j[1]["id"])
    assert d.api("POST", f"/v1/jobs/{job['id']}/cancel")[0] == 200
    code, up = post_listing(d, [{"path": "a", "size": 1}], array="0-1", schedule_at="2031-01-01T00:00:00Z")
    assert code == 202, up
    code, err = post_listing(d, [{"path": "a", "size": 1}], array="0-1", schedule_at="2031-01-01T00:00:00Z")
    assert code == 429 and "has 2 jobs waiting and this asks for 2 more" in err["error"]["message"], err
    assert put(d, up["upload"], b"1")[0] == 201
    arr = d.api("GET", "/v1/jobs?status=SCHEDULED")[1]
    for j in arr["jobs"]:
        d.api("POST", f"/v1/jobs/{j['id']}/cancel")
    opened = [post_listing(d, [{"path": "a", "size": 1}]) for _ in range(2)]
    assert [c for c, _ in opened] == [202, 202]
    # another user: its own slots, until the machine's limit
    script = ("import json,socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
              "b=json.dumps({'command':'true','uploads':[{'path':'a','size':1}]}).encode(); "
              "s.sendall(b'POST /v1/jobs HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: %d\\r\\n\\r\\n' % len(b) + b); "
              "print(s.recv(4096).split()[1].decode())")
    p = as_user(d, "/usr/bin/python3", "-c", script, d.sock)
    assert p.stdout.strip() == "202", (p.stdout, p.stderr)
    p = as_user(d, "/usr/bin/python3", "-c", script, d.sock)
    assert p.stdout.strip() == "503", (p.stdout, p.stderr)
    # sending one completes it and frees its slot
    assert put(d, opened[0][1]["upload"], b"1")[0] == 201
    assert post_listing(d, [{"path": "a", "size": 1}])[0] == 202


class CpStandIn(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """A stand-in for joblet on a unix socket, for rnx job cp into a job: the destination is a
    directory, and the first `busy` PUTs of the archive are answered 503 with Retry-After (a
    jerr_busy's "nothing was written: ask again") after their whole body was read, the next one
    201. Every PUT's body is kept, chunked coding undone."""
    daemon_threads = True

    def __init__(self, path, busy):
        self.busy, self.bodies = busy, []
        super().__init__(path, CpHandler)


class CpHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def answer(self, status, obj, extra=()):
        body = json.dumps(obj).encode()
        self.send_response(status)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if "stat=1" in self.path:
            return self.answer(200, {"type": "dir"})
        return self.answer(200, {"version": "stand-in", "max_upload_bytes": 0})

    def do_PUT(self):
        data = b""
        while True:
            size = int(self.rfile.readline().strip(), 16)
            if size == 0:
                self.rfile.readline()
                break
            data += self.rfile.read(size)
            self.rfile.readline()
        srv = self.server
        srv.bodies.append(data)
        if len(srv.bodies) <= srv.busy:
            return self.answer(503, {"error": {"code": "unavailable", "message": "too many copies (stand-in)"}},
                               [("Retry-After", "1")])
        self.answer(201, {"bytes": len(data), "entries": 1})


def test_rnx_job_cp_into_a_job_asks_again_while_joblet_is_busy(tmp_path):
    """A copy into a job answered busy (503 with Retry-After: joblet's uploads and copies full,
    too many requests waiting; nothing was written) is sent again by rnx job cp, its file read
    again, after the pause, as rnx asks any request again; before, the 503 was rnx's answer. A
    tar from stdin cannot be read again: its busy answer is rnx's."""
    import io
    import tarfile
    import threading
    sock = str(tmp_path / "joblet.sock")
    srv = CpStandIn(sock, 2)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": sock,
           **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}}
    try:
        mark = "copied-" + os.urandom(4).hex()
        (tmp_path / "f.txt").write_text(mark + "\n")
        p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "cp", str(tmp_path / "f.txt"), "j1:/work/"],
                           capture_output=True, text=True, timeout=60, env=env)
        assert p.returncode == 0, p.stderr
        assert p.stderr.count("is busy") == 1 and "asking again" in p.stderr, p.stderr
        assert len(srv.bodies) == 3 and srv.bodies[0] == srv.bodies[1] == srv.bodies[2], srv.bodies
        with tarfile.open(fileobj=io.BytesIO(srv.bodies[2])) as tf:
            assert tf.getnames() == ["f.txt"] and tf.extractfile("f.txt").read() == (mark + "\n").encode()
        # from stdin: answered busy once, and that is rnx's answer
        srv.bodies, srv.busy = [], 1
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            info = tarfile.TarInfo("s.txt")
            info.size = 3
            tf.addfile(info, io.BytesIO(b"hi\n"))
        p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "cp", "-", "j1:/work/"], input=buf.getvalue(),
                           capture_output=True, timeout=60, env=env)
        assert p.returncode == 1 and b"too many copies" in p.stderr and b"asking again" not in p.stderr, p.stderr
        assert len(srv.bodies) == 1
    finally:
        srv.shutdown()
        srv.server_close()


def test_stale_staging_removed_at_start(fresh_daemon):
    """A daemon killed during an upload leaves its staged files; the next one removes them."""
    d = fresh_daemon()
    code, ans = post_listing(d, [{"path": "a", "size": 5}])
    assert code == 202 and len(staged(d)) == 1
    d.kill9()
    d.start()
    assert staged(d) == []
    assert put(d, ans["upload"], b"12345")[0] == 404


# ---- the JSON form ---------------------------------------------------------------------------

def test_old_json_form_still_works(daemon):
    """content_b64 inside the JSON body: written as before (modes stripped of setuid), in one
    request answered 201."""
    code, job = daemon.api("POST", "/v1/jobs", {
        "command": "sh", "args": ["-c", "stat -c '%a %s %n' d d/a.txt; cat d/a.txt; readlink d/l"],
        "uploads": [{"path": "d", "type": "dir", "mode": 0o750},
                    {"path": "d/a.txt", "type": "file", "mode": 0o4755, "content_b64": "aGVsbG8K", "size": 6},
                    {"path": "d/l", "type": "symlink", "target": "a.txt"}]})
    assert code == 201, job
    done = daemon.wait(job["id"])
    assert done["status"] == "COMPLETED", done
    assert daemon.output(job["id"]) == "750 4096 d\n755 6 d/a.txt\nhello\na.txt\n"
    assert [u["mode"] for u in job["uploads"]] == ["0750", "0755", "0644"]
    # a size that does not match the content is refused, and leaves nothing
    before = daemon.job_count()
    code, err = daemon.api("POST", "/v1/jobs", {"command": "true", "uploads": [
        {"path": "a", "content_b64": "aGVsbG8K", "size": 7}]})
    assert code == 400 and "size 7 does not match its content_b64 (6 bytes)" in err["error"]["message"], err
    assert daemon.job_count() == before


def test_json_body_limit_refused_before_reading(fresh_daemon):
    """A body over server.max_body_bytes is refused by its Content-Length, before it is read."""
    d = fresh_daemon("server:\n  max_body_bytes: 64K\n")
    body = json.dumps({"command": "true", "uploads": [{"path": "a", "content_b64": "A" * (100 << 10)}]}).encode()
    code, err = raw_request(d, "POST", "/v1/jobs", {"Content-Length": str(len(body)),
                                                    "Content-Type": "application/json"}, [body])
    assert code == 413, err
    assert err["error"]["message"].startswith(f"the request body is {len(body)} bytes; joblet takes at most 65536 "
                                              "(server.max_body_bytes)")
    code, ver = d.api("GET", "/v1/version")
    assert ver["max_body_bytes"] == 65536


# ---- workflows ---------------------------------------------------------------------------------

def test_workflow_uploads_are_streamed(fresh_daemon, tmp_path):
    """A workflow's uploads go the same way: listed in POST /v1/workflows, every job's files in
    one PUT; each job finds its own."""
    d = fresh_daemon()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.csv").write_bytes(os.urandom(1 << 20))
    os.symlink("rows.csv", tmp_path / "data" / "latest.csv")
    (tmp_path / "prep.sh").write_text("sha256sum data/latest.csv | cut -c1-64\n")
    (tmp_path / "train.sh").write_text("test -f prep.sh || echo alone; ls\n")
    digest = hashlib.sha256((tmp_path / "data" / "rows.csv").read_bytes()).hexdigest()
    wf = tmp_path / "wf.yaml"
    wf.write_text("jobs:\n  prep:\n    command: sh\n    args: [prep.sh]\n    uploads: [prep.sh, data/]\n"
                  "  train:\n    command: sh\n    args: [train.sh]\n    uploads: [train.sh]\n"
                  "    requires:\n      - prep: COMPLETED\n")
    p = d.rnx("workflow", "run", "--json", str(wf))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["id"]
    deadline = time.time() + 60
    while time.time() < deadline:
        jobs = d.api("GET", "/v1/jobs")[1]["jobs"]
        if len(jobs) == 2 and all(j["status"] in TERMINAL for j in jobs):
            break
        time.sleep(0.1)
    by = {j["name"]: j for j in d.api("GET", "/v1/jobs")[1]["jobs"]}
    assert by["prep"]["status"] == "COMPLETED" and by["train"]["status"] == "COMPLETED", by
    assert d.output(by["prep"]["id"]) == digest + "\n"
    assert d.output(by["train"]["id"]) == "alone\ntrain.sh\n"
    assert staged(d) == []


def test_workflow_link_out_refused(fresh_daemon, tmp_path):
    """A workflow whose uploads hold a link to /etc/shadow is refused by rnx (run and validate)
    at the uploads: line, and by the daemon for a client that skips the check."""
    d = fresh_daemon()
    (tmp_path / "data").mkdir()
    os.symlink("/etc/shadow", tmp_path / "data" / "pw")
    wf = tmp_path / "wf.yaml"
    wf.write_text("jobs:\n  a:\n    command: true\n    uploads: [data]\n")
    for cmd in ("run", "validate"):
        p = d.rnx("workflow", cmd, str(wf))
        assert p.returncode != 0, p
        assert f"wf.yaml:4:14: job 'a': uploads: {tmp_path}/data/pw: a symlink to '/etc/shadow'" in p.stderr, p.stderr
    body = {"name": "w", "jobs": [{"name": "a", "requires": [], "request": {"command": "true", "uploads": [
        {"path": "f", "size": 3}, {"path": "pw", "type": "symlink", "target": "/etc/shadow"}]}}]}
    code, err = d.api("POST", "/v1/workflows", body)
    assert code == 400, err
    assert err["error"]["field"] == "jobs[0].request.uploads"
    assert "'pw' is a symlink to '/etc/shadow', outside the uploads" in err["error"]["message"]
    assert d.job_count() == 0 and staged(d) == []
