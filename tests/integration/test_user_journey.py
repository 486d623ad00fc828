"""The rough edges a new user hit with rnx (issue 26, items 3, 4, 5 and part of 9): every flag
of the request table in `rnx job run --help`, rnx(1) and completion; a warning for rnx's own
flags typed after the command; "not yours" for another user's job; refusals that name the
flags the user typed, not the API's fields.

Each test drives the built rnx (and, where a daemon is needed, the real joblet)."""
import json
import os
import re
import subprocess

import pytest

from conftest import BUILD, ROOT, Daemon, need_root, rnx_as

RNX = os.path.join(BUILD, "rnx")
NO_DAEMON = "/nonexistent/joblet-test-journey.sock"
OTHER = (4327, 4327)   # a uid with no job of its own (setpriv; no passwd entry needed)


def rnx(*args):
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JOBLET_SOCKET": NO_DAEMON}
    e.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    return subprocess.run([RNX, *args], capture_output=True, text=True, timeout=60, env=e)


def table_flags():
    """{API key: flag} for every row of the request table (src/common/jobreq.c) that has a
    flag: the source of truth the help, the man page and completion must follow."""
    src = open(os.path.join(ROOT, "src", "common", "jobreq.c")).read()
    rows = re.findall(r'\[JR_\w+\]\s*=\s*\{\s*"(\w+)",\s*(NULL|"[^"]*")', src)
    assert len(rows) > 30, "the table's rows were not found"
    return {key: flag.strip('"').split("=")[0] for key, flag in rows if flag != "NULL"}


# ---- item 3: help, man page, completion ---------------------------------------------------

def help_entries(text):
    """The flags `rnx job run --help` documents as entries of their own: "  --name NAME  ..."."""
    out = set()
    for line in text.split("\n"):
        m = re.match(r"^  (?:-\w, )?(--[\w-]+)", line)
        if m:
            out.add(m.group(1))
    return out


def man_source_text():
    """rnx(1) as text: the roff with its escapes and fonts taken out."""
    page = os.path.join(BUILD, "data", "rnx.1")
    assert os.path.exists(page), f"{page}: not built"
    t = open(page).read()
    return re.sub(r"\\f[BIRP]", "", t).replace("\\-", "-").replace("\\&", "").replace("\\e", "\\")


def test_every_flag_of_the_request_table_is_in_help_man_page_and_completion():
    flags = table_flags()
    assert {"--isolation", "--device", "--gpu", "--runtime"} <= set(flags.values()), flags
    p = rnx("job", "run", "--help")
    assert p.returncode == 0, p.stderr
    documented = help_entries(p.stdout)
    missing = {k: f for k, f in flags.items() if f not in documented}
    assert not missing, f"fields whose flag `rnx job run --help` does not document: {missing}"
    # the man page is made from the help, section "rnx job run"
    man = man_source_text()
    section = man.split("rnx job run", 1)[1]
    missing = {k: f for k, f in flags.items() if not re.search(r"(?m)^(?:\.TP\n)?.*" + re.escape(f) + r"\b", section)}
    assert not missing, f"fields whose flag rnx(1) does not document: {missing}"
    # completion: the candidates after "rnx job run -"
    c = rnx("completion", "complete", "--", "rnx", "job", "run", "-")
    assert c.returncode == 0, c.stderr
    cands = {l.split("\t")[0] for l in c.stdout.split("\n") if l and not l.startswith(":")}
    missing = {k: f for k, f in flags.items() if f not in cands}
    assert not missing, f"fields whose flag completion does not offer: {missing}"


def test_isolation_and_device_are_described_with_their_values():
    text = rnx("job", "run", "--help").stdout
    iso = re.search(r"^  --isolation (\S+)(.*(?:\n {10,}.*)*)", text, re.M)
    assert iso and "native" in iso.group(0) and "gvisor" in iso.group(0), text
    dev = re.search(r"^  --device (\S+)(.*(?:\n {10,}.*)*)", text, re.M)
    assert dev and "nvidia.com/gpu=" in dev.group(0), text
    # completion offers the isolation's values, read from the help
    c = rnx("completion", "complete", "--", "rnx", "job", "run", "--isolation=")
    assert {"native", "gvisor"} <= {l.split("\t")[0].split("=")[-1] for l in c.stdout.split("\n") if l}, c.stdout


# ---- item 4: rnx's flags typed after the command ---------------------------------------------

@pytest.fixture(scope="module")
def daemon_():
    need_root()
    d = Daemon(f"gpu:\n  fixture: {ROOT}/tests/fixtures/a100-pcie-4/machine.json\n").start()
    yield d
    d.cleanup()


def test_flags_after_the_command_are_the_jobs_with_a_warning(daemon_):
    d = daemon_
    p = d.rnx("--json", "job", "run", "echo", "one", "--max-cpu=50", "--name", "x", "-f", "--epochs=3", "-e")
    assert p.returncode == 0, p.stderr
    jid = json.loads(p.stdout)["id"]
    job = d.wait(jid)
    # the job ran as typed: every argument is the job's
    assert job["status"] == "COMPLETED", job
    assert d.output(jid) == "one --max-cpu=50 --name x -f --epochs=3 -e\n"
    assert job.get("max_cpu") in (None, 0), job
    # and rnx said which of them are its own flags, and how to give them to rnx
    warn = [l for l in p.stderr.split("\n") if l]
    assert len(warn) == 1, p.stderr
    w = warn[0]
    assert w.startswith("rnx: warning:"), w
    for own in ("--max-cpu=50", "--name", "-f", "-e"):
        assert own in w, (own, w)
    assert "--epochs" not in w, w   # not one of rnx's
    assert "before 'echo'" in w and "rnx job run --max-cpu=50 --name x -f -e echo" not in w, w
    assert "--" in w.split("before 'echo'", 1)[1], w   # says how to keep them the job's quietly


