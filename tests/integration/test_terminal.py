"""Interactive jobs (issue 29): `rnx job run -it` in a real terminal, driven through tmux (a pty of
its own, keys typed, the screen read back), `-i` without `-t` through pipes, the framing of
POST /v1/jobs/{id}/attach (docs/api.md, "Interactive streams") read by a client of the test's own,
and who may attach. Over the unix socket and the TLS listener."""
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import time
import uuid

import pytest

from conftest import BUILD, api_as, need_root, need_setpriv, rnx_as, setpriv, wait_for

TMUX = shutil.which("tmux")
RNX = os.path.join(BUILD, "rnx")
OTHER_UID = 4321
PROMPT = "job$ "


def need_tmux():
    if not TMUX:
        pytest.skip("tmux is not installed (scripts/install-deps.sh installs it)")


class Pane:
    """A tmux server of the test's own (its own -L socket, no configuration), one window running
    bash with a known prompt, of a fixed size."""

    def __init__(self, env, cols=100, rows=30):
        need_tmux()
        self.sock = "joblet-term-" + uuid.uuid4().hex[:8]
        self.env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp", "TERM": "xterm",
                    **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}, **env}
        self.tmux("new-session", "-d", "-s", "t", "-x", str(cols), "-y", str(rows),
                  "PS1='host$ ' bash --norc --noprofile")
        self.tmux("set-option", "-g", "history-limit", "5000")
        self.wait_for(r"host\$\s*$")

    def tmux(self, *args):
        p = subprocess.run([TMUX, "-L", self.sock, "-f", "/dev/null", *args], env=self.env, capture_output=True,
                           text=True, timeout=30)
        assert p.returncode == 0, f"tmux {args}: {p.stderr}"
        return p.stdout

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "t", *keys)

    def line(self, text):
        self.tmux("send-keys", "-t", "t", "-l", text)
        self.keys("Enter")

    def screen(self):
        """The pane's text, its history included, wrapped lines joined, blank lines at the end dropped."""
        return self.tmux("capture-pane", "-p", "-J", "-t", "t", "-S", "-5000").rstrip("\n") + "\n"

    def wait_for(self, pattern, timeout=60, since=0):
        """The first match of pattern (multi-line) in the screen's text after offset since."""
        deadline = time.time() + timeout
        while True:
            text = self.screen()
            m = re.compile(pattern, re.M).search(text, since)
            if m:
                return m
            if time.time() > deadline:
                raise AssertionError(f"/{pattern}/ did not appear on the terminal within {timeout}s:\n{text}")
            time.sleep(0.05)

    def until(self, command, pattern, timeout=60):
        """Types command again and again until its output matches pattern: a resize reaches the
        pane's pty when tmux applies it (it spaces resizes out), then the job's through rnx."""
        deadline = time.time() + timeout
        while True:
            at = self.mark()
            self.line(command)
            try:
                return self.wait_for(pattern, timeout=1, since=at)
            except AssertionError:
                if time.time() > deadline:
                    raise

    def mark(self):
        """Where the screen's text ends now: later waits look after it."""
        return len(self.screen()) - 1

    def resize(self, cols, rows):
        self.tmux("resize-window", "-t", "t", "-x", str(cols), "-y", str(rows))

    def close(self):
        subprocess.run([TMUX, "-L", self.sock, "kill-server"], env=self.env, capture_output=True, timeout=30)


@pytest.fixture
def pane_for():
    made = []

    def make(env, **kw):
        p = Pane(env, **kw)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


def newest_job(d):
    st, body = d.api("GET", "/v1/jobs")
    assert st == 200, body
    return body["jobs"][-1]


