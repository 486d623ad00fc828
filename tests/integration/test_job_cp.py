"""rnx job cp (issue 26, item 7; docs/cli.md "Copying files", docs/api.md "Copying files"):
files and directories out of a job and into it, through the real daemon and its joblet-copy
helper, as the job's user in the job's own root.

- out of a running job: /work and /tmp (only the job sees its /tmp), byte for byte, symlinks as
  symlinks, into a directory, as a new name, a file onto a file, never a directory onto a file;
- into a running job: a directory lands with the job's user as owner and the job reads it;
- the job's symlinks lead where the job itself could go and no further; a tar from stdin with
  "..", absolute names, device nodes or set-id bits is refused or stripped;
- another user's job is refused; after the job, its /work only; bounded like uploads;
- a 1 GB directory out of a running job is byte-identical and the daemon's RSS stays bounded.

Every probe is harmless if isolation failed: the files it tries to reach are the test's own
scratch files, and the test checks they were not touched."""
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import threading
import time

import pytest

from conftest import BUILD, Daemon, need_root, need_setpriv, rnx_as

MB = 1 << 20
ALICE, BOB = (4351, 4351), (4352, 4352)


@pytest.fixture(scope="module")
def d():
    need_root()
    need_setpriv()
    dm = Daemon("jobs:\n  max_upload_bytes: 8MB\n").start()
    yield dm
    dm.cleanup()


@pytest.fixture
def tmp():
    t = tempfile.mkdtemp(prefix="joblet-cp-")
    os.chmod(t, 0o755)
    yield t
    shutil.rmtree(t, ignore_errors=True)


def start(d, script, user=None):
    """A job running script (sh -c), RUNNING once its marker file exists."""
    args = ["--json", "job", "run", "sh", "-c", script + " && touch /tmp/.ready && exec sleep 300"]
    p = d.rnx(*args, check=True) if user is None else rnx_as(d, user, *args, text=False)
    assert p.returncode == 0, p.stderr
    jid = json.loads(p.stdout)["id"]
    d.wait_status(jid, "RUNNING")
    deadline = time.time() + 240   # (a gigabyte written on a loaded machine took over a minute)
    while time.time() < deadline:
        code, _ = d.api("GET", f"/v1/jobs/{jid}/archive?path=/tmp/.ready&stat=1")
        if code == 200:
            return jid
        time.sleep(0.2)
    raise AssertionError(f"job {jid} did not get ready: {d.job(jid)}")


