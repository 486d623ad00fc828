"""rnx job list over more jobs than one slice of the daemon's listing (jobs_list.c: 256 a turn):
every job once, its filters, arrays as one line (--expand: their tasks too), and the table the
same whether the daemon sends whole jobs or only the keys rnx asks for (GET /v1/jobs?fields=,
docs/performance.md "Listing 100,000 jobs")."""
import json
import os
import re
import socket
import subprocess
import threading

import pytest

from conftest import BUILD, Daemon, api_as, need_root, need_setpriv, preload_object

HELD = 300            # held jobs (they never run): more than a slice of 256
USERS = (4601, 4602)  # two owners besides root, no /etc/passwd entry (the table shows the uid)
PER_USER = 3


@pytest.fixture(scope="module")
def d():
    need_root()
    need_setpriv()
    dm = Daemon().start()
    try:
        dm.ids = {"held": [], "ended": [], "users": {u: [] for u in USERS}}
        for i in range(HELD):
            code, j = dm.api("POST", "/v1/jobs", {"command": "sleep", "args": ["600"], "hold": True,
                                                  "name": f"h{i % 7}"})
            assert code == 201, j
            dm.ids["held"].append(j["id"])
        for i in range(4):
            dm.ids["ended"].append(dm.run("sh", "-c", f"exit {i}", name="ended")[0]["id"])
        for u in USERS:
            for _ in range(PER_USER):
                code, j = api_as(dm, u, "POST", "/v1/jobs", {"command": "true", "hold": True})
                assert code == 201, j
                dm.ids["users"][u].append(j["id"])
        code, a = dm.api("POST", "/v1/jobs", {"command": "true", "array": "0-5%2", "name": "arr"})
        assert code == 201, a
        dm.array = a["id"]
        code, h = dm.api("POST", "/v1/jobs", {"command": "true", "array": "0-99", "hold": True})
        assert code == 201, h
        dm.held_array = h["id"]
        from conftest import wait_array
        wait_array(dm, dm.array)
        yield dm
    finally:
        dm.cleanup()


def all_ids(d):
    return d.ids["held"] + d.ids["ended"] + [j for u in USERS for j in d.ids["users"][u]]


def rows(out):
    """The table's lines after its header, by their first cell."""
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["ID", "NUM"], out[:500]
    return [l.split()[0] for l in lines[1:]]


def test_every_job_once_arrays_one_line(d):
    p = d.rnx("job", "list", check=True)
    firsts = rows(p.stdout)
    want = {j[:8] for j in all_ids(d)}
    assert len(firsts) == len(want) + 2, p.stdout[-2000:]
    assert set(firsts) == want | {f"{d.array[:8]}_[0-5%2]", f"{d.held_array[:8]}_[0-99]"}
    # the array's line says its tasks by state, none of its tasks has one of its own
    arr = [l for l in p.stdout.splitlines() if l.startswith(d.array[:8] + "_[")]
    assert "COMPLETED (6 COMPLETED)" in arr[0], arr
    jobs = json.loads(d.rnx("job", "list", "--json", check=True).stdout)
    ids = [j["id"] for j in jobs]
    assert len(ids) == len(set(ids)) == len(want) + 2
    assert set(ids) == set(all_ids(d)) | {d.array, d.held_array}


def test_expand_lists_each_task_once(d):
    firsts = rows(d.rnx("job", "list", "--expand", check=True).stdout)
    tasks = [f for f in firsts if f.startswith(d.array[:8] + "_") and not f.endswith("]")]
    assert sorted(tasks) == sorted(f"{d.array[:8]}_{t}" for t in range(6))
    assert len(firsts) == len(set(firsts)) == len(all_ids(d)) + 2 + 6


