"""Hostile users against rnx job exec, as local users of a machine whose one root joblet serves
everyone (docs/interactive.md, "exec"). Each test failed before its fix:

1. An exec whose client does not read: the joblet-exec helper read the process's output as fast
   as it was written and dropped what the client had no room for. `rnx job exec JOB yes` with its
   output never read made `yes` write gigabytes (300 MB in the first second) and the helper burn
   as much CPU reading and dropping them, outside the job's and its user's CPU cgroups (on a
   hybrid host the helper was in joblet's cpu, cpuacct and cgroup2 cgroups; only its pids were
   counted in its owner's level): no CPU limit of the user's bound it, and the client, once it
   read, was given a note of dropped bytes instead of the output. The process now waits for its
   client, as under `docker exec`: it writes what the client takes plus the buffers between
   them, nothing is dropped while it runs, and the helper's CPU is accounted in its owner's
   level ("<root>/user-UID/shims") in every hierarchy that accounts CPU.

Quantities are compared, not durations: how much the process wrote (/proc/PID/io) and how much
CPU the helper spent against what the client took."""
import os
import subprocess
import time

from conftest import BUILD, need_root, need_setpriv, setpriv, wait_for
from test_exec import env_for, running_job, stop

RNX = os.path.join(BUILD, "rnx")
USER = 4871          # a local user of this module only (setpriv, no account needed)
MIB = 1 << 20


def procs():
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                yield int(pid), open(f"/proc/{pid}/comm").read().strip(), open(f"/proc/{pid}/cgroup").read()
            except OSError:
                pass


def pid_of(comm, jid=None, parent=None):
    for pid, c, cg in procs():
        if c != comm or (jid and jid not in cg):
            continue
        if parent is not None and ppid(pid) != parent:
            continue
        return pid
    return None


def ppid(pid):
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def cpu_s(pid):
    """utime + stime of a process, in seconds."""
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def wchar(pid):
    for line in open(f"/proc/{pid}/io"):
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


def cpu_cgroups_of(pid):
    """A process's cgroups in the hierarchies that account its CPU: v1's cpu and cpuacct, and the
    cgroup2 one (its cpu.stat), as "name: path"."""
    out = []
    for line in open(f"/proc/{pid}/cgroup"):
        _, ctrls, path = line.rstrip("\n").split(":", 2)
        names = ctrls.split(",")
        for name in ("cpu", "cpuacct", ""):
            if name in names:
                out.append(f"{name or 'cgroup2'}: {path}")
    return out


# ---- 1. an exec whose client does not read ------------------------------------------------------

def test_an_unread_exec_waits_for_its_client_and_burns_no_cpu_outside_the_job(fresh_daemon):
    """`rnx job exec JOB yes` whose stdout is a pipe nobody reads (rnx blocks on it, and stops
    reading its socket). Before: yes wrote without end (gigabytes in seconds) and the helper spent
    about as much CPU as yes reading and dropping them, charged to joblet's cgroup, not the job's.
    Now yes writes what the buffers between it and the client hold and waits; the helper spends
    next to nothing; once the client reads, every byte is there, in order, with no note of drops."""
    need_root()
    need_setpriv()
    d = fresh_daemon()
    jid = running_job(d, uid=USER)
    try:
        client = subprocess.Popen([*setpriv(USER), RNX, "job", "exec", jid, "yes", "0123456789abcdef"],
                                  env=env_for(d), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_for(lambda: pid_of("yes", jid) is not None, "the exec'd yes runs")
        yes = pid_of("yes", jid)
        helper = pid_of("joblet-exec", parent=d.proc.pid)
        assert helper, "the exec's helper"
        # what the helper spends is its owner's, in every hierarchy that accounts CPU (before:
        # joblet's own, the hierarchies' roots on a hybrid host)
        level = f"/{d.cgroup_root}/user-{USER}/"
        assert all(level in c for c in cpu_cgroups_of(helper)), cpu_cgroups_of(helper)
        # yes writes as much as it may: unbounded before, what the buffers hold now. Waited
        # for until it wrote 256 MiB or 4 s passed, whichever first
        end = time.time() + 4
        while time.time() < end and wchar(yes) < 256 * MIB:
            time.sleep(0.1)
        written, helper_cpu, yes_cpu = wchar(yes), cpu_s(helper), cpu_s(yes)
        # the buffers: the pipe (64 KiB), the helper's queue (256 KiB), two socket pairs, joblet's
        # 64 KiB, rnx's own and its stdout pipe: a few MiB at most
        assert written < 16 * MIB, f"yes wrote {written} bytes that nobody read"
        # the helper did not read and drop what it wrote (before: about yes's own CPU, seconds)
        assert helper_cpu <= 0.3 + yes_cpu, (helper_cpu, yes_cpu)
        # the client reads now: what yes wrote, whole and in order, no drops said
        client.stdout.read(4 * MIB)
        line = b"0123456789abcdef\n"
        got = client.stdout.read(4 * MIB)
        start = got.index(line)
        body = got[start:start + (len(got) - start) // len(line) * len(line)]
        assert body == line * (len(body) // len(line)), "the output has gaps"
        client.kill()
        client.wait(timeout=60)
        err = client.stderr.read()
        assert b"dropped" not in err, err
    finally:
        stop(d, jid)