def job_runs(job_id, comm):
    """Whether a process named comm runs in the job (its cgroup path names the job)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != comm:
                    continue
            with open(f"/proc/{pid}/cgroup") as f:
                if job_id in f.read():
                    return True
        except OSError:
            continue
    return False


# ---- a client of the framing's own (docs/api.md, "Interactive streams") ------------------------

def attach_request(job_id):
    return (f"POST /v1/jobs/{job_id}/attach HTTP/1.1\r\nHost: joblet\r\nConnection: Upgrade\r\n"
            f"Upgrade: tcp\r\nContent-Length: 0\r\n\r\n").encode()


def read_head(s):
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        if not c:
            break
        head += c
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0
    return status, head


def attach_unix(sock_path, job_id, uid=None):
    """An attach over joblet's socket: (the socket, the status, the head). uid: connected as that
    uid (joblet reads the peer's credentials at connect, its effective uid: the socket is
    connected under that euid, then used as root's)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    if uid is not None:
        os.seteuid(uid)
    try:
        s.connect(sock_path)
    finally:
        if uid is not None:
            os.seteuid(0)
    s.sendall(attach_request(job_id))
    status, head = read_head(s)
    return s, status, head


def frames(s):
    """Every frame until the stream ends: [(channel, payload or exit code)]."""
    buf = b""
    while True:
        c = s.recv(65536)
        if not c:
            break
        buf += c
    out, i = [], 0
    while i + 5 <= len(buf):
        ch, n = struct.unpack(">BI", buf[i:i + 5])
        body = buf[i + 5:i + 5 + n]
        out.append((ch, struct.unpack(">i", body)[0] if ch == 4 else body))
        i += 5 + n
    assert i == len(buf), f"a frame cut short: {buf[i:]!r}"
    return out


def frame(ch, payload=b""):
    return struct.pack(">BI", ch, len(payload)) + payload


def read_until(s, needle):
    """Reads frames until the stdout seen holds needle; the stdout."""
    buf, out = b"", b""
    while needle not in out:
        c = s.recv(65536)
        assert c, f"the stream ended before {needle!r} came: {out!r}"
        buf += c
        while len(buf) >= 5 and len(buf) >= 5 + struct.unpack(">I", buf[1:5])[0]:
            ch, n = struct.unpack(">BI", buf[:5])
            if ch == 1:
                out += buf[5:5 + n]
            buf = buf[5 + n:]
    return out


# ---- a real terminal ---------------------------------------------------------------------------

def test_run_it_sh_in_a_real_terminal(daemon, pane_for, tmp_path):
    """The acceptance of issue 29 through tmux: the prompt appears, tty names a pty, a resize of the
    pane reaches stty size inside, ctrl-c interrupts a sleep without ending rnx, exit 3 is rnx's
    exit code, and the local terminal's settings are the same before and after."""
    need_root()
    pane = pane_for({"JOBLET_SOCKET": daemon.sock}, cols=100, rows=30)
    before, after = tmp_path / "before", tmp_path / "after"
    pane.line(f"stty -a > {before}")
    pane.line(f"{RNX} job run -it -e 'PS1={PROMPT}' sh; echo rc=$?")
    pane.wait_for(r"^job\$\s*$")
    job = newest_job(daemon)
    assert job["status"] == "RUNNING" and job["command"] == "sh", job

    at = pane.mark()
    pane.line("tty")
    # the first pty of a devpts of the job's own (the host's are not even visible)
    pane.wait_for(r"^/dev/pts/0$", since=at)
    at = pane.mark()
    pane.line("stty size")
    pane.wait_for(r"^30 100$", since=at)
    pane.resize(80, 20)
    pane.until("stty size", r"^20 80$")

    at = pane.mark()
    pane.line("sleep 100")
    wait_for(lambda: job_runs(job["id"], "sleep"), "sleep runs in the job")
    pane.keys("C-c")
    pane.wait_for(r"^job\$\s*$", since=at)
    wait_for(lambda: not job_runs(job["id"], "sleep"), "sleep is gone")
    at = pane.mark()
    pane.line("echo alive-$((6*7))")   # rnx and the job's shell are still there
    pane.wait_for(r"^alive-42$", since=at)
    assert daemon.job(job["id"])["status"] == "RUNNING"

    at = pane.mark()
    pane.line("exit 3")
    pane.wait_for(r"^rc=3$", since=at)
    ended = daemon.wait(job["id"])
    assert ended["exit_code"] == 3 and ended["end_reason"] == "exit", ended
    # the terminal as it was: raw mode and the job's size undone
    pane.resize(100, 30)
    pane.until("stty size", r"^30 100$")
    at = pane.mark()
    pane.line(f"stty -a > {after}; echo saved")
    pane.wait_for(r"^saved$", since=at)
    assert before.read_text() == after.read_text()
    # what the terminal showed is the job's log, as any job's output
    out = daemon.output(job["id"])
    assert re.search(r"/dev/pts/\d+\r\n", out) and "alive-42" in out, out


def test_detach_keys_leave_the_job_running(daemon, pane_for):
    need_root()
    pane = pane_for({"JOBLET_SOCKET": daemon.sock})
    pane.line(f"{RNX} job run -it -e 'PS1={PROMPT}' sh; echo rc=$?")
    pane.wait_for(r"^job\$\s*$")
    job = newest_job(daemon)
    at = pane.mark()
    pane.line("echo before-detach")
    pane.wait_for(r"^before-detach$", since=at)
    pane.keys("C-p", "C-q")
    pane.wait_for(r"rnx: detached from job \w+; it goes on", since=at)
    pane.wait_for(r"^rc=0$", since=at)
    assert daemon.job(job["id"])["status"] == "RUNNING"
    daemon.api("POST", f"/v1/jobs/{job['id']}/stop")
    daemon.wait(job["id"])
    # other keys: the job's own ctrl-p goes through; --detach-keys names others
    at = pane.mark()
    pane.line(f"{RNX} job run -it --detach-keys=ctrl-x,x -e 'PS1={PROMPT}' sh; echo rc=$?")
    pane.wait_for(r"^job\$\s*$", since=at)
    job = newest_job(daemon)
    pane.keys("C-p", "C-q")   # not the keys now: the job's shell gets them
    pane.keys("C-x", "x")
    pane.wait_for(r"rnx: detached from job", since=at)
    assert daemon.job(job["id"])["status"] == "RUNNING"
    daemon.api("POST", f"/v1/jobs/{job['id']}/stop")
    daemon.wait(job["id"])


def test_a_signal_to_rnx_restores_the_terminal(daemon, pane_for, tmp_path):
    """rnx killed by SIGTERM (or SIGHUP: the terminal closed) while raw: the terminal's settings are
    put back before it dies of the signal; the job goes on."""
    need_root()
    pane = pane_for({"JOBLET_SOCKET": daemon.sock})
    before, after = tmp_path / "before", tmp_path / "after"
    pane.line(f"stty -a > {before}")
    at = pane.mark()
    pane.line(f"{RNX} job run -it -e 'PS1={PROMPT}' sh; echo rc=$?")
    pane.wait_for(r"^job\$\s*$", since=at)
    job = newest_job(daemon)
    shell = int(pane.tmux("display", "-p", "-t", "t", "#{pane_pid}").strip())
    with open(f"/proc/{shell}/task/{shell}/children") as f:
        rnx = [int(p) for p in f.read().split()]
    assert len(rnx) == 1
    os.kill(rnx[0], signal.SIGTERM)
    pane.wait_for(r"^rc=143$", since=at)
    at = pane.mark()
    pane.line(f"stty -a > {after}; echo saved")
    pane.wait_for(r"^saved$", since=at)
    assert before.read_text() == after.read_text()
    assert daemon.job(job["id"])["status"] == "RUNNING"
    daemon.api("POST", f"/v1/jobs/{job['id']}/stop")
    daemon.wait(job["id"])


# ---- -i without -t -----------------------------------------------------------------------------

def test_an_attach_the_shim_had_not_taken_when_the_job_ended_hears_the_end(daemon):
    """An attach whose connection was in the shim's socket's queue, not taken yet, when the job
    ended (a stop right after the attach; local run 164's test_over_tls, under a whole run's load)
    was closed unanswered: no line, no exit frame. Now the shim takes what waits there before it
    ends, and the client hears the end as any other. Made here by stopping the shim (SIGSTOP) while
    the attach connects and the job is stopped, then letting it go; before, about one round in four
    got nothing."""
    d = daemon
    for _ in range(6):
        code, j = d.api("POST", "/v1/jobs", {"command": "sleep", "args": ["60"], "tty": True})
        assert code == 201, j
        jid = j["id"]
        wait_for(lambda: d.job(jid)["shim_pid"], "its shim runs")
        shim = d.job(jid)["shim_pid"]
        # its terminal's socket made (src/exec/shim.h: SHIM_ATTACH): the shim waits for its first client
        wait_for(lambda: os.path.exists(os.path.join(d.state, "jobs", jid, "attach.sock")), "its terminal's socket")
        time.sleep(0.05)  # (bound, then listening: a moment)
        os.kill(shim, signal.SIGSTOP)
        try:
            s, status, _ = attach_unix(d.sock, jid)
            assert status == 101
            s.sendall(frame(3, struct.pack(">HH", 24, 80)))
            time.sleep(0.3)   # joblet connects to the shim's socket; the shim takes nothing
            assert d.api("POST", f"/v1/jobs/{jid}/stop")[0] == 200
            time.sleep(0.3)
        finally:
            os.kill(shim, signal.SIGCONT)
        s.settimeout(60)
        got = frames(s)
        s.close()
        assert got and got[-1] == (4, 1), got   # the exit frame: 1, as rnx job run --follow says it (was 127)
        assert any(ch == 2 and b"joblet: stopped before its command ran" in b for ch, b in got), got
        d.wait(jid)


def test_i_pipes_stdin_and_keeps_stderr_apart(daemon):
    need_root()
    p = daemon.rnx("job", "run", "-i", "sh", "-c", "cat; echo to-stderr >&2; exit 4", input="hi\n")
    assert p.returncode == 4, p.stderr
    assert p.stdout == "hi\n"
    assert "to-stderr" in p.stderr and "to-stderr" not in p.stdout
    # the end of rnx's stdin is the end of the job's (a close frame): wc counts and ends
    p = daemon.rnx("job", "run", "-i", "wc", "-c", input="x" * (1 << 20))
    assert p.returncode == 0 and p.stdout.strip() == str(1 << 20), (p.stdout, p.stderr)
    # nothing to read: the job's stdin ends at once
    p = daemon.rnx("job", "run", "-i", "cat", input="")
    assert p.returncode == 0 and p.stdout == "", p.stderr


def test_t_needs_a_terminal_for_its_input(daemon):
    need_root()
    p = daemon.rnx("job", "run", "-it", "sh", input="echo hi\n")
    assert p.returncode == 2 and "-t: your input is not a terminal" in p.stderr, p.stderr
    p = daemon.rnx("job", "run", "-it", "--detach-keys=ctrl-1", "sh")
    assert p.returncode == 2 and "--detach-keys: 'ctrl-1' is not a key" in p.stderr, p.stderr


# ---- the framing, the wait for the first attach -------------------------------------------------

def test_the_job_waits_for_its_first_attach_and_nothing_is_lost(daemon):
    """A terminal job's command starts once someone attached (docker run -it's semantics): what it
    writes first reaches the client, after the size it was given."""
    need_root()
    st, job = daemon.api("POST", "/v1/jobs", {"command": "sh", "args": ["-c", "echo early; stty size; read x; "
                                                                        "echo got $x; exit 7"],
                                              "tty": True, "stdin": True})
    assert st == 201, job
    time.sleep(1)
    assert daemon.job(job["id"])["status"] == "QUEUED"   # held for its terminal (jobs.attach_wait_s)
    s, status, _ = attach_unix(daemon.sock, job["id"])
    assert status == 101
    s.sendall(frame(3, struct.pack(">HH", 42, 132)) + frame(0, b"abc\n"))
    got = frames(s)
    out = b"".join(p for ch, p in got if ch == 1)
    # The pty echoes what was typed ahead where the input reached it: before the command's first
    # line, or between any two of its lines. Without that one echo, the output is exactly the job's.
    want = b"early\r\n42 132\r\ngot abc\r\n"
    echo = b"abc\r\n"
    at = [i for i in range(len(out)) if out.startswith(echo, i) and not out[:i].endswith(b"got ")]
    assert any(out[:i] + out[i + len(echo):] == want for i in at), got
    assert got[-1] == (4, 7)
    assert daemon.wait(job["id"])["exit_code"] == 7


def test_a_client_that_does_not_read_never_slows_the_job(daemon):
    """The job's output goes to its log at the job's pace; a client that reads nothing meanwhile
    misses what its queue could not hold, is told so, and still gets the exit frame."""
    need_root()
    size = 50 << 20
    st, job = daemon.api("POST", "/v1/jobs", {"command": "sh", "args": ["-c", f"head -c {size} /dev/zero; echo done"],
                                              "stdin": True})
    assert st == 201, job
    s, status, _ = attach_unix(daemon.sock, job["id"])
    assert status == 101
    s.sendall(frame(5))
    assert daemon.wait(job["id"])["status"] == "COMPLETED"   # with nothing read by the client
    got = frames(s)
    out = sum(len(p) for ch, p in got if ch == 1)
    err = b"".join(p for ch, p in got if ch == 2)
    assert out < size and re.search(rb"\[joblet: \d+ bytes of the job's output were dropped here", err), (out, err)
    assert got[-1] == (4, 0)
    assert os.path.getsize(os.path.join(daemon.state, "jobs", job["id"], "stdout.data")) == size + len("done\n")


def test_detach_then_attach_again_after_joblet_restarted(fresh_daemon):
    """The job's terminal lives in its shim, which outlives joblet: a client detaches (closes),
    joblet is killed and started again, and a new attach reaches the same shell."""
    need_root()
    d = fresh_daemon()
    st, job = d.api("POST", "/v1/jobs", {"command": "sh", "tty": True, "stdin": True})
    assert st == 201, job
    s, status, _ = attach_unix(d.sock, job["id"])
    assert status == 101
    s.sendall(frame(3, struct.pack(">HH", 24, 80)) + frame(0, b"x=kept; echo one-$((1+1))\n"))
    read_until(s, b"one-2")
    s.close()
    d.kill9()
    d.start()
    wait_for(lambda: d.job(job["id"])["status"] == "RUNNING", "joblet took the job back")
    s, status, _ = attach_unix(d.sock, job["id"])
    assert status == 101
    s.sendall(frame(0, b"echo two-$x; exit 5\n"))
    got = frames(s)
    assert b"two-kept" in b"".join(p for ch, p in got if ch == 1), got
    assert got[-1] == (4, 5)
    assert d.wait(job["id"])["exit_code"] == 5


def test_a_terminal_job_nobody_attaches_to_starts_anyway(fresh_daemon):
    need_root()
    d = fresh_daemon("jobs:\n  attach_wait_s: 1\n")
    jid = d.submit("echo", "unattended", tty=True)
    job = d.wait(jid)
    assert job["status"] == "COMPLETED" and "unattended" in d.output(jid), job


def test_attach_refusals(daemon):
    need_root()
    jid = daemon.submit("true")
    daemon.wait(jid)
    s, status, head = attach_unix(daemon.sock, jid)
    assert status == 409 and b"has no terminal" in s.recv(4096), head
    tty_job = daemon.submit("sleep", "60", tty=True)
    c = socket.socket(socket.AF_UNIX)
    c.connect(daemon.sock)
    c.sendall(f"POST /v1/jobs/{tty_job}/attach HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n".encode())
    status, _ = read_head(c)
    assert status == 400   # no Upgrade asked
    c.close()
    st, body = daemon.api("POST", "/v1/jobs", {"command": "true", "tty": "yes"})
    assert st == 400 and body["error"]["field"] == "tty", body
    if any(m["name"] == "gvisor" and m["available"] for m in daemon.api("GET", "/v1/version")[1]["isolation"]["modes"]):
        st, body = daemon.api("POST", "/v1/jobs", {"command": "true", "stdin": True, "isolation": "gvisor"})
        assert st == 400 and body["error"]["field"] == "stdin" and "gVisor" in body["error"]["message"], body
    daemon.api("POST", f"/v1/jobs/{tty_job}/stop")
    daemon.wait(tty_job)


CLIENT = (
    "import socket,sys\n"
    "s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
    "s.sendall(('POST /v1/jobs/%s/attach HTTP/1.1\\r\\nHost: x\\r\\nConnection: Upgrade\\r\\nUpgrade: tcp\\r\\n"
    "Content-Length: 0\\r\\n\\r\\n' % sys.argv[2]).encode())\n"
    "print(s.recv(4096).decode(errors='replace'))\n")


def test_another_user_gets_403_on_attach(daemon):
    need_root()
    need_setpriv()
    jid = daemon.submit("sleep", "60", tty=True, stdin=True)
    try:
        p = subprocess.run([*setpriv(OTHER_UID), "/usr/bin/python3", "-c", CLIENT, daemon.sock, jid],
                           capture_output=True, text=True, timeout=60)
        assert p.stdout.startswith("HTTP/1.1 403"), p.stdout + p.stderr
        assert "another user's" in p.stdout
        # a user's own job: attached, as any owner
        p = rnx_as(daemon, OTHER_UID, "job", "run", "-i", "sh", "-c", "cat; id -u", input="mine\n")
        assert p.returncode == 0 and p.stdout == f"mine\n{OTHER_UID}\n", (p.stdout, p.stderr)
    finally:
        daemon.api("POST", f"/v1/jobs/{jid}/stop")
        daemon.wait(jid)


# ---- re-attaching: rnx job attach, the replay, one typist, the bounds, the records ------------

def read_streams(s, until):
    """Reads frames until until(stdout, stderr) holds (or the stream ends): (stdout, stderr, exit or None)."""
    buf, out, err, code = b"", b"", b"", None
    while not until(out, err):
        c = s.recv(65536)
        if not c:
            break
        buf += c
        while len(buf) >= 5 and len(buf) >= 5 + struct.unpack(">I", buf[1:5])[0]:
            ch, n = struct.unpack(">BI", buf[:5])
            if ch == 1:
                out += buf[5:5 + n]
            elif ch == 2:
                err += buf[5:5 + n]
            elif ch == 4:
                code = struct.unpack(">i", buf[5:9])[0]
            buf = buf[5 + n:]
    return out, err, code


def test_detach_and_attach_again_show_the_same_screen(daemon, pane_for):
    """The acceptance: a shell in a real terminal, some lines, ctrl-p ctrl-q; the screen cleared,
    rnx job attach shows the same lines again (the replay), the keys reach the shell, and rnx
    exits with the job's exit code."""
    need_root()
    pane = pane_for({"JOBLET_SOCKET": daemon.sock})
    pane.line(f"{RNX} job run -it -e 'PS1={PROMPT}' sh; echo rc=$?")
    pane.wait_for(r"^job\$\s*$")
    job = newest_job(daemon)
    start = pane.mark()
    for i in range(1, 4):
        pane.line(f"echo line-$((100+{i}))")
        pane.wait_for(rf"^line-{100 + i}$", since=start)
    pane.wait_for(r"^line-103\njob\$\s*$", since=start)
    before = pane.screen()
    first = before.index("echo line-$((100+1))")
    seen = before[before.rindex("\n", 0, first) + 1:].rstrip()   # from the line typed first to the prompt
    pane.keys("C-p", "C-q")
    pane.wait_for(r"^rc=0$", since=start)
    pane.line("clear")
    pane.wait_for(r"^host\$\s*$")
    at = pane.mark()
    pane.line(f"{RNX} job attach {job['id'][:8]}; echo rc=$?")
    pane.wait_for(r"^job\$\s*$", since=at)
    after = pane.screen()[at:]
    assert seen in after, (seen, after)
    at = pane.mark()
    pane.line("echo typed-$((6*7)); exit 4")
    pane.wait_for(r"^typed-42$", since=at)
    pane.wait_for(r"^rc=4$", since=at)
    assert daemon.wait(job["id"])["exit_code"] == 4


def test_two_attachers_both_watch_the_first_types(daemon):
    """Two people on one shell (its owner, and root, who may attach to any job): both see its
    output, the second is told it watches and who types, its keys go nowhere; once the first
    leaves, the second types (and is told so). Each attach and detach is in the job's events and
    the audit trail, with who."""
    need_root()
    need_setpriv()
    st, job = api_as(daemon, OTHER_UID, "POST", "/v1/jobs", {"command": "sh", "tty": True, "stdin": True})
    assert st == 201, job
    a, status, _ = attach_unix(daemon.sock, job["id"], uid=OTHER_UID)
    assert status == 101
    a.sendall(frame(3, struct.pack(">HH", 24, 80)) + frame(0, b"echo first-$((40+2))\n"))
    read_until(a, b"first-42")
    b, status, _ = attach_unix(daemon.sock, job["id"])
    assert status == 101
    out, err, _ = read_streams(b, lambda o, e: b"types" in e)
    assert b"first-42" in out, out     # the replay: what the shell wrote before b came
    assert re.search(rb"\[joblet: watching; uid %d types; you type once they leave\]" % OTHER_UID, err), err
    b.sendall(frame(0, b"echo second-typed\n"))     # a watcher's keys: dropped
    a.sendall(frame(0, b"echo first-again-$((1+1))\n"))
    read_until(a, b"first-again-2")
    out, _, _ = read_streams(b, lambda o, e: b"first-again-2" in o)
    assert b"first-again-2" in out and b"second-typed" not in out, out
    a.close()                                       # the typist leaves: b types
    out, err, _ = read_streams(b, lambda o, e: b"you type now" in e)
    assert b"[joblet: you type now]" in err, err
    b.sendall(frame(0, b"echo second-$((3+4)); exit 6\n"))
    out, err, code = read_streams(b, lambda o, e: False)
    assert b"second-7" in out and code == 6, (out, err, code)
    b.close()                                       # (it closes on the exit frame, as rnx does)
    ended = daemon.wait(job["id"])
    assert ended["exit_code"] == 6

    def events():
        st, detail = daemon.api("GET", f"/v1/jobs/{job['id']}?detail=1")
        assert st == 200, detail
        return [(e["event"], e["detail"]) for e in detail["detail"]["events"]]
    wait_for(lambda: [e for e, _ in events()].count("detached") == 2, "both detaches recorded")
    events = events()
    assert ("attached", f"by uid {OTHER_UID}, asking to type") in events, events
    assert ("attached", "by uid 0, asking to type") in events, events
    assert ("detached", f"by uid {OTHER_UID}: detached") in events, events
    assert ("detached", "by uid 0: the job ended") in events, events
    st, audit = daemon.api("GET", f"/v1/audit?job={job['id']}")
    assert st == 200, audit
    actions = [r["action"] for r in audit["records"]]
    assert actions.count("attach") == 2 and actions.count("detach") == 2, audit
    p = subprocess.run([RNX, "job", "status", "--detail", job["id"]], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "JOBLET_SOCKET": daemon.sock})
    assert "attached" in p.stdout and "detached" in p.stdout, p.stdout


