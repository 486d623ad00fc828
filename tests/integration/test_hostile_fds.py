"""Connections that hold descriptors besides their sockets (a log reader: its job's stdout and
stderr files, 4; a terminal, an exec, a copy, an upload: docs/hardening.md, "descriptors"). joblet
bounded its connections (half its open-file limit) and its running jobs (2 descriptors each, the
rest QUEUED), but what a connection holds besides its socket only by the connections' cap: under
a lowered hard limit, a few ordinary users, each within its 64 connections
(server.max_connections_per_user), could take every descriptor joblet has. The module FAILS on
the code before the connections' files were counted (core/connfds.h)."""
import json
import os
import re
import resource
import socket
import subprocess
import time

from conftest import BUILD, api_as, setpriv, wait_for

USERS = (4401, 4402, 4403, 4405)   # ordinary local users of this module alone, each following its own job
OTHER = 4404                 # another one, who lists its jobs and follows one
CONNECTORS = (4411, 4412, 4413, 4414, 4415)   # users who hold idle connections
NOFILE = 768                 # the hard limit an admin running joblet by hand might have given it

# As a user: up to N log followers of job ID (both streams: 4 files each), each on its own
# connection, as `rnx job log -f` makes one. A follower refused (its answer's status) is closed,
# as rnx closes it; one joblet does not answer within 3 s (its descriptors all taken: the
# connection waits in the listener's backlog) ends the tries. Prints {"held": n, "refused":
# {status: n}, "said": the first refusal's message, "unanswered": n}, then holds the followers
# until its stdin closes.
FOLLOW = r"""
import json, socket, sys
path, job, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
held, refused, said, unanswered = [], {}, "", 0
for i in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(3)
    s.connect(path)
    s.sendall(f"GET /v1/jobs/{job}/logs?follow=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    head = b""
    try:
        while b"\r\n\r\n" not in head:
            got = s.recv(4096)
            if not got:
                break
            head += got
    except OSError:
        unanswered += 1
        s.close()
        break
    status = head.split(b" ", 2)[1].decode() if head.startswith(b"HTTP/") else "closed"
    if status == "200":
        held.append(s)
        continue
    refused[status] = refused.get(status, 0) + 1
    if not said:
        body = head.split(b"\r\n\r\n", 1)[1]
        try:
            while len(body) < 2000:
                got = s.recv(4096)
                if not got:
                    break
                body += got
        except OSError:
            pass
        said = body.decode(errors="replace")[:1500]
    s.close()
print(json.dumps({"held": len(held), "refused": refused, "said": said, "unanswered": unanswered}), flush=True)
sys.stdin.readline()
"""


WAITING = ("QUEUED", "PENDING", "SCHEDULED")


