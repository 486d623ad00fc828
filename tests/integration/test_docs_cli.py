"""docs/cli.md's samples of what rnx prints, typed as a user would, against a real daemon.

a. "Naming a job" showed another user's job answered "... only your own jobs (root sees every
   job)"; rnx says "(root, maintainers and admins see every job)" (maintainer and admin
   certificates see every job over TLS: docs/architecture.md's OTHERS_JOBS). The sample is the
   program's words now.
"""
import os

from conftest import ROOT, rnx_as

CLI_MD = os.path.join(ROOT, "docs", "cli.md")


def samples(prefix):
    """docs/cli.md's lines that start with prefix (a sample of rnx's output)."""
    return [l for l in open(CLI_MD).read().splitlines() if l.startswith(prefix)]


def test_another_users_job_sample_is_what_rnx_prints(daemon):
    d = daemon
    jid = d.submit("sleep", "30")
    p = rnx_as(d, 4242, "job", "status", jid)
    assert p.returncode == 1
    printed = p.stderr.strip().replace(jid, "3f2a9c1e-...")
    shown = samples("rnx: job 3f2a9c1e-... is another user's job")
    assert shown == [printed], (shown, printed)
    d.api("POST", f"/v1/jobs/{jid}/kill")