def test_status_and_user_filters(d):
    held = rows(d.rnx("job", "list", "--status", "held", check=True).stdout)
    want = {j[:8] for j in d.ids["held"]} | {j[:8] for u in USERS for j in d.ids["users"][u]}
    assert len(held) == len(want) + 1 and set(held) == want | {f"{d.held_array[:8]}_[0-99]"}
    done = rows(d.rnx("job", "list", "--status", "COMPLETED", check=True).stdout)
    assert sorted(done) == sorted([d.ids["ended"][0][:8], f"{d.array[:8]}_[0-5%2]"])
    for u in USERS:
        mine = rows(d.rnx("job", "list", "--user", str(u), check=True).stdout)
        assert sorted(mine) == sorted(j[:8] for j in d.ids["users"][u])
    named = rows(d.rnx("job", "list", "--name", "h3", check=True).stdout)
    assert len(named) == len([i for i in range(HELD) if i % 7 == 3])


def test_fields_api(d):
    """?fields= keeps those keys in each item, a job's and an array's, with the values the whole
    item has; a key that is none is refused, naming it."""
    code, full = d.api("GET", "/v1/jobs")
    assert code == 200
    code, some = d.api("GET", "/v1/jobs?fields=id,status,name,kind,array")
    assert code == 200
    assert [j["id"] for j in some["jobs"]] == [j["id"] for j in full["jobs"]]
    for a, b in zip(full["jobs"], some["jobs"]):
        want = {k: a[k] for k in ("id", "status", "name", "kind", "array") if k in a}
        assert b == want
    assert any(j.get("kind") == "array" for j in some["jobs"])
    code, e = d.api("GET", "/v1/jobs?fields=id,bogus")
    assert code == 400 and e["error"]["field"] == "fields", e
    assert "'bogus'" in e["error"]["message"] and "created_at" in e["error"]["message"], e
    code, e = d.api("GET", "/v1/jobs?fields=")
    assert code == 400 and e["error"]["field"] == "fields", e


class StandIn:
    """A unix socket at PATH rnx is pointed at in place of d's; each connection is given to
    .serve(c) on a thread of its own."""

    def __init__(self, d, path):
        self.d, self.path = d, path
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(8)
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def close(self):
        self.srv.close()


class FieldsStripper(StandIn):
    """A stand-in that forwards every byte to d's socket, with ?fields= taken out of the
    requests: rnx then gets whole jobs, as from a joblet without fields (an older one ignored
    the key). .asked: whether any request had fields=."""

    def __init__(self, d, path):
        self.asked = False
        super().__init__(d, path)

    def serve(self, c):
        up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        up.connect(self.d.sock)
        threading.Thread(target=self.pipe, args=(up, c, False), daemon=True).start()
        self.pipe(c, up, True)

    def pipe(self, src, dst, rewrite):
        try:
            while True:
                b = src.recv(1 << 16)
                if not b:
                    break
                if rewrite and b"fields=" in b:
                    self.asked = True
                    b = re.sub(rb"\?fields=[^& ]*&", b"?", b)
                    b = re.sub(rb"[?&]fields=[^& ]*", b"", b)
                dst.sendall(b)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass


