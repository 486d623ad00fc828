"""A real Slurm test cluster on this one machine (issue 30): munged, slurmctld and two slurmd
(`slurmd -N node1`, `-N node2`, Debian's build allows several per host), all in a private
temporary directory, pointed at a generated slurm.conf through SLURM_CONF. Nothing under
/etc/slurm or /etc/munge is read or written.

- munged has its own key (mungekey), socket, pid, log and seed files; Slurm reaches it through
  AuthInfo=socket=... (auth/munge and cred/munge both read it).
- cgroup/v1 on the hybrid layout (v1 controllers under /sys/fs/cgroup/*, cgroup2 at
  /sys/fs/cgroup/unified), proctrack/cgroup, task/cgroup, ConstrainRAMSpace=yes and
  ConstrainDevices as the caller asks.
- select/cons_tres with GresTypes=gpu: each node has two test GPUs, character devices made with
  mknod 195:N in the cluster's directory as tests/integration/gpu_nodes.py makes them (node1
  minors 0,1; node2 minors 2,3).
  A caller may pass gpu_dev, a directory where it made nvidia0..3 itself (a joblet daemon's
  simulated machine, tests/integration/test_slurm_joblet.py): gres.conf then names those.
- an optional plugstack.conf content (a SPANK plugin to load), or a function of the cluster that
  returns it once the cluster's directory exists (build_spank_plugin builds one there).

Every daemon is a child of the test (foreground mode), stopped by its PID (SIGTERM, then
SIGKILL); the cgroups Slurm made for this cluster, its spool directories and the temporary
directory are removed; a process left behind fails the teardown loudly.

Use: the module-scoped fixture `slurm_cluster` (import slurm_cluster_fixture into a test module;
its options come from the module's SLURM_CLUSTER_OPTIONS dict), or `with SlurmCluster(**options)
as c:`. Start: ~1.1 s on the 2-core test VM.
"""
import contextlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time

import pytest

SBIN = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
DAEMONS = ["munged", "mungekey", "slurmctld", "slurmd", "slurmstepd"]
CLIENTS = ["srun", "sbatch", "sinfo", "scontrol", "scancel", "squeue"]
PLUGIN_DIR = "/usr/lib/x86_64-linux-gnu/slurm-wlm"
CGROUP_V1 = "/sys/fs/cgroup"
# proctrack/cgroup needs freezer; task/cgroup memory and devices; jobacct_gather/cgroup cpuacct
# and memory; Slurm's cgroup/v1 plugin also makes a cpuset directory for every step.
CONTROLLERS = ["freezer", "memory", "devices", "cpuset", "cpuacct"]
NODES = {"node1": (0, 1), "node2": (2, 3)}  # node -> the minors of its two test GPUs
NODE_CPUS = 2
NODE_MEM_MB = 2048


def which(name):
    for d in SBIN:
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return None


def v1_mounts():
    """controller -> mount point of every cgroup v1 hierarchy."""
    out = {}
    with open("/proc/self/mounts") as f:
        for line in f:
            dev, mnt, fstype, opts = line.split()[:4]
            if fstype == "cgroup":
                for o in opts.split(","):
                    out.setdefault(o, mnt)
    return out


