"""joblet's own work above its jobs' (server.cpu_priority, common/cpuprio.h).

The loop thread and the shim zygote run at nice -10 with SCHED_RESET_ON_FORK; everything they
start -- the shims, the jobs' processes, the processes `rnx job exec` puts into a job, the
daemon's other threads -- is at nice 0 without the flag, so that no job, and no user's helper,
runs above another's. With `server.cpu_priority: 0` nothing is raised. Read from /proc and
sched_getscheduler; no timing is asserted (bench/throughput.py measures what it buys)."""
import os

from conftest import Daemon, need_root, wait_for

RESET = os.SCHED_RESET_ON_FORK


def nice_of(tid):
    with open(f"/proc/{tid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])  # field 19: nice


def zygote_of(d):
    out = [int(p) for p in os.listdir("/proc") if p.isdigit() and _cmdline(p) == f"joblet-shim --zygote {d.cgroup_root}"
           and _ppid(p) == d.proc.pid]
    assert len(out) == 1, out
    return out[0]


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


def descendants(pid):
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            kids.setdefault(_ppid(p), []).append(int(p))
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def test_the_loop_and_the_zygote_run_above_everything_they_start(daemon):
    d = daemon
    pid = d.proc.pid
    # the loop thread is the main thread; its reset-on-fork flag is what keeps the rest at 0
    assert nice_of(pid) == -10
    assert os.sched_getscheduler(pid) == os.SCHED_OTHER | RESET
    others = [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
    assert others, "the daemon has its resolver threads"
    assert {nice_of(t) for t in others} == {0}, [(t, nice_of(t)) for t in others]
    zyg = zygote_of(d)
    assert nice_of(zyg) == -10
    assert os.sched_getscheduler(zyg) == os.SCHED_OTHER | RESET

    # a running job: its shim (the zygote's child), its init and its command, all at 0
    jid = d.submit("sh", "-c", "echo nice=$(cut -d' ' -f19 /proc/self/stat); sleep 60")
    d.wait_status(jid, "RUNNING")
    wait_for(lambda: "nice=" in d.rnx("job", "log", "--no-follow", jid).stdout, what="the job's first line")
    assert "nice=0" in d.rnx("job", "log", "--no-follow", jid).stdout
    # the shim leaves the zygote (it outlives joblet); it and the job's init bear its name
    named = [int(p) for p in os.listdir("/proc")
             if p.isdigit() and int(p) != zyg and _cmdline(p) == f"joblet-shim --zygote {d.cgroup_root}"]
    tree = sorted(set(named + [k for p in named for k in descendants(p)]))
    assert len(tree) >= 4, [(p, _cmdline(p)) for p in tree]  # shim, init, sh, sleep
    assert {nice_of(p) for p in tree} == {0}, [(p, _cmdline(p), nice_of(p)) for p in tree]
    assert {os.sched_getscheduler(p) for p in tree} == {os.SCHED_OTHER}

    # a process rnx job exec puts into the job (spawned by the loop thread) is at 0 too
    p = d.rnx("job", "exec", jid, "--", "sh", "-c", "cut -d' ' -f19 /proc/self/stat; nice -n -1 cut -d' ' -f19 /proc/self/stat 2>/dev/null")
    assert p.returncode == 0, p.stderr
    # and cannot go above 0 (no CAP_SYS_NICE in a job: nice says so and runs it as it is)
    assert p.stdout.split() == ["0", "0"], p.stdout
    d.rnx("job", "stop", jid, check=True)
    d.wait(jid)


def test_cpu_priority_0_leaves_joblet_as_it_was_started():
    need_root()
    dm = Daemon(config_text="server:\n  cpu_priority: 0\n").start()
    try:
        assert nice_of(dm.proc.pid) == 0
        assert os.sched_getscheduler(dm.proc.pid) == os.SCHED_OTHER
        assert nice_of(zygote_of(dm)) == 0
    finally:
        dm.cleanup()