def test_table_same_from_whole_jobs(d, tmp_path):
    """The table rnx prints from the keys it asks for is the one it prints from whole jobs (every
    key list_row reads is asked for), with the user column too (root sees everyone's)."""
    os.chmod(tmp_path, 0o755)
    proxy = FieldsStripper(d, str(tmp_path / "proxy.sock"))
    try:
        for args in (["job", "list"], ["job", "list", "--expand"], ["job", "list", "--status", "HELD"]):
            direct = d.rnx(*args, check=True).stdout
            whole = subprocess.run([os.path.join(BUILD, "rnx"), *args], capture_output=True, text=True, timeout=120,
                                   env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": proxy.path})
            assert whole.returncode == 0, whole.stderr
            assert direct == whole.stdout
            assert "USER" in direct.splitlines()[0]
        assert proxy.asked, "rnx job list did not ask for the keys it prints (?fields=)"
    finally:
        proxy.close()


_COUNT_PWUID = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long calls;

struct passwd *getpwuid(uid_t uid)
{
    static struct passwd *(*real)(uid_t);
    if (!real)
        real = (struct passwd *(*)(uid_t))dlsym(RTLD_NEXT, "getpwuid");
    calls++;
    return real(uid);
}

__attribute__((destructor)) static void report(void)
{
    const char *p = getenv("PWUID_COUNT");
    FILE *f = p ? fopen(p, "w") : NULL;
    if (f) {
        fprintf(f, "%lu\n", calls);
        fclose(f);
    }
}
"""


def test_owner_names_looked_up_once_each(d, tmp_path):
    """The USER column looks each owner up once (getpwuid went through /etc/passwd and
    systemd's userdb per job: 3 M openat for 100,000 jobs), and still names each row's own."""
    so = preload_object(tmp_path, _COUNT_PWUID, "countpw")
    count = tmp_path / "count"
    p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "list"], capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock, "LD_PRELOAD": so,
                            "PWUID_COUNT": str(count)})
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    user_col = lines[0].split().index("USER")
    by_id = {l.split()[0]: l for l in lines[1:]}
    for u in USERS:
        for j in d.ids["users"][u]:
            assert str(u) in by_id[j[:8]].split(), by_id[j[:8]]
    assert by_id[d.ids["held"][0][:8]].split()[user_col + 1] == "root"  # (CREATED is two words)
    calls = int(count.read_text())
    assert 1 <= calls <= len(USERS) + 2, f"getpwuid called {calls} times for {len(lines) - 1} rows"


def test_json_laid_out_as_before(d):
    """rnx job list --json prints the answer's jobs as it comes (cli/json_items.c), laid out as
    jansson's JSON_INDENT(2) of the whole array was (Python's indent=2 is the same layout): strings
    with quotes, backslashes, tabs and UTF-8, empty objects and arrays, nested ones; [] for none;
    --name's choice made on each job."""
    code, j = d.api("POST", "/v1/jobs", {"command": "true", "args": ['a "q" \\ b\tc', "é✓", ""],
                                         "env": {"K": "{[,:]}", "E": ""}, "hold": True, "name": "odd \"name\""})
    assert code == 201, j
    try:
        code, body = d.api("GET", "/v1/jobs")
        assert code == 200
        p = d.rnx("job", "list", "--json", check=True)
        assert p.stdout == json.dumps(body["jobs"], indent=2, ensure_ascii=False) + "\n"
        named = d.rnx("job", "list", "--json", "--name", 'odd "name"', check=True).stdout
        assert named == json.dumps([x for x in body["jobs"] if x.get("name") == 'odd "name"'], indent=2,
                                   ensure_ascii=False) + "\n"
        assert json.loads(named)[0]["args"][1] == "é✓"
        assert d.rnx("job", "list", "--json", "--name", "no-such-name", check=True).stdout == "[]\n"
    finally:
        d.api("DELETE", f"/v1/jobs/{j['id']}")


class Relayer(StandIn):
    """A stand-in answering each GET with joblet's answer to it laid out another way (spaces
    after ':' and ','): not the {"jobs":[ rnx streams, which it then parses whole."""

    def __init__(self, d, path, cut=False):
        self.cut = cut
        super().__init__(d, path)

    def serve(self, c):
        with c:
            head = b""
            while b"\r\n\r\n" not in head:
                b = c.recv(1 << 16)
                if not b:
                    return
                head += b
            path = head.split(b" ")[1].decode()
            code, body = self.d.api("GET", path)
            data = json.dumps(body, separators=(",", ":") if self.cut else (", ", ": ")).encode()
            head = (b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                    b"Connection: close\r\n\r\n" % (code, len(data)))
            # cut: joblet's own layout, the connection closed halfway through
            c.sendall(head + (data[:len(data) // 2] if self.cut else data))


def test_json_from_another_layout(d, tmp_path):
    """An answer not laid out as joblet's (a proxy's, an older server's) is parsed whole and
    printed the same; the table too."""
    os.chmod(tmp_path, 0o755)
    r = Relayer(d, str(tmp_path / "relay.sock"))
    try:
        env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": r.path}
        for args in (["job", "list", "--json"], ["job", "list", "--json", "--name", "h3"], ["job", "list"]):
            direct = d.rnx(*args, check=True).stdout
            other = subprocess.run([os.path.join(BUILD, "rnx"), *args], capture_output=True, text=True,
                                   timeout=120, env=env)
            assert other.returncode == 0, other.stderr
            assert other.stdout == direct
    finally:
        r.close()


def test_json_cut_short_fails_after_what_came(d, tmp_path):
    """An answer that breaks off: the jobs that came whole are printed, rnx says why and exits 1."""
    os.chmod(tmp_path, 0o755)
    r = Relayer(d, str(tmp_path / "cut.sock"), cut=True)
    try:
        p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "list", "--json"], capture_output=True, text=True,
                           timeout=120, env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": r.path})
        assert p.returncode == 1, (p.returncode, p.stderr)
        assert "cut short" in p.stderr or "ended early" in p.stderr, p.stderr
        assert p.stdout.startswith("[\n  {\n    \"id\": "), p.stdout[:200]
        assert not p.stdout.rstrip().endswith("]"), p.stdout[-200:]
    finally:
        r.close()


BIG_JOBS, BIG_ENV = 160, 120 << 10


def test_rnx_memory_bounded_by_a_job_not_the_list(tmp_path):
    """rnx holds one job of a listing at a time, not the whole answer: 160 jobs with an env value
    of 120 KiB each (a 19 MB answer) listed with rnx --json at a small fraction of that (it held the
    answer, then jansson's objects of it: ~9 times the answer for 162,000 jobs; an answer over
    256 MB was refused)."""
    need_root()
    if not os.access("/usr/bin/time", os.X_OK):
        pytest.skip("needs /usr/bin/time (GNU time) for rnx's own peak memory")
    dm = Daemon().start()
    try:
        for i in range(BIG_JOBS):
            code, j = dm.api("POST", "/v1/jobs", {"command": "true", "hold": True,
                                                  "env": {"BIG": chr(ord("a") + i % 26) * BIG_ENV}})
            assert code == 201, j
        code, body = dm.api("GET", "/v1/jobs", timeout=120)
        answer = len(json.dumps(body, separators=(",", ":")))
        assert answer > BIG_JOBS * BIG_ENV
        # (an ASan build: freed memory is not held in quarantine, so that the peak is rnx's own)
        asan = {"ASAN_OPTIONS": os.environ["ASAN_OPTIONS"] + ":quarantine_size_mb=0"} if "ASAN_OPTIONS" in os.environ \
            else {}

        def peak(*args):
            """rnx job list ARGS: its jobs and its peak memory (KiB), through time(1): a child forked
            from this Python keeps its parent's peak across exec."""
            out, hwm = tmp_path / "out.json", tmp_path / "maxrss"
            with open(out, "w") as f:
                p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(hwm), os.path.join(BUILD, "rnx"), "job",
                                    "list", *args], stdout=f, stderr=subprocess.PIPE, text=True, timeout=300,
                                   env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": dm.sock, **asan})
            assert p.returncode == 0, p.stderr
            return json.loads(out.read_text()), int(hwm.read_text().split()[-1])

        # rnx's own size (libraries, a sanitizer's shadow): a listing of none
        none, base = peak("--json", "--status", "RUNNING")
        assert none == []
        for args in (["--json"], ["--json", "--status", "HELD"]):
            jobs, maxrss = peak(*args)
            assert len(jobs) == BIG_JOBS and all(len(x["env"]["BIG"]) == BIG_ENV for x in jobs)
            assert (maxrss - base) * 1024 < answer / 4, \
                f"rnx job list {args}: {maxrss} KiB ({base} KiB listing none) for an answer of {answer} B"
    finally:
        dm.cleanup()


class Endless(StandIn):
    """A stand-in whose answer to every GET is one item that never ends (a string of 'x'),
    up to SENT_MAX bytes, laid out as joblet's (other=False) or not: .sent counts what went."""

    SENT_MAX = 400 << 20

    def __init__(self, path, other):
        self.other, self.sent = other, 0
        super().__init__(None, path)

    def serve(self, c):
        with c:
            head = b""
            while b"\r\n\r\n" not in head:
                b = c.recv(1 << 16)
                if not b:
                    return
                head += b
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                      b"Connection: close\r\n\r\n" % (2 * self.SENT_MAX))
            piece = b"x" * (1 << 20)
            try:
                c.sendall(b'{ "jobs": [{"a": "' if self.other else b'{"jobs":[{"a":"')
                while self.sent < self.SENT_MAX:
                    c.sendall(piece)
                    self.sent += len(piece)
            except OSError:
                pass


@pytest.mark.parametrize("other", [False, True])
def test_an_endless_item_is_refused_at_the_answer_bound(tmp_path, other):
    """One item of a listing (or, of another layout, the whole answer) rnx holds at most 256 MB
    of, as it held any answer: a server whose item never ends is refused there, naming the bound,
    not read on until rnx has taken all the machine's memory."""
    os.chmod(tmp_path, 0o755)
    r = Endless(str(tmp_path / "endless.sock"), other)
    try:
        p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "list", "--json"], capture_output=True, text=True,
                           timeout=300, env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": r.path})
        assert p.returncode == 1, (p.returncode, p.stderr)
        assert "larger than 256 MB" in p.stderr, p.stderr
        assert r.sent < Endless.SENT_MAX, r.sent
    finally:
        r.close()