def test_the_same_person_attaching_again_types_at_once(daemon):
    """The same person attached twice: the newer attach types at once, in the earlier one's
    place (tmux attach -d's habit), and the earlier is told it watches. Before, the first in
    the order of attaching typed: a re-attach right after ctrl-p ctrl-q (through a node's keeper
    over TLS the detach's close can reach the shim after the new attach) watched, and the first
    keys typed went nowhere (CI's test_exec_and_reattach_over_tls lost an `exit 9` so). When
    the newer leaves, the earlier types again."""
    need_root()
    st, job = daemon.api("POST", "/v1/jobs", {"command": "sh", "tty": True, "stdin": True})
    assert st == 201, job
    a, status, _ = attach_unix(daemon.sock, job["id"])
    assert status == 101
    a.sendall(frame(3, struct.pack(">HH", 24, 80)) + frame(0, b"echo first-$((40+2))\n"))
    read_until(a, b"first-42")
    b, status, _ = attach_unix(daemon.sock, job["id"])   # a is still attached: a detach not seen yet
    assert status == 101
    b.sendall(frame(3, struct.pack(">HH", 24, 80)) + frame(0, b"echo second-$((3+4))\n"))
    out, err, _ = read_streams(b, lambda o, e: b"second-7\r\n" in o)
    assert b"second-7" in out and b"watching" not in err, (out, err)
    out, err, _ = read_streams(a, lambda o, e: b"newer attach" in e and b"second-7\r\n" in o)
    assert b"[joblet: watching; a newer attach of uid 0 types]" in err, err
    a.sendall(frame(0, b"echo first-typed\n"))      # the earlier's keys: dropped now
    b.sendall(frame(0, b"echo second-again\n"))
    out, _, _ = read_streams(b, lambda o, e: b"second-again\r\n" in o)
    assert b"first-typed" not in out, out
    b.close()                                       # the newer leaves: the earlier types again
    out, err, _ = read_streams(a, lambda o, e: b"you type now" in e)
    assert b"[joblet: you type now]" in err, err
    a.sendall(frame(0, b"exit 3\n"))
    out, err, code = read_streams(a, lambda o, e: False)
    assert code == 3, (out, err, code)
    a.close()
    assert daemon.wait(job["id"])["exit_code"] == 3


