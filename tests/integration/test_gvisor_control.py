"""Who may reach a gVisor job's sandbox from the host (security review of docs/sandbox.md).

runsc 2022-12-19 (Debian's) gives each sandbox a control server on the abstract unix socket
"@runsc-sandbox.<container id>", bound by `runsc run` in the network namespace runsc starts in,
and accepts a peer whose SO_PEERCRED uid, as the sandbox's own user namespace names it, is the
sandbox's uid or 0. The probes below connect as an unprivileged uid that is neither the job's
user nor its sandbox's and ask for the sandbox's process list (containerManager.Processes: it
reads, changes nothing). They must be refused, on the host's network too, where the socket is in
the host's network namespace and nothing but the uids hides it.

A second probe looks at the host uid of the sandbox process (runsc's `boot`), on no network and
on the host's: docs/sandbox.md, "Host uids", says every sandbox runs as a sandbox uid of its own,
never root (runsc keeps a --network=host sandbox in the user namespace it is started in, as
runsc's own uid there: joblet makes that namespace's root the sandbox uid)."""
import glob
import json
import os
import shutil
import subprocess

import pytest

from conftest import setpriv, wait_for
from test_hostile_tasks import procs_of, sandbox_uid

RUNSC = shutil.which("runsc") or ("/usr/bin/runsc" if os.path.exists("/usr/bin/runsc") else None)
needs_runsc = pytest.mark.skipif(RUNSC is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")
STRANGER = 54321  # a uid of nobody's account: not the job's, not a sandbox's, not root
NOBODY = 65534  # runsc's own sandbox user, which joblet's map swaps with the sandbox uid

_CLIENT = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
try:
    s.connect("\0runsc-sandbox." + sys.argv[1] + "\0")  # runsc binds the name with a trailing NUL
except OSError as e:
    print(json.dumps({"connect": str(e)})); sys.exit(0)
call = {"method": "containerManager.Processes", "arg": sys.argv[1]}
if len(sys.argv) > 2:  # a command to start in the sandbox, as its user (argv[2]: the uid inside)
    call = {"method": "containerManager.ExecuteAsync",
            "arg": {"Filename": "/bin/sh", "Argv": ["sh", "-c", sys.argv[3]], "Envv": ["PATH=/usr/bin:/bin"],
                    "WorkingDirectory": "/work", "KUID": int(sys.argv[2]), "KGID": int(sys.argv[2]),
                    "ContainerID": sys.argv[1]}}
try:
    s.sendall(json.dumps(call).encode())
except OSError as e:  # refused: runsc closed the connection at once
    print(json.dumps({"send": str(e)})); sys.exit(0)
buf = b""
dec = json.JSONDecoder()
while True:
    try:
        chunk = s.recv(65536)
    except OSError as e:
        print(json.dumps({"recv": str(e), "got": buf.decode(errors="replace")})); sys.exit(0)
    if not chunk:
        break
    buf += chunk
    try:
        dec.decode(buf.decode()); break
    except ValueError:
        continue
print(json.dumps({"answer": buf.decode(errors="replace")}))
"""


def control_call_as(uid, jid, *run):
    p = subprocess.run([*setpriv(uid), "/usr/bin/python3", "-c", _CLIENT, jid, *run], capture_output=True, text=True,
                       timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def host_abstract_sockets():
    with open("/proc/net/unix") as f:
        return {l.split()[-1] for l in f.read().splitlines()[1:] if l.split()[-1].startswith("@")}


def running(d, **fields):
    jid = d.submit("sh", "-c", "echo up; sleep 60", isolation="gvisor", **fields)
    d.wait_status(jid, "RUNNING", timeout=60)
    wait_for(lambda: d.output(jid) == "up\n", f"gVisor job {jid} never printed", timeout=60)
    return jid


@needs_runsc
@pytest.mark.parametrize("network", ["none", "host"])
def test_another_uid_cannot_drive_a_gvisor_jobs_control_socket(fresh_daemon, network):
    d = fresh_daemon()
    jid = running(d, network=network)
    try:
        name = f"@runsc-sandbox.{jid}"
        listed = name + "@" in host_abstract_sockets()  # (/proc/net/unix shows NULs as @)
        # on the host's network the socket is the host's, which every local user can reach
        assert listed == (network == "host"), (network, listed)
        problems = []
        for uid in (STRANGER, NOBODY):
            got = control_call_as(uid, jid)
            answer = got.get("answer", "")
            ok = False
            if answer:
                try:
                    ok = json.loads(answer).get("success") is True
                except ValueError:
                    ok = False
            if ok:
                problems.append(f"uid {uid} (not the job's, not its sandbox's) drove job {jid}'s sandbox through "
                                f"{name} (listed in the host's /proc/net/unix: {listed}): {answer[:400]}")
            # and a command of the outsider's, started inside the job's sandbox as the job's user:
            # a marker file in the job's own /work (harmless if it works)
            marker = os.path.join(d.work(jid), f"started-by-uid-{uid}")
            got = control_call_as(uid, jid, str(d.job(jid)["uid"]), f"id > /work/started-by-uid-{uid}; sleep 5")
            import time
            time.sleep(1)
            if os.path.exists(marker):
                problems.append(f"uid {uid} ran a command in job {jid}'s sandbox: {got}; {open(marker).read()!r}")
        assert not problems, problems
    finally:
        d.api("POST", f"/v1/jobs/{jid}/kill")
        d.wait(jid)


def cgroup_procs(d, jid):
    out = set()
    for base in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        for cg in glob.glob(os.path.join(base, d.cgroup_root, "**", jid), recursive=True):
            out |= procs_of(cg)
    return out


def uid_and_argv(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            uid = next(int(l.split()[1]) for l in f if l.startswith("Uid:"))
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        return uid, argv
    except (FileNotFoundError, ProcessLookupError, StopIteration):
        return None, []


@needs_runsc
@pytest.mark.parametrize("network", ["none", "host"])
def test_a_gvisor_sandbox_never_runs_as_host_root(fresh_daemon, network):
    d = fresh_daemon()
    jid = running(d, network=network)
    try:
        procs = {p: uid_and_argv(p) for p in cgroup_procs(d, jid)}
        boots = {p: u for p, (u, argv) in procs.items() if "boot" in argv}
        assert boots, procs
        assert 0 not in boots.values(), (f"job {jid} (network {network}): its sandbox (runsc boot) runs as host "
                                         f"root: {boots}")
        assert set(boots.values()) == {sandbox_uid(d, jid)}, (boots, sandbox_uid(d, jid))
        # joblet's own runsc commands still reach it: exec (runsc state, then runsc exec), then a
        # stop (runsc kill --all TERM) that ends it as stopped
        p = d.rnx("job", "exec", jid, "sh", "-c", "echo inside; id -u")
        assert p.returncode == 0 and p.stdout.splitlines()[0] == "inside", (p.returncode, p.stdout, p.stderr)
        assert d.rnx("job", "stop", jid).returncode == 0
        job = d.wait(jid, 60)
        assert job["end_reason"] == "stopped", job
    finally:
        d.api("POST", f"/v1/jobs/{jid}/kill")
        d.wait(jid)


@needs_runsc
def test_one_users_gvisor_environments_do_not_fill_the_shared_runsc_tmpfs(fresh_daemon):
    """<state_dir>/runsc is one 64 MiB tmpfs for every user's bundles and runsc's state, and each
    gVisor job's config.json (and runsc's copy of it in its state) holds its whole environment:
    128 KiB per variable, as many variables as a request body holds. A few big jobs of one user
    must not leave another user's gVisor job unable to start."""
    d = fresh_daemon()
    big = {f"V{i}": "x" * (120 << 10) for i in range(48)}  # ~6 MB of environment per job (runsc loads up to ~8)
    hogs = []
    try:
        for _ in range(6):
            jid = d.submit("sh", "-c", "echo up; sleep 60", isolation="gvisor", env=big)
            hogs.append(jid)
            wait_for(lambda: d.job(jid)["status"] not in ("QUEUED", "SCHEDULED"), "never started", 60)
        st = os.statvfs(os.path.join(d.state, "runsc"))
        used_mb = (st.f_blocks - st.f_bfree) * st.f_frsize >> 20
        states = {j: (d.job(j)["status"], d.job(j).get("error")) for j in hogs}
        victim, out, err = d.run("echo", "ok", isolation="gvisor", timeout=60)
        assert victim["exit_code"] == 0 and out == "ok\n", (
            f"a small gVisor job could not start once big ones ran (runsc tmpfs {used_mb} MiB used; "
            f"the big jobs: {states}): {victim.get('end_reason')} {victim.get('error')} {err[-300:]}")
    finally:
        for j in hogs:
            d.api("POST", f"/v1/jobs/{j}/kill")
        for j in hogs:
            d.wait(j, 60)