class Fixed(StandIn):
    """A stand-in whose answer to every GET is BODY, laid out as joblet's."""

    def __init__(self, path, body):
        self.body = body
        super().__init__(None, path)

    def serve(self, c):
        with c:
            head = b""
            while b"\r\n\r\n" not in head:
                b = c.recv(1 << 16)
                if not b:
                    return
                head += b
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                      b"Connection: close\r\n\r\n%s" % (len(self.body), self.body))


@pytest.mark.parametrize("item", [b'{"id" "x"}', b'{"a":1]', b'{"id":tru}', b'{"a":[1,]}', b'{"a":"\x01"}',
                                  b'{"a":"\xff\xfe"}', b'{"a":"\xc0\xaf"}', b'{"a":"\xed\xa0\x80"}',
                                  b'{"\xe2\x82":1}'])
def test_json_a_malformed_item_is_not_printed_as_json(tmp_path, item):
    """rnx job list --json prints each job as it came, not parsed: one that is not JSON is not
    printed (it was, laid out as if it were, and rnx exited 0); what came before it is, and rnx
    says why and exits 1, as for an answer cut short."""
    os.chmod(tmp_path, 0o755)
    r = Fixed(str(tmp_path / "bad.sock"), b'{"jobs":[{"id":"y"},' + item + b',{"id":"z"}]}\n')
    try:
        p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "list", "--json"], capture_output=True, text=True,
                           timeout=120, env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": r.path})
        assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
        assert "not JSON" in p.stderr, p.stderr
        assert p.stdout == '[\n  {\n    "id": "y"\n  }', p.stdout
    finally:
        r.close()


