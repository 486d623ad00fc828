"""Hostile review of batch 2 (task-by-task array dependencies, the per-owner indexes, suspended
time and the run-time limit, the shim's cost cuts) against the real daemon at log level debug
(where an index that disagrees with a scan aborts joblet)."""
import os
import time

import pytest

from test_arrays import LIMITS, array, wait_array
from test_dependencies import GATE, release

TERMINAL = {"COMPLETED", "FAILED", "STOPPED", "CANCELED"}


def run(d, *args):
    return d.rnx("job", "run", *args, check=True).stdout.strip()


def test_aftercorr_tasks_canceled_unmade_all_end_and_wake_dependents(fresh_daemon):
    """The array waited on task by task is canceled before any task was made: every task of the
    waiting array is canceled before it is made (more than a pass's 64), the array ends, and a
    job after it is decided (not left PENDING)."""
    d = fresh_daemon(LIMITS)
    gate = run(d, "sh", "-c", GATE)
    d.wait_status(gate, "RUNNING")
    b = run(d, "--array=0-199", f"--after={gate}", "/bin/true")
    a = run(d, "--array=0-199", f"--after={b}:corr", "/bin/true")
    post = run(d, f"--after={a}:any", "/bin/true")
    d.rnx("job", "cancel", b, check=True)
    done = wait_array(d, a, timeout=30)
    assert done["array"]["counts"] == {"CANCELED": 200}, done
    assert d.wait(post, timeout=30)["status"] == "COMPLETED"
    release(d, gate)
    d.wait(gate)
