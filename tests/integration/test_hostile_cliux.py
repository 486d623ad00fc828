"""A demanding user's bad input to rnx and the API: each refusal names the field and what is
accepted, exits non-zero, and nothing asked for is silently dropped (a flag's first value, a
kill's signal sent where the route does not read it)."""
import json

import pytest

from conftest import UnixHTTPConnection


def raw(d, method, path, body=b"", ctype="application/json"):
    """(status, parsed JSON answer) for a body sent as bytes, as given (not JSON, or with a NUL)."""
    c = UnixHTTPConnection(d.sock, timeout=30)
    c.request(method, path, body=body, headers={"Content-Type": ctype} if body else {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, json.loads(data) if data else None


def refused(d, args, words):
    before = d.job_count()
    p = d.rnx(*args)
    assert p.returncode == 2, (args, p.returncode, p.stdout, p.stderr)
    assert p.stdout == "", p.stdout
    for w in words:
        assert w in p.stderr, f"{w!r} not in {p.stderr!r}"
    assert d.job_count() == before, f"rnx {args} was refused but made a job"
    return p


# ---- rnx: a flag that takes one value, given two --------------------------------------------

def test_a_flag_given_two_values_is_refused_not_the_first_dropped(daemon):
    # sbatch and docker keep the last silently: a long line's --max-memory=100 ... =200 ran with 200
    refused(daemon, ["job", "run", "--max-memory=100", "--max-memory=200", "true"],
            ["'--max-memory' given twice", "'100', then '200'", "give it once"])
    refused(daemon, ["job", "run", "--name", "a", "--array=0-3", "--name", "b", "true"],
            ["'--name' given twice", "'a', then 'b'"])
    refused(daemon, ["job", "list", "--status", "RUNNING", "--status", "PENDING"],
            ["'--status' given twice", "'RUNNING', then 'PENDING'"])
    held = daemon.rnx("job", "run", "--hold", "true", check=True).stdout.strip()
    try:
        refused(daemon, ["job", "update", held, "--priority=-1", "--priority=-2"], ["'--priority' given twice"])
        assert daemon.job(held)["priority"] == 0, "the refused update changed the job"
    finally:
        daemon.api("POST", f"/v1/jobs/{held}/cancel")


def test_repeatable_flags_and_a_value_said_twice_still_work(daemon):
    p = daemon.rnx("job", "run", "-e", "A=1", "--env", "B=2", "--max-memory=64", "--max-memory=64",
                   "sh", "-c", "echo $A$B", check=True)
    jid = p.stdout.strip()
    job = daemon.wait(jid)
    assert job["status"] == "COMPLETED", job
    assert daemon.output(jid) == "12\n"


# ---- a comma list's empty item --------------------------------------------------------------

@pytest.mark.parametrize("flags, words", [
    # strtok_r dropped the empty item: 0,,1 ran as 0,1 (--cpu-cores=0,,1 and --array=1,,2 were refused)
    (["--gpu-ids=0,,1", "--gpu-optional"], ["--gpu-ids", "'0,,1' has an empty item", "0,1"]),
    (["--gpu-ids=0,", "--gpu-optional"], ["--gpu-ids", "'0,' has an empty item"]),
    (["--gpu=1", "--gpu-optional", "--gpu-caps=compute,,utility"],
     ["--gpu-caps", "'compute,,utility' has an empty item", "compute,utility"]),
])
def test_an_empty_item_in_a_comma_list_is_refused_not_dropped(daemon, flags, words):
    refused(daemon, ["job", "run", *flags, "true"], words)


def test_api_gpu_caps_with_an_empty_item_is_refused(daemon):
    code, e = daemon.api("POST", "/v1/jobs", {"command": "true", "gpu_count": 1, "gpu_optional": True,
                                               "gpu_caps": "compute,,utility"})
    assert code == 400 and e["error"]["field"] == "gpu_caps", (code, e)
    assert "has an empty item" in e["error"]["message"], e


def test_a_signal_warning_quotes_the_seconds_whole(daemon):
    p = refused(daemon, ["job", "run", "--max-runtime=100", "--signal=USR1@99999999999999999999", "true"],
                ['"99999999999999999999" is not a number of seconds'])
    assert '"9999999999999999" is' not in p.stderr


# ---- rnx job wait "" -------------------------------------------------------------------------

def test_job_wait_refuses_an_empty_id_as_the_other_commands_do(daemon):
    # it was asked for as GET /v1/jobs/ and said "no route GET /v1/jobs/; see docs/api.md" (125)
    p = daemon.rnx("job", "wait", "")
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "job wait: an ID is empty" in p.stderr, p.stderr
    assert "no route" not in p.stderr


@pytest.mark.parametrize("args, words", [
    (["volume", "remove", ""], ["volume remove: NAME is empty", "rnx volume list"]),
    (["volume", "create", "", "--size=10MB"], ["volume create: NAME is empty", "rnx volume create data"]),
    (["network", "remove", ""], ["network remove: NAME is empty", "rnx network list"]),
    (["runtime", "info", ""], ["operand 1 is empty", "rnx runtime info NAME"]),
    (["runtime", "remove", ""], ["operand 1 is empty", "rnx runtime remove NAME"]),
    (["gpu", "show", ""], ["gpu show: the GPU is empty", "an index or a UUID"]),
    (["gpu", "drain", ""], ["gpu drain: the GPU is empty", "an index or a UUID"]),
    (["job", "exec", "", "ls"], ["job exec: the ID is empty"]),
])
def test_an_empty_operand_is_a_usage_error_not_no_route(daemon, args, words):
    # each was sent with an empty path segment (DELETE /v1/volumes/) and answered "no route" (1)
    p = refused(daemon, args, words)
    assert "no route" not in p.stderr, p.stderr


# ---- the API: a number where a text is taken, reals, NUL -------------------------------------

def test_a_number_for_a_text_field_names_the_type_not_a_wrong_value(daemon):
    before = daemon.job_count()
    # "'5' is not a task list" said the value was wrong, while "5" is one
    code, e = daemon.api("POST", "/v1/jobs", {"command": "true", "array": 5})
    assert code == 400, (code, e)
    assert e["error"]["field"] == "array"
    assert "a number (5), not a string" in e["error"]["message"] and '"5"' in e["error"]["message"], e
    # a number whose text is refused too keeps the field's sentence
    code, e = daemon.api("POST", "/v1/jobs", {"command": "true", "isolation": 1})
    assert code == 400 and "use native or gvisor" in e["error"]["message"], e
    # a real is shown as sent, not as 'a fraction' (1e2 is none)
    code, e = daemon.api("POST", "/v1/jobs", {"command": "true", "priority": 1e2})
    assert code == 400, (code, e)
    assert e["error"]["field"] == "priority"
    assert "'100.0' must be a whole number from -1000 to 1000" in e["error"]["message"], e
    code, e = daemon.api("POST", "/v1/jobs", {"command": "true", "max_memory_mb": 1.5})
    assert code == 400 and "'1.5' is not a size" in e["error"]["message"], e
    assert daemon.job_count() == before


def test_a_nul_in_a_string_is_said_in_joblets_words(daemon):
    code, e = raw(daemon, "POST", "/v1/jobs", b'{"command": "true", "name": "a\\u0000b"}')
    assert code == 400, (code, e)
    msg = e["error"]["message"]
    assert "JSON_ALLOW_NUL" not in msg, msg
    assert "NUL character" in msg and "leave it out" in msg, msg


# ---- the API: an action's options in a body or a query key it does not read ------------------

def test_a_kill_with_its_signal_in_the_body_is_refused_not_a_sigkill(daemon):
    jid = daemon.rnx("job", "run", "sleep", "300", check=True).stdout.strip()
    try:
        daemon.wait_status(jid, "RUNNING")
        # the route reads ?signal=: the body's signal was dropped and the job SIGKILLed (200)
        code, e = daemon.api("POST", f"/v1/jobs/{jid}/kill", {"signal": "USR1"})
        assert code == 400, (code, e)
        assert e["error"]["field"] == "signal"
        assert "reads no request body" in e["error"]["message"] and "?signal=" in e["error"]["message"], e
        # a misspelt query key, the same
        code, e = raw(daemon, "POST", f"/v1/jobs/{jid}/kill?sig=USR1")
        assert code == 400, (code, e)
        assert e["error"]["field"] == "sig" and "?signal=SIG" in e["error"]["message"], e
        code, e = daemon.api("POST", f"/v1/jobs/{jid}/stop", {"force": True})
        assert code == 400 and "has no option 'force'" in e["error"]["message"], e
        code, e = raw(daemon, "POST", f"/v1/jobs/{jid}/hold?now=1")
        assert code == 400 and "takes no options" in e["error"]["message"], e
        code, e = raw(daemon, "POST", f"/v1/jobs/{jid}/stop", b"stop it")
        assert code == 400 and "not valid JSON" in e["error"]["message"], e
        assert daemon.job(jid)["status"] == "RUNNING", "a refused action acted"
        # none, or {}, is no option: the action goes on as asked
        code, j = daemon.api("POST", f"/v1/jobs/{jid}/stop", {})
        assert code == 200, (code, j)
    finally:
        daemon.api("POST", f"/v1/jobs/{jid}/kill")


def test_a_misspelt_filter_or_log_option_is_refused_not_ignored(daemon):
    # ?stauts=RUNNING answered every job, ?tial=1 the whole log: as if nothing had been asked
    code, e = raw(daemon, "GET", "/v1/jobs?stauts=RUNNING")
    assert code == 400, (code, e)
    assert e["error"]["field"] == "stauts" and "status, user, gpu, since, expand and fields" in e["error"]["message"], e
    jid = daemon.rnx("job", "run", "echo", "hi", check=True).stdout.strip()
    daemon.wait(jid)
    code, e = raw(daemon, "GET", f"/v1/jobs/{jid}/logs?tial=1")
    assert code == 400, (code, e)
    assert e["error"]["field"] == "tial" and "stream, follow, tail, since and format" in e["error"]["message"], e
    # the options it reads still work
    assert raw(daemon, "GET", "/v1/jobs?status=COMPLETED&expand=1")[0] == 200
    c = UnixHTTPConnection(daemon.sock, timeout=30)
    c.request("GET", f"/v1/jobs/{jid}/logs?tail=1&stream=stdout&format=ndjson")
    r = c.getresponse()
    assert r.status == 200, r.read()
    c.close()