def cp(d, *args):
    return d.rnx("job", "cp", *args)


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def rnx_bin(d, *args, input=b""):
    """rnx with bytes on stdin (a tar)."""
    env = {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    p = subprocess.run([os.path.join(BUILD, "rnx"), *args], input=input, capture_output=True, timeout=60, env=env)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


@pytest.fixture(scope="module")
def tree(d):
    """A running job with a tree in /work and a file in /tmp."""
    jid = start(d, "mkdir -p /work/out/sub /tmp/t && printf hi > /work/out/a.txt && "
                   "head -c 3000001 /dev/urandom > /work/out/sub/big && ln -s /etc/shadow /work/out/link && "
                   "chmod 0751 /work/out/sub && printf only-here > /tmp/t/x && "
                   "sha256sum /work/out/sub/big | cut -c1-64 > /work/out/big.sum")
    yield jid
    d.rnx("job", "kill", jid)


def test_copies_a_directory_out_of_a_running_job(d, tree, tmp):
    p = cp(d, f"{tree}:/work/out", tmp)
    assert p.returncode == 0, p.stderr
    assert f"copied {tree}:/work/out to {tmp}/out (3 files" in p.stderr
    out = os.path.join(tmp, "out")
    assert open(os.path.join(out, "a.txt")).read() == "hi"
    assert sha(os.path.join(out, "sub", "big")) == open(os.path.join(out, "big.sum")).read().strip()
    assert os.path.getsize(os.path.join(out, "sub", "big")) == 3000001
    # a symlink is copied as the symlink it is, never as what it points at on either side
    assert os.path.islink(os.path.join(out, "link")) and os.readlink(os.path.join(out, "link")) == "/etc/shadow"
    assert oct(os.stat(os.path.join(out, "sub")).st_mode & 0o777) == "0o751"
    # a new name, and a file onto a file
    p = cp(d, f"{tree}:/work/out", os.path.join(tmp, "renamed"))
    assert p.returncode == 0, p.stderr
    assert open(os.path.join(tmp, "renamed", "a.txt")).read() == "hi"
    open(os.path.join(tmp, "f"), "w").write("old")
    assert cp(d, f"{tree}:/work/out/a.txt", os.path.join(tmp, "f")).returncode == 0
    assert open(os.path.join(tmp, "f")).read() == "hi"
    # a directory never replaces a file
    p = cp(d, f"{tree}:/work/out", os.path.join(tmp, "f"))
    assert p.returncode == 1 and "is not a directory: a directory cannot replace it" in p.stderr, p.stderr
    assert open(os.path.join(tmp, "f")).read() == "hi"
    # a destination whose parent does not exist
    p = cp(d, f"{tree}:/work/out/a.txt", os.path.join(tmp, "no", "such"))
    assert p.returncode == 1 and "no such directory" in p.stderr, p.stderr


def test_copies_what_only_the_job_sees(d, tree, tmp):
    """/tmp is the job's own tmpfs: the copy reads the job's view, not the host's /tmp."""
    assert not os.path.exists("/tmp/t/x") or open("/tmp/t/x").read() != "only-here"
    p = cp(d, f"{tree}:/tmp/t/x", os.path.join(tmp, "x"))
    assert p.returncode == 0, p.stderr
    assert open(os.path.join(tmp, "x")).read() == "only-here"
    # to stdout as a tar
    p = subprocess.run([os.path.join(BUILD, "rnx"), "--socket", d.sock, "job", "cp", f"{tree}:/tmp/t", "-"],
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    with tarfile.open(fileobj=io.BytesIO(p.stdout)) as t:
        assert sorted(t.getnames()) == ["t", "t/x"]
        assert t.extractfile("t/x").read() == b"only-here"


def test_refusals_name_the_path(d, tree, tmp):
    p = cp(d, f"{tree}:/work/nope", tmp)
    assert p.returncode == 1 and "/work/nope: No such file or directory" in p.stderr, p.stderr
    p = cp(d, f"{tree}:work/out", tmp)
    assert p.returncode == 2 and "not an absolute path in the job" in p.stderr, p.stderr
    p = cp(d, "a", "b")
    assert p.returncode == 2 and "exactly one of" in p.stderr
    code, ans = d.api("GET", f"/v1/jobs/{tree}/archive?path=rel")
    assert code == 400 and ans["error"]["field"] == "path", ans
    code, ans = d.api("GET", f"/v1/jobs/{tree}/archive")
    assert code == 400 and ans["error"]["field"] == "path", ans
    code, ans = d.api("GET", f"/v1/jobs/{tree}/archive?path=/work/out/a.txt&stat=1")
    assert code == 200 and ans["type"] == "file" and ans["bytes"] == 2 and ans["name"] == "a.txt", ans


def test_a_body_that_comes_after_the_helper_refused_gets_the_refusal(d, tree):
    """PUT into a file (400) or a missing path (404): the copy's helper refuses it and ends at once.
    A body that came after it ended met a closed pipe: its bytes were handed back to
    libmicrohttpd, which waited for more before it asked again, and none came: no answer until the
    idle timeout closed the connection (CI: test_docs_api's PUT, RemoteDisconnected after 30 s)."""
    for path, code in (("/work/out/a.txt", 400), ("/work/nothere", 404)):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(20)
        s.connect(d.sock)
        try:
            s.sendall(f"PUT /v1/jobs/{tree}/archive?path={path} HTTP/1.1\r\nHost: joblet\r\n"
                      "Content-Type: application/x-tar\r\nContent-Length: 1024\r\n\r\n".encode())
            deadline = time.time() + 20  # the body follows once the helper has ended
            while time.time() < deadline and subprocess.run(["pgrep", "-P", str(d.proc.pid), "-f", "joblet-copy"],
                                                            capture_output=True).returncode == 0:
                time.sleep(0.05)
            time.sleep(0.2)
            s.sendall(b"\0" * 1024)
            head = s.recv(4096).split(b"\r\n", 1)[0]
            assert head.startswith(f"HTTP/1.1 {code} ".encode()), (path, head)
        finally:
            s.close()


def test_the_jobs_rights_hold(d, tree, tmp):
    """The helper reads as the job's user: the host's /etc/shadow (the job's root is the host's,
    read-only) is refused even through a symlink the job made, and nothing of it arrives."""
    p = cp(d, f"{tree}:/etc/shadow", os.path.join(tmp, "s"))
    assert p.returncode == 1 and "ermission denied" in p.stderr, p.stderr
    assert not os.path.exists(os.path.join(tmp, "s"))
    p = cp(d, "-L", f"{tree}:/work/out/link", os.path.join(tmp, "s"))
    assert p.returncode == 1 and "ermission denied" in p.stderr, p.stderr
    assert not os.path.exists(os.path.join(tmp, "s"))


def test_copies_a_directory_into_a_running_job(d, tree, tmp):
    src = os.path.join(tmp, "in")
    os.makedirs(os.path.join(src, "deep"))
    open(os.path.join(src, "deep", "f.bin"), "wb").write(os.urandom(200000))
    os.symlink("deep/f.bin", os.path.join(src, "alias"))
    os.chmod(os.path.join(src, "deep", "f.bin"), 0o640)
    want = sha(os.path.join(src, "deep", "f.bin"))
    p = cp(d, src, f"{tree}:/tmp")
    assert p.returncode == 0, p.stderr
    assert f"to {tree}:/tmp/in (4 entries" in p.stderr, p.stderr
    p = cp(d, os.path.join(src, "deep", "f.bin"), f"{tree}:/tmp//")  # (said as /tmp/f.bin, not /tmp///f.bin)
    assert p.returncode == 0 and f"copied {src}/deep/f.bin to {tree}:/tmp/f.bin (1 entry" in p.stderr, p.stderr
    p = cp(d, src, f"{tree}:/work/newname")
    assert p.returncode == 0, p.stderr
    # read back through the job itself: its user owns them, the bytes and modes arrived
    job = json.loads(d.rnx("--json", "job", "status", tree, check=True).stdout)
    back = os.path.join(tmp, "back")
    assert cp(d, f"{tree}:/tmp/in", back).returncode == 0
    assert sha(os.path.join(back, "deep", "f.bin")) == want
    assert os.readlink(os.path.join(back, "alias")) == "deep/f.bin"
    assert oct(os.stat(os.path.join(back, "deep", "f.bin")).st_mode & 0o777) == "0o640"
    code, ans = d.api("GET", f"/v1/jobs/{tree}/archive?path=/work/newname/deep&stat=1")
    assert code == 200 and ans["type"] == "dir", ans
    # into a directory that does not exist
    p = cp(d, src, f"{tree}:/tmp/no/such/place")
    assert p.returncode == 1 and "No such file or directory" in p.stderr, p.stderr
    assert job["uid"] != 0


def test_hostile_archives_stay_inside(d, tree, tmp):
    """A tar from stdin is extracted by the job's user under the directory named, never above it:
    "..", absolute names and device nodes are refused, set-id bits are dropped."""
    canary = os.path.join(tmp, "canary")

    def tar_of(*members):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
            for name, kind, data, mode in members:
                ti = tarfile.TarInfo(name)
                ti.type, ti.mode = kind, mode
                if kind == tarfile.REGTYPE:
                    ti.size = len(data)
                    t.addfile(ti, io.BytesIO(data))
                else:
                    if kind == tarfile.CHRTYPE:
                        ti.devmajor, ti.devminor = 1, 3
                    t.addfile(ti)
        return buf.getvalue()

    for members, want in [
        ([("../../../../../.." + canary, tarfile.REGTYPE, b"x", 0o644)], ".."),
        ([(canary, tarfile.REGTYPE, b"x", 0o644)], "bsolute"),
        ([("null", tarfile.CHRTYPE, b"", 0o666)], "only files, directories and symlinks"),
    ]:
        rc, _, err = rnx_bin(d, "job", "cp", "-", f"{tree}:/tmp", input=tar_of(*members))
        assert rc == 1 and want in err, (members, err)
        assert not os.path.exists(canary)
    rc, _, err = rnx_bin(d, "job", "cp", "-", f"{tree}:/tmp", input=tar_of(("suid", tarfile.REGTYPE, b"#!/bin/sh\n",
                                                                             0o6755)))
    assert rc == 0, err
    code, ans = d.api("GET", f"/v1/jobs/{tree}/archive?path=/tmp/suid&stat=1")
    assert code == 200 and ans["mode"] == "0755", ans
    # a symlink the job made that leads out of its writable places: the write fails, as the
    # job's own would (its /etc is the host's, read-only), and the host's /etc is untouched
    jid = start(d, "ln -s /etc /tmp/etc-link")
    open(os.path.join(tmp, "joblet-cp-probe"), "w").write("x")
    p = cp(d, os.path.join(tmp, "joblet-cp-probe"), f"{jid}:/tmp/etc-link/")
    assert p.returncode == 1, p.stderr
    assert not os.path.exists("/etc/joblet-cp-probe")
    d.rnx("job", "kill", jid)


def test_another_users_job_is_refused(d, tmp):
    jid = start(d, "printf secret > /work/s", user=ALICE)
    p = rnx_as(d, BOB, "job", "cp", f"{jid}:/work/s", "/dev/null", text=False)
    assert p.returncode == 1 and b"another user's job" in p.stderr, p.stderr
    p = rnx_as(d, BOB, "job", "cp", "/etc/hostname", f"{jid}:/work", text=False)
    assert p.returncode == 1 and b"another user's job" in p.stderr, p.stderr
    p = rnx_as(d, ALICE, "job", "cp", f"{jid}:/work/s", "-", text=False)
    assert p.returncode == 0 and b"secret" in p.stdout, p.stderr
    d.rnx("job", "kill", jid)


def test_after_the_job_only_its_work(d, tmp):
    p = d.rnx("--json", "job", "run", "sh", "-c", "mkdir -p /work/res /tmp/gone && printf done > /work/res/r",
              check=True)
    jid = json.loads(p.stdout)["id"]
    assert d.wait(jid)["status"] == "COMPLETED"
    p = cp(d, f"{jid}:/work/res", tmp)
    assert p.returncode == 0, p.stderr
    assert open(os.path.join(tmp, "res", "r")).read() == "done"
    p = cp(d, f"{jid}:/tmp/gone", tmp)
    assert p.returncode == 1 and "has ended and its root went with it: only its /work can be copied" in p.stderr
    # the work stays writable for its owner (results added later, as docker cp into a stopped container)
    p = cp(d, os.path.join(tmp, "res", "r"), f"{jid}:/work/res/r2")
    assert p.returncode == 0, p.stderr
    assert cp(d, f"{jid}:/work/res/r2", os.path.join(tmp, "r2")).returncode == 0
    # a queued job has nothing yet
    later = json.loads(d.rnx("--json", "job", "run", "--schedule=1h", "true", check=True).stdout)["id"]
    code, ans = d.api("GET", f"/v1/jobs/{later}/archive?path=/work")
    assert code == 409 and "has not started" in ans["error"]["message"], ans


def test_copies_in_are_bounded_like_uploads(d, tree, tmp):
    big = os.path.join(tmp, "big")
    with open(big, "wb") as f:
        f.write(os.urandom(9 * MB))
    p = cp(d, big, f"{tree}:/tmp")
    assert p.returncode == 1 and "joblet takes at most 8388608 into a job (jobs.max_upload_bytes)" in p.stderr, \
        p.stderr
    # past rnx's own check (a tar on stdin): the helper counts, and joblet answers 413's sibling
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        t.add(big, arcname="big")
    rc, _, err = rnx_bin(d, "job", "cp", "-", f"{tree}:/tmp", input=buf.getvalue())
    assert rc == 1 and "the files hold more than 8388608 bytes (jobs.max_upload_bytes)" in err, err
    code, ans = d.api("GET", f"/v1/jobs/{tree}/archive?path=/tmp/big&stat=1")
    assert code == 404, ans


def test_progress_on_a_terminal(d, tree, tmp):
    if not shutil.which("script"):
        pytest.skip("needs script (bsdutils) for a terminal")
    out = os.path.join(tmp, "typescript")
    cmd = f"{os.path.join(BUILD, 'rnx')} --socket {d.sock} job cp {tree}:/work/out {tmp}/p"
    p = subprocess.run(["script", "-qec", cmd, out], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    seen = open(out, "rb").read().decode(errors="replace")
    assert "/work/out: " in seen and "(100%)" in seen and "MB/s" in seen or "kB/s" in seen, seen


def vm(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def test_a_gigabyte_out_of_a_running_job(fresh_daemon, tmp):
    """1 GB in 16 files through the pipe, the socket and rnx's extraction: byte-identical, and the
    daemon holds a pipe's and a response buffer's worth of it (its peak RSS grows by far less than
    what went through)."""
    env = {"ASAN_OPTIONS": os.environ["ASAN_OPTIONS"] + ":quarantine_size_mb=0"} if "ASAN_OPTIONS" in os.environ \
        else None
    dm = fresh_daemon("jobs:\n  work_quota: 4GB\n", env=env)
    jid = start(dm, "mkdir -p /work/g && for i in $(seq 1 16); do head -c 67108864 /dev/urandom > /work/g/f$i; done "
                    "&& cd /work/g && sha256sum f* > /work/sums")
    pid = int(dm.api("GET", "/v1/version")[1]["pid"])
    before = vm(pid, "VmRSS")
    peak = [before]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], vm(pid, "VmRSS"))
            time.sleep(0.05)
    t = threading.Thread(target=sample)
    t.start()
    try:
        p = dm.rnx("job", "cp", f"{jid}:/work/g", tmp, timeout=600)
    finally:
        stop.set()
        t.join()
    assert p.returncode == 0, p.stderr
    assert "(16 files, 1.00 GB)" in p.stderr, p.stderr
    assert dm.rnx("job", "cp", f"{jid}:/work/sums", os.path.join(tmp, "sums")).returncode == 0
    for line in open(os.path.join(tmp, "sums")):
        want, name = line.split()
        assert sha(os.path.join(tmp, "g", name)) == want, name
    grew = peak[0] - before
    print(f"daemon RSS {before / MB:.1f} MB before, {peak[0] / MB:.1f} MB at most during the copy of 1 GB")
    assert grew < 48 * MB, f"the daemon's RSS grew by {grew / MB:.1f} MB during the copy"
    dm.rnx("job", "kill", jid)


@pytest.mark.skipif(shutil.which("runsc") is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")
def test_gvisor_job_its_work_while_it_runs(d, tmp):
    """A gVisor job's root lives inside its sandbox: its /work (a host directory the sandbox
    shares) is copied while it runs, and anything else is refused with the reason."""
    p = d.rnx("--json", "job", "run", "--isolation=gvisor", "sh", "-c",
              "mkdir -p /work/gv && printf sandboxed > /work/gv/f && touch /work/.ready && exec sleep 300",
              check=True)
    jid = json.loads(p.stdout)["id"]
    assert d.wait_status(jid, "RUNNING", timeout=60)["isolation"] == "gvisor"
    deadline = time.time() + 60
    while d.api("GET", f"/v1/jobs/{jid}/archive?path=/work/.ready&stat=1")[0] != 200:
        assert time.time() < deadline, d.job(jid)
        time.sleep(0.2)
    p = cp(d, f"{jid}:/work/gv", tmp)
    assert p.returncode == 0, p.stderr
    assert open(os.path.join(tmp, "gv", "f")).read() == "sandboxed"
    p = cp(d, os.path.join(tmp, "gv", "f"), f"{jid}:/work/gv/g")
    assert p.returncode == 0, p.stderr
    p = cp(d, f"{jid}:/tmp", tmp)
    assert p.returncode == 1 and "runs in gVisor, whose root lives inside its sandbox" in p.stderr, p.stderr
    d.rnx("job", "kill", jid)


def test_special_files_are_left_out_not_fatal(d, tmp):
    """A FIFO in the job is never opened (the copy would hang) and is not written here: it is
    left out with a word on stderr, and the rest arrives."""
    jid = start(d, "mkdir -p /work/sp && mkfifo /work/sp/fifo && printf ok > /work/sp/f")
    p = cp(d, f"{jid}:/work/sp", tmp)
    assert p.returncode == 0, p.stderr
    assert "sp/fifo: not a file, directory or symlink; left out" in p.stderr, p.stderr
    assert open(os.path.join(tmp, "sp", "f")).read() == "ok"
    assert not os.path.exists(os.path.join(tmp, "sp", "fifo"))
    d.rnx("job", "kill", jid)


def test_the_whole_work_after_the_job(d, tmp):
    """ID:/work itself once the job ended: the helper is chrooted there, so /work is its "/";
    the copy is named work/ with everything below it, as a running job's would be."""
    p = d.rnx("--json", "job", "run", "sh", "-c", "mkdir -p /work/a/b && printf 1 > /work/a/b/c && printf 2 > /work/top",
              check=True)
    jid = json.loads(p.stdout)["id"]
    assert d.wait(jid)["status"] == "COMPLETED"
    p = cp(d, f"{jid}:/work", tmp)
    assert p.returncode == 0, p.stderr
    assert open(os.path.join(tmp, "work", "a", "b", "c")).read() == "1"
    assert open(os.path.join(tmp, "work", "top")).read() == "2"
    p = cp(d, f"{jid}:/work/", os.path.join(tmp, "again"))
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(os.path.join(tmp, "again"))) == ["a", "top"]


def test_a_task_is_named_by_its_arrays_number_as_everywhere(d, tmp):
    """rnx job cp names a job as every command does: Slurm's 42_0 (task 0 of the array numbered 42)
    into the task (the upload's request is resolved before its body is read) and out of it; an
    array itself is no job to copy into."""
    code, a = d.api("POST", "/v1/jobs", {"command": "sh", "array": "0-1%1",
                                         "args": ["-c", "touch /tmp/.ready && exec sleep 300"]})
    assert code == 201, a
    task = f"{a['number']}_0"
    d.wait_status(task, "RUNNING")
    deadline = time.time() + 60
    while d.api("GET", f"/v1/jobs/{task}/archive?path=/tmp/.ready&stat=1")[0] != 200 and time.time() < deadline:
        time.sleep(0.2)
    src = os.path.join(tmp, "in.txt")
    with open(src, "w") as f:
        f.write("by number")
    p = cp(d, src, f"{task}:/tmp/")
    assert p.returncode == 0, p.stderr
    p = cp(d, f"{task}:/tmp/in.txt", os.path.join(tmp, "back.txt"))
    assert p.returncode == 0, p.stderr
    assert open(os.path.join(tmp, "back.txt")).read() == "by number"
    p = cp(d, src, f"{a['number']}:/tmp/")
    assert p.returncode != 0, p.stdout
    d.rnx("job", "kill", a["id"], check=True)


def names(top):
    """Every name below top (bytes, relative), with a symlink's target: what a copy must keep."""
    found = {}
    for root, dirs, files in os.walk(os.fsencode(top)):
        for n in dirs + files:
            full = os.path.join(root, n)
            rel = os.path.relpath(full, os.fsencode(top))
            found[rel] = os.readlink(full) if os.path.islink(full) else None
    return found


def test_a_tar_on_stdout_is_read_by_gnu_tar_without_a_word_and_odd_names_keep_their_bytes(d, tmp):
    """`rnx job cp ID:/work/d - | tar t`, as docs/cli.md shows it: GNU tar lists and extracts the
    stream without a warning (the names are UTF-8, as pax says, with no `hdrcharset` keyword GNU
    tar 1.34 does not know: it warned once per entry); a name that is not UTF-8, and a symlink's
    target, still go out and come back in byte for byte (that entry alone says hdrcharset=BINARY)."""
    jid = start(d, "mkdir -p /work/d/sub /work/odd && printf hi > /work/d/a.txt && printf 2 > /work/d/sub/b && "
                   "ln -s a.txt /work/d/ln && printf 3 > /work/d/café && "
                   "printf 4 > \"/work/d/$(printf 'e\\314\\201')\" && "
                   "printf 5 > /work/d/" + "long" * 40 + " && "
                   "printf 6 > \"/work/odd/$(printf 'bad\\377name')\" && "
                   "ln -s \"$(printf 'to\\376')\" \"/work/odd/$(printf 'ln\\375')\"")
    want = {b"a.txt": None, b"sub": None, b"sub/b": None, b"ln": b"a.txt", "café".encode(): None,
            b"e\xcc\x81": None, b"long" * 40: None}
    rc, out, err = rnx_bin(d, "job", "cp", f"{jid}:/work/d", "-")
    assert rc == 0, err
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
    t = subprocess.run(["tar", "t"], input=out, capture_output=True, env=env)
    assert t.returncode == 0 and t.stderr == b"", t.stderr
    assert len(t.stdout.splitlines()) == len(want) + 1, t.stdout
    gx = os.path.join(tmp, "gx")
    os.mkdir(gx)
    x = subprocess.run(["tar", "x", "-C", gx], input=out, capture_output=True, env=env)
    assert x.returncode == 0 and x.stderr == b"", x.stderr
    assert names(os.path.join(gx, "d")) == want
    if shutil.which("bsdtar"):
        b = subprocess.run(["bsdtar", "tf", "-"], input=out, capture_output=True, env=env)
        assert b.returncode == 0 and b.stderr == b"", b.stderr
    # rnx's own reader keeps the names as they are too (NFD stays NFD)
    p = cp(d, f"{jid}:/work/d", tmp)
    assert p.returncode == 0, p.stderr
    assert names(os.path.join(tmp, "d")) == want

    odd = {b"bad\xffname": None, b"ln\xfd": b"to\xfe"}
    p = cp(d, f"{jid}:/work/odd", tmp)
    assert p.returncode == 0, p.stderr
    assert names(os.path.join(tmp, "odd")) == odd
    assert open(os.path.join(os.fsencode(tmp), b"odd", b"bad\xffname"), "rb").read() == b"6"
    # back in, and out again: the same bytes
    p = cp(d, os.path.join(tmp, "odd"), f"{jid}:/work/back")
    assert p.returncode == 0, p.stderr
    p = cp(d, f"{jid}:/work/back", tmp)
    assert p.returncode == 0, p.stderr
    assert names(os.path.join(tmp, "back")) == odd
    # the stream through stdin, and GNU tar extracting it: the same bytes
    rc, out, err = rnx_bin(d, "job", "cp", f"{jid}:/work/odd", "-")
    assert rc == 0, err
    rc, _, err = rnx_bin(d, "job", "cp", "-", f"{jid}:/tmp/", input=out)
    assert rc == 0, err
    p = cp(d, f"{jid}:/tmp/odd", os.path.join(tmp, "again"))
    assert p.returncode == 0, p.stderr
    assert names(os.path.join(tmp, "again")) == odd
    gx = os.path.join(tmp, "gx-odd")
    os.mkdir(gx)
    x = subprocess.run(["tar", "x", "-C", gx], input=out, capture_output=True, env=env)
    assert x.returncode == 0, x.stderr
    assert names(os.path.join(gx, "odd")) == odd
    d.rnx("job", "kill", jid)


def sanitizer_env():
    """The sanitizer pass's options for a helper run here by hand, without leak checking: chrooted
    into a root with no /proc, LeakSanitizer cannot list the process's threads and fails it."""
    env = {k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}
    if "ASAN_OPTIONS" in env:
        env["ASAN_OPTIONS"] += ":detect_leaks=0"
    return env


def test_the_helper_loads_no_charset_module_from_the_jobs_root(tmp):
    """joblet-copy loads no code once in the job's root (src/exec/copy_main.c): glibc's iconv
    reads its configuration, gconv-modules, on its first use, from the root it runs in, and
    dlopens the modules it names. The helper reads it before it enters the job's root; a
    gconv-modules in the job's root, naming a module the job wrote, is never read. (It was, when
    a copy in set libarchive's hdrcharset option after entering: the job's module ran in the
    helper.) The helper runs here by hand, as joblet runs it once a job has ended: chrooted into
    a directory, as the job's user; its cgroup level is no name (a path), so it enters none."""
    need_root()
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    root = os.path.join(tmp, "root")
    gconv = os.path.join(root, "usr", "lib", "x86_64-linux-gnu", "gconv")
    os.makedirs(gconv)
    os.makedirs(os.path.join(root, "in"))
    os.makedirs(os.path.join(root, "tmp"))
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    os.chown(os.path.join(root, "in"), *ALICE)
    src = os.path.join(tmp, "mod.c")
    with open(src, "w") as f:
        f.write('#include <fcntl.h>\n#include <unistd.h>\n'
                '__attribute__((constructor)) static void mark(void) {\n'
                '    int fd = open("/tmp/module-ran", O_WRONLY | O_CREAT, 0644);\n'
                '    if (fd >= 0) close(fd);\n}\n'
                'int gconv_init(void *s) { (void)s; return 1; }\nint gconv(void) { return 1; }\n')
    c = subprocess.run([cc, "-shared", "-fPIC", "-o", os.path.join(gconv, "JOBS.so"), src],
                       capture_output=True, text=True)
    assert c.returncode == 0, c.stderr
    with open(os.path.join(gconv, "gconv-modules"), "w") as f:
        f.write("module BINARY// INTERNAL JOBS 1\nmodule UTF-8// INTERNAL JOBS 1\n"
                "module INTERNAL ANSI_X3.4-1968// JOBS 1\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        info = tarfile.TarInfo("café")   # UTF-8 in a pax path: libarchive converts it
        info.size = 2
        t.addfile(info, io.BytesIO(b"ok"))
    for mode, stdin in (("in", buf.getvalue()), ("out", b"")):
        status = os.path.join(tmp, "status")   # fd 3: the helper's report
        p = subprocess.run(["sh", "-c", 'exec "$0" "$@" 3>"$STATUS"', os.path.join(BUILD, "joblet-copy"), mode,
                            str(ALICE[0]), str(ALICE[1]), root, "/in", "in", "0", "/no-cgroup"],
                           input=stdin, capture_output=True,
                           env={"PATH": "/usr/bin:/bin", "STATUS": status, **sanitizer_env()}, timeout=60)
        status = open(status).read()
        assert p.returncode == 0 and status.startswith("ok dir") and "done" in status, (mode, status, p.stderr)
        assert not os.path.exists(os.path.join(root, "tmp", "module-ran")), mode
    assert open(os.path.join(root, "in", "café"), "rb").read() == b"ok"