@needs_runsc
def test_an_update_cannot_give_a_gvisor_job_gpus_its_runsc_refuses(fresh_daemon, tmp_path):
    """docs/sandbox.md: a gVisor job with GPUs on a runsc without nvproxy is refused at
    submission. rnx job update may change gpu_count of a waiting job: the same refusal must hold."""
    from test_gvisor import gpu_daemon
    d = gpu_daemon(fresh_daemon, tmp_path, "dgx-h100")
    status, body = d.api("POST", "/v1/jobs", {"command": "true", "gpu_count": 1, "isolation": "gvisor"})
    assert status == 400, body  # the submission's refusal, as documented
    first = d.submit("sleep", "3")
    jid = d.submit("true", isolation="gvisor", after=[{"job": first}])
    code, r = d.api("POST", f"/v1/jobs/{jid}/update", {"gpu_count": 1})
    job = d.wait(jid, 60)
    assert code != 200 or not job.get("gpus"), (
        f"update gave gVisor job {jid} GPUs on a runsc without nvproxy: update {code} {r}; the job ran with "
        f"{job.get('gpus')} ({job['status']}, {job.get('end_reason')})")


def recorded_pids(o, key=""):
    """every pid runsc's record of a container names (its sandbox's, its gofer's: keys ending in pid)"""
    if isinstance(o, dict):
        return {p for k, v in o.items() for p in recorded_pids(v, k)}
    if isinstance(o, list):
        return {p for v in o for p in recorded_pids(v, key)}
    return {o} if isinstance(o, int) and key.lower().endswith("pid") and o > 1 else set()


