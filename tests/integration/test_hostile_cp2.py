"""A hostile local user against rnx job cp into a running job (docs/hardening.md, "Copies in
and out"): what a copy writes into the job's memory (its /tmp, a tmpfs) is the job's, held to
the job's memory limit as if the job had written it.

The daemon is the test's own (jobs.max_upload_bytes 8 MB: each copy is within it); the user is
an unprivileged uid through setpriv; the files copied are the test's own scratch files."""
import json
import os
import shutil
import tempfile
import time

import pytest

from conftest import rnx_as
from test_job_cp import d  # noqa: F401 (a fixture: test_job_cp's daemon, this module's own)

MB = 1 << 20
USER = (4381, 4381)




@pytest.fixture
def blob():
    t = tempfile.mkdtemp(prefix="joblet-cp2-")
    os.chmod(t, 0o755)
    path = os.path.join(t, "blob")
    with open(path, "wb") as f:
        f.write(os.urandom(7 * MB))
    os.chmod(path, 0o644)
    yield path
    shutil.rmtree(t, ignore_errors=True)


def swap_on():
    with open("/proc/swaps") as f:
        return len(f.read().splitlines()) > 1


def test_a_copy_into_a_jobs_tmp_is_held_to_the_jobs_memory_limit(d, blob):
    """A job of --max-memory=32MB sleeps; its user copies 7 MB files into its /tmp (a tmpfs of
    1 GiB, jobs.tmp_size_mb) one after another. The copy's pages were charged to the copy
    helper's cgroup (the owner's level on cgroup2, the daemon's own on v1), bounded by nothing:
    all ten copies went in, 70 MB held in the memory of a job limited to 32 MB, while the job
    writing the same itself was killed at 32 MB. Now the copy joins the job's memory cgroup: the
    copies stop (the copy, or the job, is killed at the limit) before the job holds much more
    than 32 MB."""
    if swap_on():
        pytest.skip("with swap, a memory limit lets tmpfs pages out to it: the job itself could hold more")
    p = rnx_as(d, USER, "--json", "job", "run", "--max-memory=32MB", "sh", "-c", "exec sleep 300")
    assert p.returncode == 0, p.stderr
    jid = json.loads(p.stdout)["id"]
    try:
        d.wait_status(jid, "RUNNING")
        copied, failed = 0, None
        for i in range(10):
            p = rnx_as(d, USER, "job", "cp", "-q", blob, f"{jid}:/tmp/b{i}")
            if p.returncode != 0:
                failed = p.stderr
                break
            copied += 7 * MB
        print(f"\n{copied // MB} MB copied; then: {failed}")
        # the copy the limit stopped says so (it was 500, "the copy's helper ended before it was
        # done"), unless the limit killed the job's own process instead
        if failed and d.job(jid)["status"] == "RUNNING":
            assert "the copy was stopped at the job's memory limit (--max-memory=32MB)" in failed, failed
        # (the last copy may have gone in whole before the limit was reached)
        assert copied <= 40 * MB, f"{copied // MB} MB copied into a job of 32 MB: {d.job(jid)}"
        if d.job(jid)["status"] == "RUNNING":
            p = rnx_as(d, USER, "job", "exec", jid, "--", "du", "-sm", "/tmp")
            held = int(p.stdout.split()[0]) if p.returncode == 0 and p.stdout.split() else 0
            assert held <= 40, f"the job's /tmp holds {held} MB, its memory limit is 32 MB"
    finally:
        rnx_as(d, USER, "job", "kill", jid)
        deadline = time.time() + 30
        while time.time() < deadline and d.job(jid)["status"] not in ("STOPPED", "FAILED", "COMPLETED"):
            time.sleep(0.2)


def test_a_copy_within_the_limit_still_goes_in(d, blob):
    """The same job takes one 7 MB copy into /tmp and reads it back: joining its memory cgroup
    costs a copy within the limit nothing."""
    p = rnx_as(d, USER, "--json", "job", "run", "--max-memory=64MB", "sh", "-c", "exec sleep 300")
    assert p.returncode == 0, p.stderr
    jid = json.loads(p.stdout)["id"]
    try:
        d.wait_status(jid, "RUNNING")
        p = rnx_as(d, USER, "job", "cp", "-q", blob, f"{jid}:/tmp/one")
        assert p.returncode == 0, p.stderr
        p = rnx_as(d, USER, "job", "exec", jid, "--", "stat", "-c", "%s", "/tmp/one")
        assert p.stdout.strip() == str(7 * MB), (p.stdout, p.stderr)
    finally:
        rnx_as(d, USER, "job", "kill", jid)