def test_json_an_item_nested_deeper_than_jansson_takes_is_not_json(tmp_path):
    """An item nested deeper than jansson parses (2,048 levels; print_json's parse of the whole
    answer refused it) is not JSON to rnx either: laid out as it came, each level of N costs a
    line of 2N spaces, so 3,000 levels (6 KB) were 18 MB printed, 200,000 (400 KB) 80 GB held."""
    os.chmod(tmp_path, 0o755)
    r = Fixed(str(tmp_path / "deep.sock"), b'{"jobs":[{"id":"y"},{"a":' + b"[" * 3000 + b"]" * 3000 + b'}]}\n')
    try:
        p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "list", "--json"], capture_output=True, text=True,
                           timeout=120, env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": r.path})
        assert p.returncode == 1, (p.returncode, len(p.stdout), p.stderr)
        assert "not JSON" in p.stderr, p.stderr
        assert p.stdout == '[\n  {\n    "id": "y"\n  }', p.stdout[:200]
    finally:
        r.close()


def rnx_list_json_maxrss(path, out):
    """rnx job list --json of the stand-in at path into the file out: (exit code, stderr, its
    peak memory in bytes, as wait4 says: it counts this process's at the fork too, so it is
    compared with another run's made the same way)."""
    with open(out, "wb") as f:
        p = subprocess.Popen([os.path.join(BUILD, "rnx"), "job", "list", "--json"], stdout=f,
                             stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": path})
        err = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = 0   # (reaped here)
    return os.waitstatus_to_exitcode(status), err, ru.ru_maxrss * 1024


def test_json_one_item_laid_out_large_is_written_as_it_is_laid_out(tmp_path):
    """One job laid out takes up to 1 + 2 x depth bytes for each byte sent (a ',' at depth 2,000 is
    a line of 4,000 spaces): rnx writes an item's layout as it makes it, not after holding the
    whole of it (an item of 100 KB laid out in 208 MB held +165 MB of rnx's memory). Its peak
    memory (wait4's maxrss) is measured against that of a listing of one small job."""
    os.chmod(tmp_path, 0o755)
    depth, zeros = 2000, 50000
    item = b'{"a":' + b"[" * depth + b",".join([b"0"] * zeros) + b"]" * depth + b"}"
    small = Fixed(str(tmp_path / "small.sock"), b'{"jobs":[{"id":"y"}]}\n')
    r = Fixed(str(tmp_path / "wide.sock"), b'{"jobs":[' + item + b']}\n')
    out = tmp_path / "out.json"
    try:
        rc, err, base = rnx_list_json_maxrss(small.path, out)
        assert rc == 0, (rc, err)
        rc, err, peak = rnx_list_json_maxrss(r.path, out)
        size = os.path.getsize(out)
        print(f"\nan item of {len(item)} bytes laid out in {size} bytes; rnx's peak memory {peak >> 20} MiB, "
              f"{base >> 20} MiB for a small listing")
        assert rc == 0, (rc, err)
        assert size > 2 * depth * zeros, size
        with open(out, "rb") as f:
            f.seek(size - 3)
            assert f.read() == b"\n]\n"
        assert peak < base + (32 << 20), (peak, base, size)
    finally:
        out.unlink(missing_ok=True)
        small.close()
        r.close()


def jansson_parses(text):
    """Whether jansson (rnx's and joblet's JSON library; JSON_PARSER_MAX_DEPTH 2,048) parses text."""
    import ctypes
    lib = ctypes.CDLL("libjansson.so.4")
    lib.json_loadb.restype = ctypes.c_void_p
    lib.json_loadb.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
    lib.json_delete.argtypes = [ctypes.c_void_p]
    v = lib.json_loadb(text, len(text), 0, ctypes.create_string_buffer(512))
    # (refcount 1: json_decref is an inline function; json_delete frees it)
    if v:
        lib.json_delete(v)
    return bool(v)


@pytest.mark.parametrize("name", [False, True])
@pytest.mark.parametrize("depth", [2046, 2047, 2048])
def test_json_an_item_as_deep_as_jansson_takes_is_printed_as_jansson_parses_it(tmp_path, depth, name):
    """An item is printed one level in, inside the listing's array: nested 2,048 deep (as deep as
    jansson parses a value) the listing printed was 2,049 deep, and jansson refused rnx's own
    output (exit 0); with --name too, where the item was parsed (as deep as jansson takes it
    alone) to see its name. What rnx prints with exit 0 is what jansson parses; one deeper is
    not JSON."""
    os.chmod(tmp_path, 0o755)
    item = b'{"name":"y","a":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"
    r = Fixed(str(tmp_path / "deep.sock"), b'{"jobs":[{"id":"x","name":"y"},' + item + b']}\n')
    try:
        p = subprocess.run([os.path.join(BUILD, "rnx"), "job", "list", "--json"] + (["--name", "y"] if name else []),
                           capture_output=True, timeout=120, env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": r.path})
        if p.returncode == 0:
            assert jansson_parses(p.stdout), (depth, len(p.stdout), p.stderr)
        else:
            assert p.returncode == 1 and b"not JSON" in p.stderr, (p.returncode, p.stderr)
            assert p.stdout == b'[\n  {\n    "id": "x",\n    "name": "y"\n  }', p.stdout[:200]
        assert p.returncode == (0 if depth < 2048 else 1), (depth, p.returncode, p.stderr)
    finally:
        r.close()