def test_attach_watch_only(daemon):
    """?stdin=0 (rnx job attach --no-stdin): a watcher even when nobody types."""
    need_root()
    st, job = daemon.api("POST", "/v1/jobs", {"command": "sh", "tty": True, "stdin": True})
    assert st == 201, job
    try:
        a, status, _ = attach_unix(daemon.sock, job["id"])
        a.sendall(frame(3, struct.pack(">HH", 24, 80)) + frame(0, b"echo hi-$((2+2))\n"))
        read_until(a, b"hi-4")
        a.close()
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(60)
        s.connect(daemon.sock)
        s.sendall(attach_request(job["id"]).replace(b"/attach ", b"/attach?stdin=0 "))
        status, _ = read_head(s)
        assert status == 101
        out, err, _ = read_streams(s, lambda o, e: b"watching" in e)
        assert b"hi-4" in out and b"[joblet: watching]" in err, (out, err)
        s.close()
    finally:
        daemon.api("POST", f"/v1/jobs/{job['id']}/stop")
        daemon.wait(job["id"])


BOUND_CLIENT = (
    "import json,socket,sys,time\n"
    "def req(body):\n"
    "    s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); b=json.dumps(body).encode()\n"
    "    s.sendall(b'POST /v1/jobs HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\n'\n"
    "              b'Content-Length: %d\\r\\nConnection: close\\r\\n\\r\\n' % len(b) + b)\n"
    "    r=b''\n"
    "    while True:\n"
    "        c=s.recv(65536)\n"
    "        if not c: break\n"
    "        r+=c\n"
    "    return json.loads(r.split(b'\\r\\n\\r\\n',1)[1])['id']\n"
    "def attach(j):\n"
    "    s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
    "    s.sendall(('POST /v1/jobs/%s/attach HTTP/1.1\\r\\nHost: x\\r\\nConnection: Upgrade\\r\\nUpgrade: tcp\\r\\n'\n"
    "               'Content-Length: 0\\r\\n\\r\\n' % j).encode())\n"
    "    h=b''\n"
    "    while b'\\r\\n\\r\\n' not in h: h+=s.recv(1)\n"
    "    st=int(h.split(b' ')[1])\n"
    "    return s, st, (s.recv(4096).decode(errors='replace') if st!=101 else '')\n"
    "jobs=[req({'command':'sleep','args':['600'],'tty':True}) for _ in range(2)]\n"
    "held=[]\n"
    "for j in jobs:\n"
    "    for _ in range(2):\n"
    "        s,st,body=attach(j); held.append(s); print(st, body.replace('\\n',' '), flush=True)\n"
    "print(' '.join(jobs), flush=True)\n")