def test_no_warning_without_own_flags_or_after_a_double_dash(daemon_):
    d = daemon_
    for args in (["echo", "--epochs=3", "--gpus", "-x"], ["--", "echo", "--gpu=1", "-f"]):
        p = d.rnx("--json", "job", "run", *args)
        assert p.returncode == 0 and p.stderr == "", (args, p.stderr)
        d.wait(json.loads(p.stdout)["id"])


# ---- item 5: another user's job ------------------------------------------------------------

def test_another_users_job_is_not_yours_and_nothing_else_is_told(daemon_):
    d = daemon_
    jid = d.submit("sh", "-c", "sleep 1000", "secret-arg-7q", name="secret-name-7q")
    try:
        d.wait_status(jid, "RUNNING")
        for verb in (["job", "status", jid], ["job", "stop", jid], ["job", "log", "--no-follow", jid]):
            p = rnx_as(d, OTHER, *verb)
            assert p.returncode == 1, (verb, p.stdout, p.stderr)
            assert "another user's job" in p.stderr and "no job matches" not in p.stderr, (verb, p.stderr)
            for secret in ("secret-name-7q", "secret-arg-7q", "sleep", "RUNNING", "uid", " 0"):
                assert secret not in p.stderr.replace(jid, ""), (verb, secret, p.stderr)
        code, body = d.api("GET", f"/v1/jobs/{jid}")
        assert code == 200   # root's own
        # the API: 403 with the same words, for the owner nothing changed
        p = rnx_as(d, OTHER, "--json", "job", "status", jid)
        assert p.returncode == 1 and "another user's job" in p.stderr, p.stderr
        # a prefix or a name of another user's job tells nothing: as for a job that does not exist
        # (of the same form: an id prefix of digits alone may be a job's number, and rnx says so)
        if jid[:8].isdigit():
            other = "99999999" if jid[:8] != "99999999" else "99999998"
        else:
            other = "ffffffff" if jid[:8] != "ffffffff" else "eeeeeeee"
        for ref, nothing in ((jid[:8], other),
                             ("secret-name-7q", "no-such-name-7q")):
            a = rnx_as(d, OTHER, "job", "status", ref)
            b = rnx_as(d, OTHER, "job", "status", nothing)
            assert a.returncode == b.returncode == 1
            assert a.stderr.replace(ref, "REF") == b.stderr.replace(nothing, "REF"), (a.stderr, b.stderr)
            assert "another user" not in a.stderr, a.stderr
    finally:
        d.api("POST", f"/v1/jobs/{jid}/kill")
        d.wait(jid)


def test_another_users_workflow_is_not_yours(daemon_, tmp_path):
    d = daemon_
    wf = tmp_path / "wf.yaml"
    wf.write_text("jobs:\n  a:\n    command: sleep\n    args: ['1000']\n")
    p = d.rnx("--json", "workflow", "run", str(wf))
    assert p.returncode == 0, p.stderr
    wid = json.loads(p.stdout)["id"]
    try:
        p = rnx_as(d, OTHER, "workflow", "status", wid)
        assert p.returncode == 1 and "another user's workflow" in p.stderr, p.stderr
        assert "no workflow matches" not in p.stderr
    finally:
        d.rnx("workflow", "cancel", wid)


# ---- item 9 (part): refusals name the flags that were typed ----------------------------------

API_WORD = re.compile(r"\b(gpu_count|gpu_ids|gpu_all|gpu_mig|gpu_memory_mb|gpu_cc|gpu_type|devices|max_memory_mb)\b")


@pytest.mark.parametrize("args,flag", [
    (["--gpu=1", "--gpu-memory=100GB"], "--gpu-memory"),
    (["--gpu=2", "--gpu-memory=80GB"], "--gpu-memory"),
    (["--gpu=1", "--gpu-cc=9.0"], "--gpu-cc"),
    (["--gpu=2", "--gpu-ids=0"], "--gpu-ids"),
    (["--gpu-memory=4GB"], "--gpu-memory"),
    (["--device=nvidia.com/gpu=7"], "--device"),
    (["--gpu=1", "--device=nvidia.com/gpu=0"], "--device"),
    (["--gpu=all", "--gpu-ids=0"], "--gpu=all"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_refusals_name_the_flags_typed(daemon_, args, flag):
    d = daemon_
    before = d.job_count()
    p = d.rnx("job", "run", *args, "true")
    assert p.returncode in (1, 2), p.stderr
    assert p.stderr.startswith(f"rnx: {flag}:"), p.stderr
    assert not API_WORD.search(p.stderr), f"an API field's name where the user typed flags: {p.stderr}"
    assert d.job_count() == before


def test_the_api_names_gpu_memory_for_a_memory_refusal(daemon_):
    code, body = daemon_.api("POST", "/v1/jobs", {"command": "true", "gpu_count": 1, "gpu_memory_mb": 102400})
    assert code == 400 and body["error"]["field"] == "gpu_memory_mb", body
    assert body["error"]["message"].startswith("gpu_memory_mb: "), body
    code, body = daemon_.api("POST", "/v1/jobs", {"command": "true", "devices": ["nvidia.com/gpu=7"]})
    assert code == 400 and body["error"]["field"] == "devices", body
