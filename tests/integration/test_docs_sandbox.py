"""docs/sandbox.md typed as written: each test is a claim of the document that the program did not
keep (or a message a new user could not act on), checked through rnx against a real daemon."""
import os
import shutil

import pytest

RUNSC = shutil.which("runsc") or ("/usr/bin/runsc" if os.path.exists("/usr/bin/runsc") else None)
needs_runsc = pytest.mark.skipif(RUNSC is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")


@needs_runsc
def test_status_detail_shows_a_gvisor_jobs_sandbox_uid(daemon):
    """docs/sandbox.md, "Host uids": "`rnx job status --detail` shows it as `sandbox_uid`"; the
    text view printed the job's uid only (the sandbox uid was in --json alone)."""
    d = daemon
    jid = d.submit("true", isolation="gvisor")
    d.wait(jid, timeout=60)
    status, o = d.api("GET", f"/v1/jobs/{jid}?detail=1")
    assert status == 200, o
    sb = o["detail"]["spec"]["sandbox_uid"]
    assert sb and sb > 0, o["detail"]["spec"]
    p = d.rnx("job", "status", "--detail", jid, check=True)
    assert f"Sandbox uid: {sb} " in p.stdout, p.stdout
    # a native job has none, and says nothing of one
    nid = d.submit("true")
    d.wait(nid)
    p = d.rnx("job", "status", "--detail", nid, check=True)
    assert "Sandbox uid" not in p.stdout, p.stdout