def test_attach_bounds_per_job_and_per_user(fresh_daemon):
    """jobs.max_attachers on one job (everyone), limits.attach_sessions_per_user across a user's
    jobs (root is not bounded: AUTHZ_UNLIMITED): 429 naming the bound."""
    need_root()
    need_setpriv()
    d = fresh_daemon("jobs:\n  max_attachers: 2\n  attach_wait_s: 0\nlimits:\n  attach_sessions_per_user: 3\n")
    jid = d.submit("sleep", "600", tty=True)
    held = []
    try:
        for _ in range(2):
            s, status, _ = attach_unix(d.sock, jid)
            assert status == 101
            held.append(s)
        s, status, head = attach_unix(d.sock, jid)
        body = s.recv(4096)
        assert status == 429 and b"jobs.max_attachers is 2" in body, (head, body)
        s.close()
        # another user: two attaches to each of two jobs; the fourth is over their 3
        p = subprocess.run([*setpriv(OTHER_UID), "/usr/bin/python3", "-c", BOUND_CLIENT, d.sock], capture_output=True,
                           text=True, timeout=120)
        lines = p.stdout.splitlines()
        assert len(lines) == 5, p.stdout + p.stderr
        assert [ln.split(" ")[0] for ln in lines[:4]] == ["101", "101", "101", "429"], p.stdout
        assert "uid 4321 has 3 terminals attached; limits.attach_sessions_per_user is 3" in lines[3], lines[3]
        for j in lines[4].split():
            d.api("POST", f"/v1/jobs/{j}/stop")
            d.wait(j)
    finally:
        for s in held:
            s.close()
        d.api("POST", f"/v1/jobs/{jid}/stop")
        d.wait(jid)