def decoy_with_pid(pid, deadline, tries=200):
    """a harmless process of the host's pid namespace given the number pid (ns_last_pid), or None.
    A number another process holds (pid_max is small: a parallel run's processes take freed
    numbers soon) is waited for, up to deadline (time.time()), while that process lives."""
    import time
    for _ in range(tries):
        if time.time() >= deadline:
            return None
        while os.path.exists(f"/proc/{pid}") and time.time() < deadline:
            time.sleep(0.02)
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(pid - 1))
        except OSError:
            return None
        p = subprocess.Popen(["sleep", "60"], stdin=subprocess.DEVNULL)
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
        time.sleep(0.01)  # the number is still a zombie's, or another process took it first
    return None


@needs_runsc
def test_runsc_delete_after_a_kill_hits_no_process_that_took_a_recorded_pid(fresh_daemon, tmp_path):
    """rnx job kill: the shim sends runsc kill, kills the whole cgroup (runsc run, the sandbox,
    the gofer: all reaped by someone else), reports the end, then runs `runsc delete --force` as
    the host's root. runsc run died before it could destroy its container, so its record still
    holds the sandbox's and the gofer's pids, and delete SIGKILLs those numbers. The test gives
    each number to a process of its own (a `sleep`) while a runsc wrapper holds delete back, then
    lets it run: the sleeps must live. The wrapper does not pass `runsc kill` on: the shim's kill
    of the cgroup alone ends the job, so runsc run never gets to destroy its container first (under
    the sanitizers the shim is slow enough between the two that it did, and no record was left).
    A number another process of a parallel run keeps cannot be given: that try's delete is not
    run at all (never against a process not the test's), and another job is tried, up to three.
    The shim bounds runsc delete (gvisor.c, 5 s, then killed with its pid namespace): the decoys are
    made within 3 s of delete's start, and a try whose delete the bound ended (a loaded machine)
    tells nothing and is tried again."""
    import time
    t = tmp_path / "try"
    wrap = tmp_path / "runsc"
    wrap.write_text(f"""#!/bin/sh
case " $* " in *" kill "*) exit 0;; esac
case " $* " in *" delete "*)
  root=$(printf '%s\\n' "$@" | sed -n 's/^--root=//p')
  for f in "$root"/*.state; do cp "$f" {t}/state.json; done
  touch {t}/delete.waiting
  n=0; while [ ! -e {t}/go ] && [ ! -e {t}/abandon ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done
  if [ -e {t}/abandon ]; then touch {t}/delete.done; exit 0; fi
  touch {t}/go.seen
  {RUNSC} "$@"; rc=$?; touch {t}/delete.done; exit $rc;;
esac
exec {RUNSC} "$@"
""")
    wrap.chmod(0o755)
    d = fresh_daemon(f"isolation:\n  runsc: {wrap}\n")

    def wrapper_gone(jid):
        """no process runs the wrapper's delete of job jid (ended, or killed by the shim's bound)"""
        want = [str(wrap).encode(), b"delete", jid.encode()]
        for p in os.listdir("/proc"):
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
            except OSError:
                continue
            if all(w in args for w in want):
                return False
        return True

    tried = []
    for attempt in range(3):
        if t.exists():
            shutil.rmtree(t)
        t.mkdir()
        jid = running(d)
        assert d.rnx("job", "kill", jid).returncode == 0
        wait_for(lambda: (t / "delete.waiting").exists(), "runsc delete never ran", 60)
        started = time.time()
        decoys = []
        try:
            state = json.loads((t / "state.json").read_text())
            pids = recorded_pids(state)
            assert pids, f"runsc's record names no pid (its form changed?): {state}"
            decoys = [(pid, decoy_with_pid(pid, started + 3)) for pid in sorted(pids)]
            missing = [pid for pid, p in decoys if p is None]
            if missing:
                tried.append(f"pids {missing} kept by other processes")
                (t / "abandon").touch()
                wait_for(lambda: (t / "delete.done").exists() or wrapper_gone(jid),
                         "the abandoned runsc delete never ended", 30)
                continue
            (t / "go").touch()
            # (a decoy it killed stays a zombie until the test reaps it, and delete waits for that
            # "sandbox" to go: poll() reaps)
            wait_for(lambda: ((t / "delete.done").exists() or any(p.poll() is not None for _, p in decoys)
                              or wrapper_gone(jid)), "runsc delete never finished", 30)
            if not (t / "delete.done").exists() and all(p.poll() is None for _, p in decoys):
                tried.append("the shim's bound ended runsc delete " +
                             ("while it ran" if (t / "go.seen").exists() else "before it ran"))
                continue
            time.sleep(0.5)
            hit = [pid for pid, p in decoys if p.poll() is not None]
            assert not hit, (f"runsc delete, run by the shim as root after job {jid}'s processes were gone, killed "
                             f"the processes that had the pids its record named: {hit} (record: {pids})")
            assert d.wait(jid, 60)["end_reason"] == "killed"
            return
        finally:
            if not (t / "abandon").exists():
                (t / "go").touch()
            for _, p in decoys:
                if p is not None:
                    p.kill()
                    p.wait()
    raise AssertionError(f"in three tries, none where runsc delete ran against the decoys: {tried}")