def answered(argv, env):
    """argv run to its end, or given up after 20 s (a request left in the listener's backlog):
    (exit status or "no answer", stdout, stderr)."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=20, env=env)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        return "no answer in 20 s", e.stdout or "", e.stderr or ""


def fds_of(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])          # utime + stime


def test_log_followers_of_a_few_users_leave_joblet_its_descriptors(fresh_daemon):
    """joblet under a hard limit of 768 (connections get 192 of its half, what they hold besides
    their sockets the other 192, a user at most a quarter of that, the last eighth kept for admins
    and users who hold at most 8). Four ordinary users one after another each open 64 log
    followers of a job of their own (4 files each besides the connection; within
    server.max_connections_per_user). Before the count: the followers took every descriptor joblet
    had (768 of 768, with 150 followers; "Error accepting connection: Too many open files" in its
    log): another user's `rnx job list`, root's `rnx job run --follow` and root's own requests (the
    scheduled job's state) went unanswered for 20 s, left in the listener's backlog; joblet's CPU
    stayed at 0 %. Now the first three hold 12 followers each (48 of the 192 descriptors), their
    13th refused (429, naming the share and the limit); the fourth holds 6, up to the last 24, and
    is refused there (503: kept; before the reserve it held 12 too, and then nothing was left for
    root's followed run nor a fifth user's follower: 503), and the others are served: a fifth
    user's list and two followers of its own (its third refused, 503), root's followed run, the
    scheduled job's launch."""
    d = fresh_daemon(start=False)
    d.preexec = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))
    d.start()
    pid = d.proc.pid
    idle = fds_of(pid)
    jobs = {}
    for u in USERS:
        st, job = api_as(d, u, "POST", "/v1/jobs", {"command": "sleep", "args": ["1000"]})
        assert st == 201, job
        jobs[u] = job["id"]
    wait_for(lambda: all(d.job(j)["status"] == "RUNNING" for j in jobs.values()), "the users' jobs run")
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 6))
    st, scheduled = d.api("POST", "/v1/jobs", {"command": "sh", "args": ["-c", "echo ran"], "schedule_at": at})
    assert st == 201, scheduled
    holders, seen = [], []
    try:
        for u in USERS:
            h = subprocess.Popen([*setpriv(u), "/usr/bin/python3", "-c", FOLLOW, d.sock, jobs[u], "64"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                 env={"PATH": "/usr/bin:/bin"})
            holders.append(h)
            seen.append(json.loads(h.stdout.readline()))
        # a fifth user's followers: two from the reserve (8 descriptors), not a third
        st, job = api_as(d, OTHER, "POST", "/v1/jobs", {"command": "sleep", "args": ["1000"]})
        assert st == 201, job
        jobs[OTHER] = job["id"]
        wait_for(lambda: d.job(jobs[OTHER])["status"] == "RUNNING", "the fifth user's job runs")
        h = subprocess.Popen([*setpriv(OTHER), "/usr/bin/python3", "-c", FOLLOW, d.sock, jobs[OTHER], "3"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin"})
        holders.append(h)
        fifth = json.loads(h.stdout.readline())
        held = fds_of(pid)
        t0, c0 = time.time(), cpu_ticks(pid)
        time.sleep(2)
        cpu = (cpu_ticks(pid) - c0) / os.sysconf("SC_CLK_TCK") / (time.time() - t0)
        # another user's request, root's followed run, the scheduled job: while the followers hold
        # (each waited for 20 s at most: a request past that waits in the listener's backlog)
        listed = answered([*setpriv(OTHER), os.path.join(BUILD, "rnx"), "job", "list"],
                          {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock})
        run = answered([os.path.join(BUILD, "rnx"), "job", "run", "--follow", "sh", "-c", "echo followed"], d.rnx_env())
        launched = None
        deadline = time.time() + 20
        while time.time() < deadline and (launched is None or launched["status"] in WAITING + ("RUNNING",)):
            time.sleep(0.2)
            try:
                launched = d.job(scheduled["id"])
            except OSError as e:
                launched = {"status": f"no answer ({e})"}
    finally:
        for h in holders:
            h.kill()
            h.wait()
    print(f"\nulimit -n {NOFILE}: joblet held {idle} descriptors idle, {held} with the followers; "
          f"the users' followers: {[(s['held'], s['refused'], s['unanswered']) for s in seen]}; "
          f"joblet's CPU meanwhile {cpu:.0%}; another user's list: {listed[0]}; root's run "
          f"--follow: {run[0]} {str(run[1]).strip()!r} {str(run[2]).strip()[:200]!r}; the scheduled "
          f"job {launched['status']} {launched.get('wait_reason', '')!r}; EMFILE in the log: "
          f"{d.log().count('Too many open files')}")
    assert "Too many open files" not in d.log(), re.findall(r".*Too many open files.*", d.log())[:5]
    assert held <= NOFILE - 64, (idle, held)         # the half kept for joblet's own, but for its jobs'
    assert cpu < 0.5, cpu                             # (not spinning on accept's EMFILE)
    for s in seen[:3]:
        assert s["held"] == 12 and not s["unanswered"], seen
        assert s["refused"] and set(s["refused"]) <= {"429"}, seen
        assert "descriptors" in s["said"] and "ulimit -n 768" in s["said"], s["said"]
    assert seen[3]["held"] == 6 and not seen[3]["unanswered"], seen
    assert seen[3]["refused"] and set(seen[3]["refused"]) <= {"503"}, seen
    assert "the last 24 are kept for admins and for users who hold at most 8; uid 4405 holds 24" in seen[3]["said"], \
        seen[3]["said"]
    assert fifth["held"] == 2 and fifth["refused"] == {"503": 1} and not fifth["unanswered"], fifth
    assert listed[0] == 0, listed
    assert run[0] == 0 and run[1] == "followed\n", run
    assert launched["status"] == "COMPLETED", launched
    for j in jobs.values():
        d.rnx("job", "stop", j, check=True)


# As a user: N connections, each asking GET /v1/version and keeping the connection open after its
# answer (HTTP/1.1 keeps it alive); one closed unanswered (joblet shuts a connection past the
# user's share at once, its reason written first), or closed after its answer (libmicrohttpd past
# its limit), is closed. Prints {"held": n, "closed": n, "said": the first refusal}, then holds
# them until its stdin closes.
CONNECT = r"""
import json, socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
held, closed, said = [], 0, ""
for i in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    got = b""
    try:
        s.sendall(b"GET /v1/version HTTP/1.1\r\nHost: x\r\n\r\n")
    except OSError:
        pass          # closed before the request: its answer may be there
    try:
        while b"\r\n\r\n" not in got:
            more = s.recv(4096)
            if not more:
                break
            got += more
    except OSError:
        pass
    if got.startswith(b"HTTP/1.1 200"):
        held.append(s)
        continue
    try:
        while more := s.recv(4096):
            got += more
    except OSError:
        pass
    said = said or got.decode(errors="replace")
    closed += 1
    s.close()
time.sleep(0.5)
for s in list(held):      # still open: nothing to read, no end
    s.setblocking(False)
    try:
        s.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        continue
    except OSError:
        pass
    held.remove(s)
    closed += 1
    s.close()
print(json.dumps({"held": len(held), "closed": closed, "said": said}), flush=True)
sys.stdin.readline()
"""


def test_connections_of_four_users_leave_others_theirs(fresh_daemon):
    """ulimit -n 256: the socket takes 64 connections at once. Before, a user's share was
    server.max_connections_per_user (64) whatever the limit: one user's 64 idle connections took
    every one, and a second user's, a fifth's and root's requests were closed unanswered by
    libmicrohttpd. Now a user holds at most a quarter of them (16), and the last eighth (8) is kept
    for admins and users with at most 2 open: four users hold 16, 16, 16 and 8, a fifth user still
    gets 2 (not a third), and root's `rnx job list` is answered. A connection refused is closed
    before joblet reads from it, its reason written first: 429 past the share, 503 (ask again)
    where the rest is kept; rnx says it (was: "lost the connection (no answer)")."""
    d = fresh_daemon(start=False)
    d.preexec = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    d.start()
    holders, seen = [], []
    try:
        for u in CONNECTORS:
            h = subprocess.Popen([*setpriv(u), "/usr/bin/python3", "-c", CONNECT, d.sock, "20"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                 env={"PATH": "/usr/bin:/bin"})
            holders.append(h)
            seen.append(json.loads(h.stdout.readline()))
        listed = answered([os.path.join(BUILD, "rnx"), "job", "list"], d.rnx_env())
        theirs = answered([*setpriv(CONNECTORS[0]), os.path.join(BUILD, "rnx"), "job", "list"],
                          {"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock})
    finally:
        for h in holders:
            h.kill()
            h.wait()
    print(f"\nulimit -n 256, 20 connections asked by each of 5 users: {seen}; root's list: {listed[0]}")
    assert [s["held"] for s in seen] == [16, 16, 16, 8, 2], seen
    assert listed[0] == 0, listed
    for s in seen[:3]:
        assert s["said"].startswith("HTTP/1.1 429 ") and "16 connections open already to " in s["said"] and \
            "(a quarter of the 64 it takes at once, at most server.max_connections_per_user, 64)" in s["said"], s["said"]
    for s in seen[3:]:
        assert s["said"].startswith("HTTP/1.1 503 ") and "Retry-After: 1" in s["said"] and \
            "the last 8 are kept for admins and for users with at most 2 open there" in s["said"], s["said"]
    assert theirs[0] == 1 and "uid 4411 has 16 connections open already" in theirs[2], theirs


def follow(sock_path, job):
    """A log follower of job's both streams over a connection of the test's own (root's): (the
    socket, its answer's status, the answer's head and the start of its body)."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    s.sendall(f"GET /v1/jobs/{job}/logs?follow=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        got = s.recv(4096)
        assert got, head
        head += got
    status = int(head.split(b" ", 2)[1])
    if status != 200:
        s.settimeout(2)
        try:
            while len(head) < 3000 and (got := s.recv(4096)):
                head += got
        except OSError:
            pass
    return s, status, head.decode(errors="replace")


def test_the_connections_files_are_bounded_for_an_admin_too_and_given_back(fresh_daemon):
    """ulimit -n 256: connections get 64 of joblet's half, what they hold besides their sockets the
    other 64. root (whom no user's share bounds) opens log followers of a running job: 16 hold 64
    descriptors, the 17th is answered busy (503 with Retry-After: nothing done, rnx asks again),
    naming the bound and the limit; meanwhile a job launches. Closed, they give their descriptors
    back (joblet_connection_files 0); so do an exec's stream (4) and a terminal (3) when they end."""
    d = fresh_daemon(start=False)
    d.preexec = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    d.start()
    assert "at most 64 connections at once, and 64 descriptors for what they hold besides" in d.log(), d.log()[-2000:]
    assert d.metric("joblet_max_connection_files") == 64
    sleeper = d.submit("sleep", "1000")
    wait_for(lambda: d.job(sleeper)["status"] == "RUNNING", "the followed job runs")
    held = []
    try:
        for _ in range(16):
            s, status, head = follow(d.sock, sleeper)
            held.append(s)
            assert status == 200, head
        s, status, head = follow(d.sock, sleeper)
        s.close()
        assert status == 503 and "Retry-After: 1" in head, head
        assert "holds 64 of the 64 descriptors it keeps for what connections hold" in head and \
            "ulimit -n 256" in head and "a log follower needs 4" in head, head
        assert d.metric("joblet_connection_files") == 64
        job = d.wait(d.submit("true"), 60)
        assert job["status"] == "COMPLETED", job
        assert len(os.listdir(f"/proc/{d.proc.pid}/fd")) <= 256 - 64
    finally:
        for s in held:
            s.close()
    wait_for(lambda: d.metric("joblet_connection_files") == 0, "the followers' descriptors given back")
    ex = subprocess.Popen([os.path.join(BUILD, "rnx"), "job", "exec", "-i", sleeper, "--", "sh", "-c", "read x"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=d.rnx_env())
    wait_for(lambda: d.metric("joblet_connection_files") == 4, "the exec's stream takes 4")
    ex.communicate(b"\n", timeout=60)
    wait_for(lambda: d.metric("joblet_connection_files") == 0, "the exec's given back")
    term = d.submit("sleep", "1000", tty=True)     # (its command starts once a client attaches)
    a = socket.socket(socket.AF_UNIX)
    a.connect(d.sock)
    a.sendall(f"POST /v1/jobs/{term}/attach?stdin=0 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
              "Upgrade: tcp\r\nContent-Length: 0\r\n\r\n".encode())
    assert a.recv(4096).startswith(b"HTTP/1.1 101"), "the attach is answered 101"
    wait_for(lambda: d.metric("joblet_connection_files") == 3, "the terminal takes 3")
    a.close()
    wait_for(lambda: d.metric("joblet_connection_files") == 0, "the terminal's given back")
    d.rnx("job", "stop", sleeper, term, check=True)