def idle_attach(fresh_daemon, seconds):
    """A daemon with jobs.terminal_idle_timeout_s at seconds, a terminal job of sh and an attach
    to it, its size sent: (the daemon, the job, the attach's socket)."""
    need_root()
    d = fresh_daemon(f"jobs:\n  terminal_idle_timeout_s: {seconds}\n")
    st, job = d.api("POST", "/v1/jobs", {"command": "sh", "tty": True, "stdin": True})
    assert st == 201, job
    s, status, _ = attach_unix(d.sock, job["id"])
    assert status == 101
    s.sendall(frame(3, struct.pack(">HH", 24, 80)))
    return d, job, s


def test_an_idle_terminal_is_detached(fresh_daemon):
    """jobs.terminal_idle_timeout_s: an attach where nothing moved for that long is closed with a
    note; the job goes on, and the detach is recorded with why."""
    d, job, s = idle_attach(fresh_daemon, 2)
    s.sendall(frame(0, b"echo awake\n"))
    out, err, code = read_streams(s, lambda o, e: False)     # until joblet closes it
    assert b"awake" in out and code is None, (out, err, code)
    assert re.search(rb"\[joblet: nothing typed or written for 2 s: detached \(jobs.terminal_idle_timeout_s\)", err), err
    assert d.job(job["id"])["status"] == "RUNNING"
    s.close()
    wait_for(lambda: ("detached", "by uid 0: idle (jobs.terminal_idle_timeout_s)") in
             [(e["event"], e["detail"]) for e in d.api("GET", f"/v1/jobs/{job['id']}?detail=1")[1]["detail"]["events"]],
             "the idle detach recorded")
    d.api("POST", f"/v1/jobs/{job['id']}/stop")
    d.wait(job["id"])


def test_keys_that_cross_the_idle_note_reach_the_job(fresh_daemon):
    """Keys a client sent before it had joblet's idle note (the two crossed on the wire) are the
    job's: joblet passes them on to the shim until the client closes. They were read and dropped
    as a lingering client's are, so Slurm's relay (srun --pty), which attaches again at once, lost
    what was typed in that gap (test_slurm_plugin's idle detach failed so under load)."""
    d, job, s = idle_attach(fresh_daemon, 1)
    seen = b""
    while b"detached (jobs.terminal_idle_timeout_s)" not in seen:
        c = s.recv(65536)
        assert c, f"the stream ended without the idle note: {seen!r}"
        seen += c
    s.sendall(frame(0, b"echo typed-late > /work/late\n"))   # after the note, before the close
    while s.recv(65536):   # to the stream's end (joblet's shutdown), then closed as a client does
        pass
    s.close()
    late = os.path.join(d.work(job["id"]), "late")
    wait_for(lambda: os.path.exists(late), "the keys typed as the note came reach the job", timeout=30)
    assert d.job(job["id"])["status"] == "RUNNING"
    d.api("POST", f"/v1/jobs/{job['id']}/stop")
    d.wait(job["id"])


def rnx_in_pty(d, *args, timeout=60, type_after=None):
    """rnx with a pseudo-terminal for its stdin, stdout and stderr, read to its exit: (exit code,
    what it wrote). type_after: (bytes seen, keys): the keys typed once rnx wrote those bytes."""
    import pty
    pid, m = pty.fork()
    if pid == 0:
        os.environ["JOBLET_SOCKET"] = d.sock
        os.execv(os.path.join(BUILD, "rnx"), ["rnx", *args])
    out = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            b = os.read(m, 4096)
        except OSError:  # EIO: rnx exited, its pty closed
            break
        if not b:
            break
        out += b
        if type_after and type_after[0] in out:
            os.write(m, type_after[1])
            type_after = None
    os.close(m)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out


def test_rnx_at_an_idle_terminal_says_it_once(fresh_daemon):
    """docs/interactive.md, "Bounds", typed with jobs.terminal_idle_timeout_s: joblet's line says
    what happened. Before, rnx then also said "the connection to joblet ended before job ... did"
    and exited 1, as if it were lost, where ctrl-p ctrl-q (a detach as well) exits 0; and an
    exec's stream was told "detached ...; rnx job attach ID", though its process is killed with
    its stream (there is nothing to attach to). Now an attach exits 0 and an exec 1, each after
    joblet's one line, and an exec's says its process is ended."""
    need_root()
    d = fresh_daemon("jobs:\n  terminal_idle_timeout_s: 2\n")
    st, job = d.api("POST", "/v1/jobs", {"command": "sh", "tty": True, "stdin": True})
    assert st == 201, job
    jid = job["id"]
    try:
        code, out = rnx_in_pty(d, "job", "attach", jid)
        assert b"[joblet: nothing typed or written for 2 s: detached (jobs.terminal_idle_timeout_s)" in out, out
        assert b"connection to joblet ended" not in out and code == 0, (code, out)
        assert d.job(jid)["status"] == "RUNNING"
        code, out = rnx_in_pty(d, "job", "exec", "-it", jid, "sh")
        assert b"[joblet: nothing typed or written for 2 s: the exec's process is ended" in out, out
        assert b"rnx job attach" not in out and b"connection to joblet ended" not in out and code == 1, (code, out)
        assert d.job(jid)["status"] == "RUNNING"
    finally:
        d.api("POST", f"/v1/jobs/{jid}/stop")
        d.wait(jid)


