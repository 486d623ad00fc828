"""An array's tasks are not made while rows of any kind that a failed commit lost wait to be
written again (core/queue.c offer: state_unsaved). When only rows other than jobs' and
workflows' waited (here the GPUs' service state, table gpu_admin, from `rnx gpu online` while
another process held the database's write lock), the commit that finally saved them asked for
no scheduler pass (core/state.c resync): on a daemon otherwise idle the array's tasks were
never made once the lock went (failed before 7828a44d: QUEUED, none made, after 150 s, its wait
still saying that the database cannot be written)."""
import os

from conftest import DbLock, ROOT, tasks_of, wait_array

FIX = os.path.join(ROOT, "tests", "fixtures")
# (account_cache_s: the refresh of the owner's account, 45 s after its look-up, asks for a pass
# of its own (core/nsscache.c wake): that would make the tasks whatever the commit asked)
CONFIG = f"gpu:\n  fixture: {FIX}/a100-pcie-4/machine.json\n  scrub: 0\nserver:\n  account_cache_s: 3600\n"


def test_an_array_held_back_by_unsaved_gpu_rows_runs_once_they_are_saved(fresh_daemon):
    d = fresh_daemon(CONFIG)
    gpus = [str(i) for i in range(4)]
    for g in gpus:
        d.rnx("gpu", "drain", g, check=True)
    # every GPU out of service: the array waits, none of its tasks made
    code, a = d.api("POST", "/v1/jobs", {"command": "true", "array": "0-3", "gpu_count": 1})
    assert code == 201, a
    aid = a["id"]
    try:
        assert tasks_of(d, aid) == []
        lock = DbLock(d.state)
        try:
            # back in service in this joblet, not saved (answered 503: "not saved"): only the
            # gpu_admin rows wait, no job's and no workflow's or array's
            codes = [d.rnx("gpu", "online", g).returncode for g in gpus]
            assert any(codes), codes
            # the pass the change asked for found rows waiting: nothing made
            st = d.job(aid)
            assert tasks_of(d, aid) == [], st
        finally:
            lock.release()
        # no request from here on, reads aside: only the commit that saves those rows at last
        # (a resync, within a minute of the lock's going) can let the array's tasks be made
        a = wait_array(d, aid, timeout=150)
        assert a["status"] == "COMPLETED", (a, d.log()[-3000:])
        assert sorted(t["status"] for t in tasks_of(d, aid)) == ["COMPLETED"] * 4
    finally:
        d.rnx("job", "cancel", aid)
