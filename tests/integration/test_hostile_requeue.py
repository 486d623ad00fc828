"""rnx job requeue of an ended job, as an unprivileged local user sees it (docs/batch.md, "Requeue
of an ended job"): it is the owner's (or an admin's) only, its history stays bounded however often
it runs again, and what a submission of the owner's could not ask for (a priority above 0, an
admin's to give) does not come back with it."""
import pytest

from conftest import api_as

OWNER = (4561, 4561)
OTHER = (4562, 4562)


@pytest.fixture(scope="module")
def d():
    from conftest import Daemon, need_root
    need_root()
    dm = Daemon().start()
    yield dm
    dm.cleanup()


def submit_as(d, user, command, *args, **fields):
    code, j = api_as(d, user, "POST", "/v1/jobs", {"command": command, "args": list(args), **fields})
    assert code == 201, j
    return j["id"]


def requeued_events(d, jid):
    return [e for e in d.events(jid) if e[0] == "requeued"]


def test_another_user_cannot_requeue_an_ended_job(d):
    jid = submit_as(d, OWNER, "true")
    d.wait(jid)
    code, e = api_as(d, OTHER, "POST", f"/v1/jobs/{jid}/requeue")
    assert code == 403 and "another user's job" in e["error"]["message"], e
    code, e = api_as(d, OTHER, "POST", f"/v1/jobs/{jid[:8]}/requeue?hold=1")
    assert code == 404, e
    assert d.job(jid)["status"] == "COMPLETED" and requeued_events(d, jid) == []


def test_an_admins_priority_does_not_come_back_with_the_owners_requeue(d):
    jid = submit_as(d, OWNER, "true", hold=True)
    # the owner may not raise it; root may, for this run
    assert api_as(d, OWNER, "POST", f"/v1/jobs/{jid}/update", {"priority": 50})[0] == 403
    code, j = d.api("POST", f"/v1/jobs/{jid}/update", {"priority": 50})
    assert code == 200 and j["priority"] == 50, j
    assert api_as(d, OWNER, "POST", f"/v1/jobs/{jid}/release")[0] == 200
    assert d.wait(jid)["status"] == "COMPLETED"
    # run again, by its owner, at 50: what no submission of theirs gets (it goes before everyone's
    # jobs and may preempt them), as often as they like
    code, e = api_as(d, OWNER, "POST", f"/v1/jobs/{jid}/requeue?hold=1")
    assert code == 403 and e["error"].get("field") == "priority", e
    assert "requeuing job" in e["error"]["message"] and "at priority 50" in e["error"]["message"], e
    assert "rnx job run --priority=0" in e["error"]["message"], e
    j = d.job(jid)
    assert (j["status"], j["preemptions"]) == ("COMPLETED", 0) and requeued_events(d, jid) == [], j
    # root may (it could give that priority)
    code, j = d.api("POST", f"/v1/jobs/{jid}/requeue?hold=1")
    assert code == 200 and (j["status"], j["priority"]) == ("HELD", 50), j
    d.api("POST", f"/v1/jobs/{jid}/cancel")
    # a job of the owner's own priority (0 or less) is the owner's to requeue
    low = submit_as(d, OWNER, "true", priority=-5)
    d.wait(low)
    code, j = api_as(d, OWNER, "POST", f"/v1/jobs/{low}/requeue")
    assert code == 200, j
    assert d.wait(low)["preemptions"] == 1


def test_history_stays_bounded_however_often_it_runs_again(d):
    jid = submit_as(d, OWNER, "true")
    d.wait(jid)
    for _ in range(30):
        code, e = api_as(d, OWNER, "POST", f"/v1/jobs/{jid}/requeue")
        assert code == 200, e
        d.wait(jid)
    j = d.job(jid)
    assert (j["status"], j["preemptions"]) == ("COMPLETED", 30), j
    events = d.events(jid)
    assert len(events) <= 64, len(events)  # JOB_EVENTS_MAX (core/job_events.h): the oldest dropped
    assert requeued_events(d, jid)[-1][1].startswith("requeued by uid 4561 after its end (run 30: COMPLETED")


def test_an_admins_hold_does_not_end_with_the_owners_cancel_and_requeue(d):
    """root holds the owner's job; the owner may not release it (403) but may cancel it: their
    requeue of it, canceled under root's hold, is refused as the release was (it was taken, and
    the job ran), a kill -9 later too; root's requeue is taken, and the job is the owner's again."""
    jid = submit_as(d, OWNER, "true", schedule_at="2030-01-01T00:00:00Z")
    code, e = d.api("POST", f"/v1/jobs/{jid}/hold")
    assert code == 200, e
    code, e = api_as(d, OWNER, "POST", f"/v1/jobs/{jid}/release")
    assert code == 403, e
    code, e = api_as(d, OWNER, "POST", f"/v1/jobs/{jid}/cancel")
    assert code == 200, e
    assert d.job(jid)["status"] == "CANCELED"
    for hold in ("", "?hold=1"):
        code, e = api_as(d, OWNER, "POST", f"/v1/jobs/{jid}/requeue{hold}")
        assert code == 403 and "canceled while an admin held it" in e["error"]["message"], e
    d.kill9()
    d.start()
    code, e = api_as(d, OWNER, "POST", f"/v1/jobs/{jid}/requeue")
    assert code == 403, e
    assert d.job(jid)["status"] == "CANCELED" and requeued_events(d, jid) == []
    code, e = d.api("POST", f"/v1/jobs/{jid}/requeue?hold=1")
    assert code == 200 and d.job(jid)["status"] == "HELD", e
    code, e = d.api("POST", f"/v1/jobs/{jid}/cancel")
    assert code == 200, e
    # canceled under root's own hold again: but an owner's own hold is the owner's
    jid2 = submit_as(d, OWNER, "true", schedule_at="2030-01-01T00:00:00Z")
    assert api_as(d, OWNER, "POST", f"/v1/jobs/{jid2}/hold")[0] == 200
    assert api_as(d, OWNER, "POST", f"/v1/jobs/{jid2}/cancel")[0] == 200
    code, e = api_as(d, OWNER, "POST", f"/v1/jobs/{jid2}/requeue?hold=1")
    assert code == 200 and d.job(jid2)["status"] == "HELD", e
    api_as(d, OWNER, "POST", f"/v1/jobs/{jid2}/cancel")
