"""Lighthouse (npm `lighthouse`, pinned in scripts/install-deps.sh, installed under
/opt/joblet-test/lighthouse) on every console page, in Debian's chromium (CHROME_PATH, headless,
--no-sandbox), signed in through `rnx console`'s link: accessibility and best practices must
both score 1.00. The pages hold what they show in use: a running job, a queued one, an ended one,
a workflow, a job array and its running task, a drained and an offline GPU (every badge colour the
pages draw). Skipped, with the reason, only where lighthouse, node or chromium is not installed."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT, tasks_of, wait_for
from console_util import Console, OwnNetwork

PREFIX = os.environ.get("JOBLET_LIGHTHOUSE_PREFIX", "/opt/joblet-test/lighthouse")
LH = os.path.join(PREFIX, "node_modules", "lighthouse", "package.json")
NODE, CHROMIUM = shutil.which("node"), shutil.which("chromium")
FIX = os.path.join(ROOT, "tests", "fixtures")
RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lighthouse_console.mjs")

pytestmark = pytest.mark.skipif(not (os.path.exists(LH) and NODE and CHROMIUM),
                                reason=f"needs lighthouse under {PREFIX} (npm), node and chromium: scripts/install-deps.sh")


def test_every_console_page_scores_1_in_accessibility_and_best_practices(fresh_daemon):
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n")
    run = d.rnx("job", "run", "--gpu=1", "--name=train", "sh", "-c", "echo started; exec sleep 600",
                check=True).stdout.split()[-1]
    queued = d.rnx("job", "run", "--gpu=8", "sleep", "600", check=True).stdout.split()[-1]
    ended = d.rnx("job", "run", "--name=fails", "sh", "-c", "echo 'it is over'; exit 3", check=True).stdout.split()[-1]
    d.wait(ended)
    # an array (its row in the Jobs table has the button that shows its tasks) and its running task
    arr = d.api("GET", "/v1/jobs/" + d.rnx("job", "run", "--array=0-2%1", "sleep", "600", check=True).stdout.split()[-1])[1]["id"]
    task = wait_for(lambda: tasks_of(d, arr), "the array's first task")[0]["id"]
    d.rnx("workflow", "run", os.path.join(ROOT, "examples", "diamond.yaml"), check=True)
    d.rnx("gpu", "drain", "3", check=True)
    d.rnx("gpu", "offline", "4", check=True)
    pages = ["#/gpus", "#/jobs", f"#/jobs/{run}", f"#/jobs/{ended}", f"#/jobs/{arr}", f"#/jobs/{task}", "#/queue",
             "#/workflows", "#/history", "#/admin"]
    # rnx console, lighthouse and chromium in a network namespace of their own, with only its
    # loopback (console_util.OwnNetwork: the suite's network tests change the host's links)
    with OwnNetwork() as net:
        con = Console(d, prefix=net.inside)
        try:
            p = subprocess.run([*net.inside, NODE, RUNNER, PREFIX, con.url, *pages], capture_output=True, text=True,
                               env={**os.environ, "CHROME_PATH": CHROMIUM})
        finally:
            con.stop()
            for j in (run, queued, arr):
                d.rnx("job", "stop", j)
    assert p.returncode == 0, p.stderr[-4000:]
    results = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    assert [r["page"] for r in results] == pages, p.stdout[-2000:] + p.stderr[-2000:]
    bad = []
    for r in results:
        print(r["page"], f'{r["ms"] / 1000:.1f} s', r["scores"], r["warnings"] or "")
        assert r["error"] is None, json.dumps(r, indent=1)
        # the page drew what it is for, signed in (a signed-out page would score 1 and prove nothing)
        # (what failed on the page, whole: the assertion's own text would be cut short)
        assert "holds no console key" not in r["main"] and r["main"].strip(), json.dumps(r, indent=1)
        if r["scores"] != {"accessibility": 1, "best-practices": 1}:
            bad.append(r)
    assert not bad, "\n".join(
        f"{r['page']}: {r['scores']}\n" + "\n".join(f"  {f['category']}/{f['id']}: {f['title']}\n    " + "\n    ".join(f["items"])
                                                  for f in r["failing"]) for r in bad)
    byp = {r["page"]: r["main"] for r in results}
    assert "GPU 7" in byp["#/gpus"] and "train" in byp[f"#/jobs/{run}"] and "Audit trail" in byp["#/admin"]
    assert "SLURM_ARRAY_JOB_ID" in byp[f"#/jobs/{arr}"] and "SLURM_ARRAY_JOB_ID" in byp[f"#/jobs/{task}"]