def test_ctrl_c_while_watching_says_the_job_goes_on(fresh_daemon):
    """docs/interactive.md, "Commands and keys": `rnx job run -t` shows the job's terminal without
    sending keys, and `rnx job attach --no-stdin` watches (ctrl-c leaves). Typed: ctrl-c ended
    rnx without a word and the job went on, unseen (a user who saw top's screen stop would think
    it ended). Now rnx says it left, that the job goes on and how to come back or stop it, and
    exits 130 as before."""
    need_root()
    d = fresh_daemon()
    loop = "while :; do echo tick; sleep 0.2; done"
    code, out = rnx_in_pty(d, "job", "run", "-t", "--name=watched", "sh", "-c", loop, type_after=(b"tick", b"\x03"))
    m = re.search(rb"rnx: left job ([0-9a-f]{8}); it goes on \(rnx job attach \1 comes back, rnx job stop \1 ends it\)",
                  out)
    assert code == 130 and m, (code, out)
    st, job = d.api("GET", "/v1/jobs/watched")
    assert st == 200 and job["status"] == "RUNNING", job
    code, out = rnx_in_pty(d, "job", "attach", "--no-stdin", "watched", type_after=(b"tick", b"\x03"))
    assert code == 130 and m.group(0) in out, (code, out)
    d.api("POST", f"/v1/jobs/{job['id']}/stop")
    d.wait(job["id"])


# ---- over the TLS listener ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def remote():
    need_root()
    from test_remote import Remote
    r = Remote()
    yield r
    r.close()


def tls_attach(remote, who, job_id):
    s = remote.ctx(who).wrap_socket(socket.create_connection(("127.0.0.1", remote.port), timeout=60),
                                    server_hostname="localhost")
    s.sendall(attach_request(job_id))
    status, head = read_head(s)
    return s, status


def test_over_tls(remote, pane_for):
    remote.rnx("developer", "job", "list")   # the node's file for rnx --node developer
    # through the node's keeper (src/cli/conn_agent.h), in the Remote's runtime directory, which
    # ends it
    env = remote.keepers.env({"PATH": "/usr/bin:/bin",
                              "RNX_CONFIG": os.path.join(remote.d.dir, "rnx-developer", "nodes.yml"),
                              **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}})
    # -i: stdin in, stdout and stderr apart, the exit code
    p = subprocess.run([RNX, "--node", "developer", "job", "run", "-i", "sh", "-c", "cat; echo e >&2; exit 4"],
                       input=b"over tls\n", env=env, capture_output=True, timeout=120)
    assert p.returncode == 4 and p.stdout == b"over tls\n" and b"e\n" in p.stderr, p
    # -it in a real terminal
    pane = pane_for({k: v for k, v in env.items() if k in ("RNX_CONFIG", "XDG_RUNTIME_DIR") or k.endswith("SAN_OPTIONS")})
    pane.line(f"{RNX} --node developer job run -it -e 'PS1={PROMPT}' sh; echo rc=$?")
    pane.wait_for(r"^job\$\s*$")
    at = pane.mark()
    pane.line("tty; stty size")
    pane.wait_for(r"^/dev/pts/\d+\n30 100$", since=at)
    pane.line("exit 3")
    pane.wait_for(r"^rc=3$", since=at)
    # who may attach: the owner; not a maintainer (who sees every job), not another developer,
    # not a reader (who changes nothing)
    # the job reads a line before it sleeps, so the stop below comes once its command runs (a stop
    # before the command ran ends it 127, "the command was not run": the project's CI of stop 67)
    st, job = remote.api("developer", "POST", "/v1/jobs",
                         {"command": "sh", "args": ["-c", "read x; echo up-$x; exec sleep 60"], "tty": True})
    assert st == 201, job
    try:
        for who, why in (("maintainer", b"attaching to another user's job"), ("other", b"another user's job"),
                         ("reader", b"(a change) is for the roles")):
            s, status = tls_attach(remote, who, job["id"])
            body = s.recv(4096)
            assert status == 403 and why in body, (who, body)
            s.close()
        s, status = tls_attach(remote, "developer", job["id"])
        assert status == 101
        s.sendall(frame(3, struct.pack(">HH", 24, 80)) + frame(0, b"$((6*7))\n"))
        read_until(s, b"up-$((6*7))")
        remote.api("developer", "POST", f"/v1/jobs/{job['id']}/stop")
        got = frames(s)
        assert got[-1] == (4, 143), got   # SIGTERM: 128 + 15
    finally:
        remote.api("developer", "POST", f"/v1/jobs/{job['id']}/stop")


