"""A hostile workflow file against rnx (a second uid through setpriv): a file under the 1 MiB
rnx reads may not make it build a request thousands of times its size. An anchor of 900 KB
named by 3,000 jobs made `rnx workflow validate` take 8 GB of memory and minutes before it
sent 2.7 GB to joblet (which refuses a body past server.max_body_bytes unread); nested aliases
multiply at each level. rnx now counts what the file stands for with its aliases written out
(cli/wfparse.c) and refuses past a bound that no request joblet takes could reach."""
import os
import resource
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import BUILD, setpriv

MALLORY = 4371


def rnx_limited(d, user, path, mem_bytes):
    """rnx workflow validate FILE as user, its address space at most mem_bytes (not in the
    sanitizer pass: ASan reserves terabytes of address space for its shadow at start, which the
    limit refuses; there the refusal alone is checked, which comes before anything is written out)."""
    def limit():
        if os.environ.get("JOBLET_PASS") != "sanitizers":
            resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    return subprocess.run([*setpriv(user), os.path.join(BUILD, "rnx"), "workflow", "validate", path],
                          capture_output=True, text=True, timeout=300, preexec_fn=limit,
                          env={"PATH": "/usr/bin:/bin", "JOBLET_SOCKET": d.sock, "HOME": "/nonexistent"})


@pytest.fixture
def shared_dir():
    """A directory the other uid may read (pytest's tmp_path is root's alone)."""
    d = tempfile.mkdtemp(prefix="joblet-hwy-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_an_anchor_named_by_many_jobs_is_refused_before_it_is_written_out(daemon, shared_dir):
    lines = ["jobs:", "  j0:", "    command: echo", "    args: &a"] + [f"      - {i:0999d}" for i in range(900)]
    lines += [f"  j{i}: {{command: echo, args: *a}}" for i in range(1, 3000)]
    path = Path(shared_dir) / "wide.yml"
    path.write_text("\n".join(lines) + "\n")
    os.chmod(path, 0o644)
    assert path.stat().st_size < 1 << 20
    # 1 GiB of address space: the request it stood for (2.7 GB) cannot be built in it
    p = rnx_limited(daemon, MALLORY, str(path), 1 << 30)
    assert p.returncode == 1, (p.returncode, p.stderr[-2000:])
    assert "with its aliases (*name) written out this file would be" in p.stderr, p.stderr[-2000:]


def test_nested_aliases_are_refused_at_once(daemon, shared_dir):
    lines = ["jobs:", "  j:", "    command: echo", "    environment:", "      L0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"      L{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 12)]
    path = Path(shared_dir) / "laughs.yml"
    path.write_text("\n".join(lines) + "\n")
    os.chmod(path, 0o644)
    p = rnx_limited(daemon, MALLORY, str(path), 1 << 30)
    assert p.returncode == 1, (p.returncode, p.stderr[-2000:])
    assert "with its aliases (*name) written out this file would be" in p.stderr, p.stderr[-2000:]
