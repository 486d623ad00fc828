"""Shared by the runtime tests (test_runtimes.py, test_runtime_ml.py): the build cache kept between
test runs, the check that Debian's mirror can be reached, and daemons whose runtimes come from
that cache.

The cache (JOBLET_TEST_RUNTIME_CACHE, default /var/cache/joblet-test-runtimes) holds one
tar.zst per recipe, keyed by the recipe's sha256, exactly as joblet's own cache does: the first
run on a machine builds from the mirror, every later run (the ASan pass of scripts/test.sh, the
next CI run) installs from the archive in seconds. An empty machine works too, only slower.
"""
import fcntl
import hashlib
import os
import socket
import subprocess
import time

import pytest

from conftest import BUILD, ROOT, SANITIZER_MARKS, Daemon, need_root

CACHE = os.environ.get("JOBLET_TEST_RUNTIME_CACHE", "/var/cache/joblet-test-runtimes")
RECIPES = os.path.join(ROOT, "runtimes")


def recipe_path(name):
    return os.path.join(RECIPES, name + ".yml")


def recipe_sha(name):
    with open(recipe_path(name), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def cached(name):
    return os.path.exists(os.path.join(CACHE, recipe_sha(name) + ".tar.zst"))


def mirror_host():
    """The host of the mirror joblet will use (the machine's APT sources), for the reachability check."""
    for path in ["/etc/apt/sources.list"] + sorted(
            os.path.join("/etc/apt/sources.list.d", n) for n in os.listdir("/etc/apt/sources.list.d")
            if n.endswith((".list", ".sources"))):
        try:
            text = open(path).read()
        except OSError:
            continue
        for line in text.splitlines():
            for word in line.split("#")[0].split():
                if word.startswith(("http://", "https://")) and "security" not in word:
                    return word.split("/")[2]
    return "deb.debian.org"


def mirror_reachable():
    host = mirror_host()
    try:
        socket.create_connection((host, 80), timeout=5).close()
        return True, host
    except OSError as e:
        return False, f"{host}: {e}"


def need_mirror_or_cache(name):
    """Skip (with the reason) only when neither the mirror nor a cached build is there."""
    need_root()
    if not os.path.exists("/usr/bin/mmdebstrap") and not os.path.exists("/usr/sbin/debootstrap"):
        pytest.skip("neither mmdebstrap nor debootstrap is installed (scripts/install-deps.sh installs mmdebstrap)")
    if cached(name):
        return
    ok, why = mirror_reachable()
    if not ok:
        pytest.skip(f"Debian's mirror cannot be reached ({why}) and {CACHE} has no build of {name}")


class RuntimeDaemon(Daemon):
    """A Daemon whose teardown also reads its build logs: the build helper runs there, and a
    sanitizer report of its own would land in them, not in joblet's log."""

    def __init__(self, config_text, env, runtimes_dir):
        super().__init__(config_text, env)
        self.runtimes_dir = runtimes_dir or os.path.join(self.state, "runtimes")

    def cleanup(self):
        logs = os.path.join(self.runtimes_dir, ".logs")
        found = []
        for n in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
            with open(os.path.join(logs, n), errors="replace") as f:
                text = f.read()
            found += [f"{n}: {m}" for m in SANITIZER_MARKS if m in text]
        super().cleanup()
        assert not found, f"sanitizer report in a build log: {found}"


def runtime_daemon(config_text="", env=None, runtimes_dir=None):
    """A daemon whose runtimes are built into its own directory, with the shared cache."""
    os.makedirs(CACHE, mode=0o700, exist_ok=True)
    cfg = f"runtimes:\n  cache_dir: {CACHE}\n  cache_keep: 8\n"
    if runtimes_dir:
        cfg += f"  dir: {runtimes_dir}\n"
    return RuntimeDaemon(cfg + config_text, env, runtimes_dir)


def build(d, name, *flags, timeout=900):
    """rnx runtime build of runtimes/NAME.yml; the CompletedProcess. While another test process
    (a parallel worker) builds the same recipe, this one waits for it, and then takes the build
    from the cache instead of making it a second time from the mirror."""
    os.makedirs(CACHE, mode=0o700, exist_ok=True)
    with open(os.path.join(CACHE, f".building-{recipe_sha(name)}"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return d.rnx("runtime", "build", *flags, recipe_path(name), timeout=timeout)


def mounts_under(path, but=None):
    """Mount points under path in this (the host's) mount namespace, less those under but."""
    with open("/proc/self/mountinfo") as f:
        points = [l.split()[4] for l in f if l.split()[4].startswith(path)]
    return [p for p in points if not (but and (p == but or p.startswith(but + "/")))]


def wait_gone(pred, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return False


def helpers_of(d):
    """joblet-runtime-build processes started by daemon d (their command line names its state)."""
    p = subprocess.run(["pgrep", "-af", "joblet-runtime-build"], capture_output=True, text=True)
    return [l for l in p.stdout.splitlines() if d.state in l]


__all__ = ["BUILD", "CACHE", "RECIPES", "build", "cached", "helpers_of", "mirror_reachable", "mounts_under",
           "need_mirror_or_cache", "recipe_path", "recipe_sha", "runtime_daemon", "wait_gone"]