def test_big_output_over_tls_comes_through_intact(remote):
    """4 MiB of random bytes through an attached terminal over TLS (rnx -it, through the node's
    keeper), byte for byte: the sha256 of what rnx printed is the job's own. The job writes 64 KiB
    at a time, at most two ahead of the lines typed back for what came, since a terminal drops
    what a watcher cannot take (docs/interactive.md): what is checked here is the way, not a race
    with the job."""
    import hashlib
    import pty
    import tty
    remote.rnx("developer", "job", "list")   # the node's file for rnx --node developer
    env = remote.keepers.env({"PATH": "/usr/bin:/bin", "TERM": "xterm",
                              "RNX_CONFIG": os.path.join(remote.d.dir, "rnx-developer", "nodes.yml"),
                              **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}})
    chunk, chunks = 64 << 10, 64
    script = (f"stty raw -echo; head -c {chunk * chunks} /dev/urandom > big || exit 9; printf BEGIN; "
              f"dd if=big bs={chunk} count=1 2>/dev/null; i=1; while [ $i -lt {chunks} ]; do "
              f"dd if=big bs={chunk} skip=$i count=1 2>/dev/null; read -r x; i=$((i+1)); done; read -r x; "
              f"printf SHA; sha256sum < big")
    pid, m = pty.fork()
    if pid == 0:
        os.execve(RNX, [RNX, "--node", "developer", "job", "run", "-it", "sh", "-c", script], env)
    tty.setraw(m)
    buf, acked = b"", 0
    try:
        while True:
            try:
                c = os.read(m, 1 << 20)
            except OSError:  # EIO: rnx exited, its pty closed
                c = b""
            if not c:
                break
            buf += c
            start = buf.find(b"BEGIN")
            got = len(buf) - start - 5 if start >= 0 else 0
            while acked < chunks and got >= (acked + 1) * chunk:
                os.write(m, b"\n")
                acked += 1
    finally:
        os.close(m)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, (status, buf[-500:])
    start = buf.find(b"BEGIN")
    assert start >= 0, buf[-500:]
    data = buf[start + 5:start + 5 + chunk * chunks]
    m2 = re.search(rb"SHA([0-9a-f]{64})", buf[start + 5 + chunk * chunks:])
    assert len(data) == chunk * chunks and m2, (len(buf) - start - 5, buf[-500:])
    assert hashlib.sha256(data).hexdigest() == m2.group(1).decode(), "the output changed on its way"
    # and the other way: 4 MiB into -i's stdin (a client that types waits for the job: nothing is
    # dropped), its sha256 out
    data = os.urandom(chunk * chunks)
    p = subprocess.run([RNX, "--node", "developer", "job", "run", "-i", "sha256sum"], input=data, env=env,
                       capture_output=True)
    assert p.returncode == 0 and p.stdout.split()[0].decode() == hashlib.sha256(data).hexdigest(), p


def test_exec_and_reattach_over_tls(remote, pane_for):
    """rnx job exec over the TLS listener, through the node's keeper: the owner's exec sees the
    job's files and gives its exit code, with -i and -it; a reader (who changes nothing), another
    developer and a maintainer (who sees every job) are refused. Detach and re-attach over TLS
    replay the same screen."""
    st, job = remote.api("developer", "POST", "/v1/jobs",
                         {"command": "sh", "args": ["-c", "echo tls-seen > /work/mark; exec sleep 300"]})
    assert st == 201, job
    jid = job["id"]
    try:
        remote.d.wait_status(jid, "RUNNING")
        wait_for(lambda: os.path.exists(os.path.join(remote.d.work(jid), "mark")), "the job's command runs")
        p = remote.rnx("developer", "job", "exec", jid, "sh", "-c", "cat /work/mark; exit 5")
        assert p.returncode == 5 and p.stdout == "tls-seen\n", (p.returncode, p.stdout, p.stderr)
        for who, why in (("reader", "(a change) is for the roles"), ("other", "another user's job"),
                         ("maintainer", "another user's job")):
            p = remote.rnx(who, "job", "exec", jid, "true")
            assert p.returncode != 0 and why in p.stderr, (who, p.stderr)
        env = remote.keepers.env({"PATH": "/usr/bin:/bin",
                                  "RNX_CONFIG": os.path.join(remote.d.dir, "rnx-developer", "nodes.yml"),
                                  **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}})
        p = subprocess.run([RNX, "--node", "developer", "job", "exec", "-i", jid, "sh", "-c", "wc -c; exit 6"],
                           input=b"x" * 100000, env=env, capture_output=True, timeout=120)
        assert p.returncode == 6 and p.stdout.split() == [b"100000"], p
        pane = pane_for({k: v for k, v in env.items() if k in ("RNX_CONFIG", "XDG_RUNTIME_DIR")
                         or k.endswith("SAN_OPTIONS")})
        at = pane.mark()
        pane.line(f"{RNX} --node developer job exec -it -e 'PS1={PROMPT}' {jid} sh; echo rc=$?")
        pane.wait_for(r"^job\$\s*$", since=at)
        pane.line("tty; cat /work/mark; stty size")
        pane.wait_for(r"^/dev/pts/\d+\ntls-seen\n30 100$", since=at)
        pane.line("exit 2")
        pane.wait_for(r"^rc=2$", since=at)
    finally:
        remote.api("developer", "POST", f"/v1/jobs/{jid}/stop")
    # detach and re-attach over TLS: the screen comes back
    st, job = remote.api("developer", "POST", "/v1/jobs", {"command": "sh", "tty": True, "stdin": True,
                                                           "env": {"PS1": "job$ "}})
    assert st == 201, job
    jid = job["id"]
    try:
        at = pane.mark()
        pane.line(f"{RNX} --node developer job attach {jid}; echo rc=$?")
        pane.wait_for(r"^job\$\s*$", since=at)
        pane.line("echo before-$((40+2))")
        pane.wait_for(r"^before-42$", since=at)
        pane.keys("C-p", "C-q")
        pane.wait_for(r"^rc=0$", since=at)
        at = pane.mark()
        pane.line(f"{RNX} --node developer job attach {jid}; echo rc=$?")
        pane.wait_for(r"attach .*\n(.*\n)*job\$ echo before-\$\(\(40\+2\)\)\nbefore-42\n", since=at)
        pane.line("exit 9")
        pane.wait_for(r"^rc=9$", since=at)
    finally:
        remote.api("developer", "POST", f"/v1/jobs/{jid}/stop")


def test_gvisor_refuses_i_naming_stdin_and_the_way_that_works(daemon):
    """docs/interactive.md, "Limits": run -it and attach are not for gVisor jobs, refused naming
    tty or stdin; exec is. Typed: `echo hi | rnx job run -i --isolation=gvisor cat` (no terminal
    asked for) was refused "--interactive: a job under gVisor cannot have a terminal yet (its pty
    would have to be made by runsc)", and no word of rnx job exec, which works there. Now -i is
    told it is the job's stdin that cannot come from rnx, and both name exec."""
    need_root()
    p = daemon.rnx("job", "run", "-i", "--isolation=gvisor", "cat", input="hi\n")
    if "gvisor is not available" in p.stderr:
        pytest.skip(p.stderr)
    assert p.returncode == 1 and p.stderr.startswith(
        "rnx: --interactive: a job under gVisor cannot take its stdin from rnx yet"), p.stderr
    assert "terminal" not in p.stderr.split("(")[0] and "rnx job exec [-it] works" in p.stderr, p.stderr
    code, err = daemon.api("POST", "/v1/jobs", {"command": "sh", "isolation": "gvisor", "tty": True})
    assert code == 400 and err["error"]["field"] == "tty", err
    assert err["error"]["message"].startswith("tty: a job under gVisor cannot have a terminal yet"), err
    assert "rnx job exec [-it] works" in err["error"]["message"], err