def cannot_run():
    """Why Slurm cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root: slurmd runs jobs as their users, makes cgroups and device nodes"
    missing = [n for n in DAEMONS + CLIENTS if which(n) is None]
    if missing:
        return ("Slurm or munge is not installed (missing " + ", ".join(missing) +
                "; Debian 12: slurmctld slurmd slurm-client munge, see scripts/install-deps.sh)")
    for so in ("proctrack_cgroup.so", "task_cgroup.so", "cgroup_v1.so", "select_cons_tres.so",
               "gres_gpu.so", "auth_munge.so"):
        if not os.path.exists(os.path.join(PLUGIN_DIR, so)):
            return f"Slurm plugin {so} is missing from {PLUGIN_DIR} (slurm-wlm-basic-plugins)"
    mounts = v1_mounts()
    lacking = [c for c in CONTROLLERS if mounts.get(c) != os.path.join(CGROUP_V1, c)]
    if lacking:
        return ("Slurm's cgroup/v1 plugin needs the v1 controllers " + ", ".join(lacking) +
                f" mounted at {CGROUP_V1}/<controller> (this host: " +
                (", ".join(f"{k}={v}" for k, v in sorted(mounts.items())) or "no cgroup v1 mounts") + ")")
    return None


def build_spank_plugin(src, out):
    """gcc a SPANK plugin against Debian's /usr/include/slurm/spank.h (libslurm-dev); skips
    where that header or gcc is missing."""
    if not os.path.exists("/usr/include/slurm/spank.h"):
        pytest.skip("/usr/include/slurm/spank.h is missing (Debian: libslurm-dev)")
    if shutil.which("gcc") is None:
        pytest.skip("gcc is missing: cannot build a SPANK plugin")
    subprocess.run(["gcc", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o", out, src], check=True)
    return out


def free_ports(n):
    """n TCP ports nothing is bound to now, below the kernel's ephemeral range: a port the kernel
    picked (bind to port 0) was free only until the daemons bound it, and any connection made in
    between (the cluster's own daemons', another worker's) could take it as its local port
    (CI's sanitizer pass, local run 150: slurmd "Address already in use"). Ports below that range
    are never given to a connection; picked at random, so that two clusters rarely pick alike."""
    import random
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
    socks, ports = [], []
    try:
        while len(ports) < n:
            port = random.randrange(10000, max(low, 10001))
            s = socket.socket()
            try:
                s.bind(("0.0.0.0", port))   # slurmd and slurmctld listen on every address
            except OSError:
                s.close()
                continue
            socks.append(s)
            ports.append(port)
    finally:
        for s in socks:
            s.close()
    return ports


def slurm_cgroup_dirs():
    """Every /sys/fs/cgroup/<controller>/slurm* directory (Slurm's top directories)."""
    out = set()
    for c in os.listdir(CGROUP_V1):
        base = os.path.join(CGROUP_V1, c)
        if not os.path.isdir(base) or os.path.islink(base):
            continue
        with contextlib.suppress(OSError):
            for e in os.listdir(base):
                if e.startswith("slurm") and os.path.isdir(os.path.join(base, e)):
                    out.add(os.path.join(base, e))
    return out


def rmdir_tree(top):
    """rmdir a cgroup directory and everything below it, deepest first."""
    for dirpath, dirnames, _ in sorted(os.walk(top), key=lambda t: -t[0].count("/")):
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(dirpath)


def cgroup_pids(top):
    pids = set()
    for dirpath, _, files in os.walk(top):
        if "cgroup.procs" in files:
            with contextlib.suppress(OSError), open(os.path.join(dirpath, "cgroup.procs")) as f:
                pids.update(int(x) for x in f.read().split())
    return pids


def environ_pids(marker):
    """Processes whose environment names this cluster's SLURM_CONF (slurmstepd inherits it)."""
    pids = set()
    needle = f"SLURM_CONF={marker}".encode()
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        with contextlib.suppress(OSError), open(f"/proc/{p}/environ", "rb") as f:
            if needle in f.read().split(b"\0"):
                pids.add(int(p))
    return pids


def ppid(pid):
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("PPid:"):
                return int(line.split()[1])
    return None


def describe(pid):
    with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
        cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        return f"{pid} {cmd}"
    return f"{pid} (gone)"


class SlurmCluster:
    """munged + slurmctld + slurmd node1, node2 in a private directory."""

    def __init__(self, constrain_devices=False, plugstack=None, extra_slurm_conf="", task_plugin="task/cgroup",
                 gpu_dev=None, gres_conf=None, node_conf=None, slurmd_env=None):
        """gres_conf: the gres.conf text (or a function of the cluster returning it) instead of
        the test GPUs' lines; node_conf: {node: "CPUs=... Gres=..."} instead of a node's 2 CPUs
        and test GPUs in slurm.conf; slurmd_env: {node: {VAR: value}} for that slurmd (say
        HWLOC_SYNTHETIC, the topology hwloc shows it)."""
        self.gres_conf = gres_conf
        self.node_conf = node_conf or {}
        self.slurmd_env = slurmd_env or {}
        self.constrain_devices = constrain_devices
        self.gpu_dev = gpu_dev
        self.plugstack = plugstack
        self.extra_slurm_conf = extra_slurm_conf
        self.task_plugin = task_plugin
        self.procs = {}  # name -> Popen
        self.dir = None
        self.start_seconds = None
        self.host = socket.gethostname().split(".")[0]

    # -- paths ---------------------------------------------------------------
    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    @property
    def conf(self):
        return self.path("etc", "slurm.conf")

    @property
    def munge_socket(self):
        return self.path("munge", "munge.socket")

    def gpu_files(self, node):
        return [os.path.join(self.gpu_dev or self.path("dev"), f"nvidia{m}") for m in NODES[node]]

    @property
    def env(self):
        """The environment a Slurm client (srun, sbatch, ...) of this cluster runs with."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SRUN_", "SBATCH_", "SALLOC_"))}
        env["SLURM_CONF"] = self.conf
        env["PATH"] = ":".join(SBIN)
        return env

    # -- files ---------------------------------------------------------------
    def write_files(self):
        for d in ("etc", "munge", "log", "spool", "state", "run", "dev"):
            os.makedirs(self.path(d))
        os.chmod(self.path("munge"), 0o755)  # clients of other users reach munged's socket
        # the test GPUs: 195:N as the driver makes them (tests/integration/gpu_nodes.py)
        for minors in NODES.values() if self.gpu_dev is None else ():
            for m in minors:
                p = self.path("dev", f"nvidia{m}")
                os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(195, m))
                os.chmod(p, 0o666)
        self.ports = free_ports(1 + len(NODES))
        ctld_port, node_ports = self.ports[0], self.ports[1:]
        nodes = "\n".join(
            f"NodeName={n} NodeHostname={self.host} NodeAddr=127.0.0.1 Port={p} "
            + self.node_conf.get(n, f"CPUs={NODE_CPUS} RealMemory={NODE_MEM_MB} Gres=gpu:{len(NODES[n])}")
            + " State=UNKNOWN"
            for n, p in zip(NODES, node_ports))
        with open(self.conf, "w") as f:
            f.write(f"""# generated by tests/integration/slurm_cluster.py
ClusterName=jobletit
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={self.path("state")}
SlurmdSpoolDir={self.path("spool", "%n")}
SlurmctldPidFile={self.path("run", "slurmctld.pid")}
SlurmdPidFile={self.path("run", "slurmd-%n.pid")}
SlurmctldLogFile={self.path("log", "slurmctld.log")}
SlurmdLogFile={self.path("log", "slurmd-%n.log")}
SlurmctldDebug=info
SlurmdDebug=debug
PluginDir={PLUGIN_DIR}
PlugStackConfig={self.path("etc", "plugstack.conf")}
ProctrackType=proctrack/cgroup
TaskPlugin={self.task_plugin}
JobAcctGatherType=jobacct_gather/cgroup
JobAcctGatherFrequency=task=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={self.path("log", "jobcomp.txt")}
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=2
MinJobAge=300
DefMemPerCPU=100
SlurmdParameters=config_overrides
{nodes}
PartitionName=test Nodes={",".join(NODES)} Default=YES MaxTime=INFINITE State=UP
{self.extra_slurm_conf}
""")
        with open(self.path("etc", "cgroup.conf"), "w") as f:
            f.write(f"""CgroupPlugin=cgroup/v1
CgroupMountpoint={CGROUP_V1}
CgroupAutomount=no
ConstrainCores=no
ConstrainRAMSpace=yes
AllowedRAMSpace=100
ConstrainSwapSpace=no
ConstrainDevices={"yes" if self.constrain_devices else "no"}
""")
        with open(self.path("etc", "gres.conf"), "w") as f:
            if self.gres_conf is not None:
                f.write(self.gres_conf(self) if callable(self.gres_conf) else self.gres_conf)
            else:
                for n, minors in NODES.items():
                    files = ",".join(self.gpu_files(n))
                    f.write(f"NodeName={n} Name=gpu File={files}\n")
        plugstack = self.plugstack(self) if callable(self.plugstack) else self.plugstack
        with open(self.path("etc", "plugstack.conf"), "w") as f:
            f.write(plugstack or "")

    # -- daemons -------------------------------------------------------------
    def spawn(self, name, argv, env=None):
        log = open(self.path("log", f"{name}.out"), "ab")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=env or self.env, start_new_session=True)
        log.close()

    def log(self, name):
        p = self.path("log", name)
        if not os.path.exists(p):
            return ""
        with open(p, errors="replace") as f:
            return f.read()

    def logs_tail(self, n=40):
        out = []
        for name in sorted(os.listdir(self.path("log"))):
            lines = self.log(name).splitlines()[-n:]
            out.append(f"--- {name}\n" + "\n".join(lines))
        return "\n".join(out)

    def check_alive(self):
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited with {p.returncode} while the cluster started\n{self.logs_tail()}")

    def wait_for(self, what, cond, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            if cond():
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"test Slurm cluster: {what} not reached in {timeout}s\n{self.logs_tail()}")
            time.sleep(0.05)

    def start(self):
        why = cannot_run()
        if why:
            pytest.skip(why)
        t0 = time.monotonic()
        self.cgroups_before = slurm_cgroup_dirs()
        self.dir = tempfile.mkdtemp(prefix="joblet-slurm-")
        os.chmod(self.dir, 0o755)  # jobs of other users reach the test device nodes and logs
        try:
            self.write_files()
            key = self.path("munge", "munge.key")
            subprocess.run([which("mungekey"), "--create", f"--keyfile={key}"], check=True,
                           capture_output=True)
            os.chmod(key, 0o600)
            self.spawn("munged", [which("munged"), "--foreground", "--force", f"--socket={self.munge_socket}",
                                  f"--key-file={key}", f"--pid-file={self.path('munge', 'munged.pid')}",
                                  f"--log-file={self.path('log', 'munged.log')}",
                                  f"--seed-file={self.path('munge', 'munged.seed')}", "--num-threads=4"])
            self.wait_for("munged's socket", lambda: os.path.exists(self.munge_socket), 20)
            self.spawn("slurmctld", [which("slurmctld"), "-D", "-i", "-f", self.conf])
            for n in NODES:
                self.spawn(f"slurmd-{n}", [which("slurmd"), "-D", "-N", n, "-f", self.conf],
                           env=dict(self.env, **self.slurmd_env[n]) if n in self.slurmd_env else None)
            self.wait_for("both nodes idle", self.nodes_idle)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def nodes_idle(self):
        p = subprocess.run([which("sinfo"), "-h", "-N", "-o", "%N %t"], env=self.env,
                           capture_output=True, text=True)
        if p.returncode != 0:
            return False
        states = dict(line.split() for line in p.stdout.splitlines() if line.strip())
        return all(states.get(n) == "idle" for n in NODES)

    def run(self, argv, check=False, timeout=120, **kw):
        """A Slurm client command of this cluster (argv[0] is its name: srun, sbatch, ...)."""
        return subprocess.run([which(argv[0]), *argv[1:]], env=self.env, capture_output=True, text=True,
                              check=check, timeout=timeout, **kw)

    # -- teardown ------------------------------------------------------------
    def stop(self):
        if self.dir is None:
            return
        problems = []
        if self.procs.get("slurmctld") and self.procs["slurmctld"].poll() is None:
            with contextlib.suppress(Exception):
                subprocess.run([which("scancel"), "--full", "--quiet", "-u", "root"], env=self.env,
                               capture_output=True, timeout=20)
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and self.step_pids(jobs_only=True):
                    time.sleep(0.1)
        # slurmd first (its steps end with it), then slurmctld, munged last
        order = [n for n in self.procs if n.startswith("slurmd")] + ["slurmctld", "munged"]
        for name in order:
            p = self.procs.get(name)
            if p is None:
                continue
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    problems.append(f"{name} ({p.pid}) ignored SIGTERM for 10 s: SIGKILL")
                    p.kill()
                    p.wait()
        left = self.step_pids()
        # named before the kill: a killed process not yet reaped has an empty cmdline
        named = [describe(p) for p in left]
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if left:
            problems.append("left running after the daemons stopped (killed): " + "; ".join(named))
        time.sleep(0.05 if not left else 0.5)
        for top in sorted(slurm_cgroup_dirs() - self.cgroups_before):
            rmdir_tree(top)
            if os.path.exists(top):
                problems.append(f"cgroup {top} could not be removed")
        for name in ("slurmctld", "slurmd", "slurmstepd", "munged"):
            r = subprocess.run(["pgrep", "-a", "-x", name], capture_output=True, text=True)
            ours = [line for line in r.stdout.splitlines()
                    if int(line.split()[0]) in {p.pid for p in self.procs.values()} | environ_pids(self.conf)]
            if ours:
                problems.append(f"pgrep finds {name} still running: {ours}")
        logs = self.logs_tail() if problems else ""
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None
        if problems:
            raise AssertionError("test Slurm cluster teardown: " + "\n".join(problems) + "\n" + logs)

    def step_pids(self, jobs_only=False):
        """Processes of this cluster's jobs: in its Slurm cgroups, or carrying its SLURM_CONF
        (jobs_only: only the slurmstepd among the latter, which end once their jobs are
        cancelled)."""
        pids = environ_pids(self.conf)
        if jobs_only:
            pids = {p for p in pids if describe(p).split()[1:2] == ["slurmstepd:"]}
        for top in slurm_cgroup_dirs() - self.cgroups_before:
            pids |= cgroup_pids(top)
        daemons = {p.pid for p in self.procs.values() if p.poll() is None}
        # slurmctld's own helper (slurmscriptd) is its child and ends with it
        return {p for p in pids - daemons if os.path.exists(f"/proc/{p}") and ppid(p) not in daemons}

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


@pytest.fixture(scope="module", name="slurm_cluster")
def slurm_cluster_fixture(request):
    """One test cluster per test module; SLURM_CLUSTER_OPTIONS in the module sets its options
    (constrain_devices, plugstack, extra_slurm_conf, task_plugin, gpu_dev)."""
    c = SlurmCluster(**getattr(request.module, "SLURM_CLUSTER_OPTIONS", {}))
    c.start()
    yield c
    c.stop()
