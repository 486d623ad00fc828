"""One job request schema (issue 12): the same bad request, given as `rnx job run` flags, as a
job of a workflow file run by `rnx workflow run`, and as a raw POST /v1/jobs, is refused with the
same sentence (rnx's naming other fields by their flags, issue 26) after each surface's own label ("--gpu: ", "FILE:L:C: job 'a': gpu_count: ",
"gpu_count: "), and nothing is created. The sentence comes from the schema's table
(src/common/jobreq.c), whichever side refuses: rnx locally (exit 2 for flags), or the daemon for
what depends on its machine (exit 1)."""
import json
import os
import re

import pytest


def machine_cpus():
    """This machine's online CPUs as the kernel lists them ("0-1"), and how many."""
    with open("/sys/devices/system/cpu/online") as f:
        text = f.read().strip()
    n = sum(int(b or a) - int(a) + 1 for a, _, b in (part.partition("-") for part in text.split(",")))
    return text, n


# Each case: flags (None: no flag can say it), the job's YAML lines under "a:" besides its command
# (None: a workflow file cannot say it), the API body's fields besides its command, the label of
# each surface (flag, YAML key, API field), where it is refused ("rnx": before anything is sent,
# "daemon": by the daemon, which knows the machine), and the sentence after the label. A sentence
# may be a function of the machine (its CPUs).
CASES = {
    # (gpu_count 0 is no GPU, accepted everywhere: test_gpu_count_0_is_no_gpu_on_every_surface)
    "gpu-count-minus-1": (["--gpu=-1"], "resources:\n  gpu_count: -1", {"gpu_count": -1},
                          ("--gpu", "gpu_count", "gpu_count"), "rnx",
                          "'-1' must be a number of GPUs from 0 to 64, or all"),
    "gpu-count-65": (["--gpu=65"], "resources:\n  gpu_count: 65", {"gpu_count": 65},
                     ("--gpu", "gpu_count", "gpu_count"), "rnx",
                     "'65' must be a number of GPUs from 0 to 64, or all"),
    "gpu-count-two": (["--gpu=two"], "resources:\n  gpu_count: two", {"gpu_count": "two"},
                      ("--gpu", "gpu_count", "gpu_count"), "rnx",
                      "'two' must be a number of GPUs from 0 to 64, or all"),
    "gpu-all-and-count": (["--gpu=all", "--gpu=2"], None, {"gpu_all": True, "gpu_count": 2},
                          ("--gpu=all", None, "gpu_all"), "rnx",
                          "asks for every GPU; do not also give gpu_count or gpu_ids"),
    "priority-5000": (["--priority=5000"], "resources:\n  priority: 5000", {"priority": 5000},
                      ("--priority", "priority", "priority"), "rnx",
                      "'5000' must be a whole number from -1000 to 1000 (higher runs first; default 0)"),
    "priority-minus-1001": (["--priority=-1001"], "resources:\n  priority: -1001", {"priority": -1001},
                            ("--priority", "priority", "priority"), "rnx",
                            "'-1001' must be a whole number from -1000 to 1000 (higher runs first; default 0)"),
    "max-memory-2": (["--max-memory=2"], "resources:\n  max_memory: 2", {"max_memory_mb": 2},
                     ("--max-memory", "max_memory", "max_memory_mb"), "rnx",
                     "'2' is not a size of at least 4 MB; use megabytes (4096) or a unit: 4096MB, 8GB"),
    "max-memory-bad-unit": (["--max-memory=12XB"], "resources:\n  max_memory: 12XB", {"max_memory_mb": "12XB"},
                            ("--max-memory", "max_memory", "max_memory_mb"), "rnx",
                            "'12XB' is not a size of at least 4 MB; use megabytes (4096) or a unit: 4096MB, 8GB"),
    "max-runtime-0": (["--max-runtime=0"], "resources:\n  max_runtime: 0", {"max_runtime_s": 0},
                      ("--max-runtime", "max_runtime", "max_runtime_s"), "rnx",
                      "'0' must be a duration from 1 second to 315360000 seconds (ten years): 90, 30s, 30min, "
                      "2h30m, 1d, or Slurm's H:MIN:SEC, D-H[:MIN[:SEC]]"),
    "max-cpu-0": (["--max-cpu=0"], "resources:\n  max_cpu: 0", {"max_cpu": 0},
                  ("--max-cpu", "max_cpu", "max_cpu"), "rnx",
                  "'0' must be a CPU percentage from 1 up: a whole number, 100 = one core (e.g. 50, 250)"),
    "max-cpu-lots": (["--max-cpu=lots"], "resources:\n  max_cpu: lots", {"max_cpu": "lots"},
                     ("--max-cpu", "max_cpu", "max_cpu"), "rnx",
                     "'lots' must be a CPU percentage from 1 up: a whole number, 100 = one core (e.g. 50, 250)"),
    "max-io-bps-fast": (["--max-iobps=fast"], "resources:\n  max_io_bps: fast", {"max_iobps": "fast"},
                        ("--max-iobps", "max_io_bps", "max_iobps"), "rnx",
                        "'fast' is not a rate of at least 1 byte per second; use 1048576, 512K, 10MB, 1G"),
    "cpu-cores-reversed": (["--cpu-cores=3-1"], "resources:\n  cpu_cores: 3-1", {"cpu_cores": "3-1"},
                           ("--cpu-cores", "cpu_cores", "cpu_cores"), "rnx",
                           "'3-1' is not a CPU list; use ranges and commas, e.g. 0-3 or 1,3,5"),
    "cpu-cores-letter": (["--cpu-cores=a"], "resources:\n  cpu_cores: a", {"cpu_cores": "a"},
                         ("--cpu-cores", "cpu_cores", "cpu_cores"), "rnx",
                         "'a' is not a CPU list; use ranges and commas, e.g. 0-3 or 1,3,5"),
    "network-bad-name": (["--network=no/such"], "network: no/such", {"network": "no/such"},
                       ("--network", "network", "network"), "rnx",
                       "'no/such' is not accepted; use none (loopback only), host, isolated, bridge or a network's name"),
    "workdir-relative": (["--workdir=rel/dir"], "workdir: rel/dir", {"workdir": "rel/dir"},
                         ("--workdir", "workdir", "workdir"), "rnx",
                         "'rel/dir' must be an absolute path without '..' (e.g. /work/src)"),
    "workdir-dotdot": (["--workdir=/a/../b"], "workdir: /a/../b", {"workdir": "/a/../b"},
                       ("--workdir", "workdir", "workdir"), "rnx",
                       "'/a/../b' must be an absolute path without '..' (e.g. /work/src)"),
    "env-bad-name": (["-e", "1BAD=x"], "environment: {1BAD: x}", {"env": {"1BAD": "x"}},
                     ("--env", "environment", "env"), "rnx",
                     "'1BAD' is not a valid variable name; use letters, digits and '_', not starting with a digit"),
    "secret-also-plain": (["-e", "A=1", "-s", "A=2"], "environment: {A: '1'}\nsecret_environment: {A: '2'}",
                          {"env": {"A": "1"}, "secret_env": {"A": "2"}},
                          ("--secret-env", "secret_environment", "secret_env"), "rnx",
                          "'A' is also set as a plain variable; give each variable once"),
    "gpu-cc-letters": (["--gpu=1", "--gpu-cc=x.y"], "resources:\n  gpu_count: 1\n  gpu_cc: x.y",
                       {"gpu_count": 1, "gpu_cc": "x.y"}, ("--gpu-cc", "gpu_cc", "gpu_cc"), "rnx",
                       "'x.y' is not a compute capability; give MAJOR.MINOR, e.g. 8.0 or 9.0"),
    "gpu-caps-warp": (["--gpu=1", "--gpu-caps=warp"], None, {"gpu_count": 1, "gpu_caps": "warp"},
                      ("--gpu-caps", None, "gpu_caps"), "rnx",
                      "'warp' is not a driver capability; use compute, utility, video, graphics, display, compat32 "
                      "or all"),
    "gpu-type-empty": (["--gpu=1", "--gpu-type="], "resources:\n  gpu_count: 1\n  gpu_type: ''",
                       {"gpu_count": 1, "gpu_type": ""}, ("--gpu-type", "gpu_type", "gpu_type"), "rnx",
                       "is empty; it must be a GPU model, e.g. H100 (rnx gpu list shows the names)"),
    "cross-numa-maybe": (["--gpu=1", "--cross-numa=maybe"], "resources:\n  gpu_count: 1\n  cross_numa: maybe",
                         {"gpu_count": 1, "cross_numa": "maybe"}, ("--cross-numa", "cross_numa", "cross_numa"), "rnx",
                         "'maybe' must be yes or no (true or false)"),
    "preemptible-maybe": (None, "resources:\n  preemptible: maybe", {"preemptible": "maybe"},
                          (None, "preemptible", "preemptible"), "rnx", "'maybe' must be true or false"),
    "gpu-share-without-memory": (["--gpu=1", "--gpu-share"], "resources:\n  gpu_count: 1\n  gpu_share: true",
                                 {"gpu_count": 1, "gpu_share": True}, ("--gpu-share", "gpu_share", "gpu_share"), "rnx",
                                 "a shared GPU needs a memory reservation; add gpu_memory_mb"),
    "gpu-share-two-gpus": (["--gpu=2", "--gpu-share", "--gpu-memory=1024"],
                           "resources:\n  gpu_count: 2\n  gpu_share: true\n  gpu_memory_mb: 1024",
                           {"gpu_count": 2, "gpu_share": True, "gpu_memory_mb": 1024},
                           ("--gpu-share", "gpu_share", "gpu_share"), "rnx",
                           "a shared job gets one GPU (each shared GPU has its own MPS server, and a CUDA process "
                           "talks to one); ask for gpu_count 1"),
    "gpu-memory-without-gpu": (["--gpu-memory=4GB"], "resources:\n  gpu_memory_mb: 4GB", {"gpu_memory_mb": 4096},
                               ("--gpu-memory", "gpu_memory_mb", "gpu_memory_mb"), "rnx",
                               "qualifies a GPU request, but the job asks for no GPU; add gpu_count"),
    "gpu-mig-and-count": (["--gpu=1", "--gpu-mig=1g.10gb"], "resources:\n  gpu_count: 1\n  gpu_mig: 1g.10gb",
                          {"gpu_count": 1, "gpu_mig": "1g.10gb"}, ("--gpu-mig", "gpu_mig", "gpu_mig"), "rnx",
                          "asks for one MIG device; do not also give gpu_count, gpu_ids, gpu_all or gpu_memory_mb "
                          "(the profile says its memory)"),
    "no-gpu-env-and-gpu": (["--gpu=1", "-e", "NVIDIA_VISIBLE_DEVICES=none"],
                           "environment: {NVIDIA_VISIBLE_DEVICES: none}\nresources:\n  gpu_count: 1",
                           {"gpu_count": 1, "env": {"NVIDIA_VISIBLE_DEVICES": "none"}},
                           ("--env", "environment", "env"), "rnx",
                           "NVIDIA_VISIBLE_DEVICES=none asks for no GPU, but the job also asks for GPUs; drop one of "
                           "the two"),
    "schedule-in-the-past": (["--schedule=2020-01-01T00:00:00Z"], None, {"schedule_at": "2020-01-01T00:00:00Z"},
                             ("--schedule", None, "schedule_at"), "rnx", "'2020-01-01T00:00:00Z' is in the past"),
    "schedule-not-a-time": (["--schedule=2026-13-01T00:00:00Z"], None, {"schedule_at": "2026-13-01T00:00:00Z"},
                            ("--schedule", None, "schedule_at"), "rnx",
                            "'2026-13-01T00:00:00Z' is not an RFC 3339 time (2026-11-22T15:04:05Z)"),
    # the machine's: only the daemon knows it
    "max-cpu-above-machine": (["--max-cpu=100000"], "resources:\n  max_cpu: 100000", {"max_cpu": 100000},
                              ("--max-cpu", "max_cpu", "max_cpu"), "daemon",
                              lambda text, n: f"'100000' must be a CPU percentage from 1 to {n * 100}: a whole "
                                              f"number, 100 = one core; this machine has {n} CPU{'s' * (n != 1)}"),
    "cpu-cores-offline": (["--cpu-cores=999"], "resources:\n  cpu_cores: 999", {"cpu_cores": "999"},
                          ("--cpu-cores", "cpu_cores", "cpu_cores"), "daemon",
                          lambda text, n: f"CPU 999 is not online; this machine has CPUs {text}"),
}


def _table_flags():
    """{API key: rnx job run's flag} for the fields of the schema's table whose key has a '_'."""
    src = open(os.path.join(os.path.dirname(__file__), "..", "..", "src", "common", "jobreq.c")).read()
    rows = re.findall(r'\[JR_\w+\]\s*=\s*\{\s*"(\w+)",\s*"([^"]+)"', src)
    return {k: f for k, f in rows if "_" in k}


TABLE_FLAGS = _table_flags()


def flag_words(text):
    """A sentence as rnx words it for a request built from flags: the API's field names in it
    are the flags (issue 26: "do not also give gpu_count" is "do not also give --gpu")."""
    return re.sub(r"(?<![\w.])(" + "|".join(TABLE_FLAGS) + r")(?![\w]|\.[\w.])", lambda m: TABLE_FLAGS[m.group(1)], text)


def sentence(case):
    s = CASES[case][5]
    return s(*machine_cpus()) if callable(s) else s


def snapshot(d):
    return d.job_count(), d.job_dirs(), len(d.api("GET", "/v1/workflows")[1]["workflows"])


def post(d, fields):
    """POST /v1/jobs {"command": "true", **fields}; a job it should not have made is removed again."""
    status, answer = d.api("POST", "/v1/jobs", {"command": "true", **fields})
    if status == 201:
        d.wait(answer["id"])
        d.api("DELETE", f"/v1/jobs/{answer['id']}")
    return status, answer


def yaml_text(body):
    lines = "".join(f"    {l}\n" for l in body.splitlines())
    return "jobs:\n  a:\n    command: 'true'\n" + lines


def test_the_cases_cover_every_surface():
    """At least 20 bad requests, each said on every surface that can say it, most on all three."""
    assert len(CASES) >= 20
    three = [c for c, v in CASES.items() if v[0] is not None and v[1] is not None]
    assert len(three) >= 20, three
    for c, (flags, yaml, api, labels, where, _) in CASES.items():
        assert (flags is None) == (labels[0] is None) and (yaml is None) == (labels[1] is None), c
        assert labels[2] and where in ("rnx", "daemon"), c


@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][0] is not None])
def test_flags(daemon, case):
    """`rnx job run FLAGS true`: "rnx: --flag: <sentence>", exit 2 when rnx refuses it itself."""
    flags, _, _, labels, where, _ = CASES[case]
    before = snapshot(daemon)
    p = daemon.rnx("job", "run", *flags, "true")
    assert p.stdout == "", p.stdout
    assert p.stderr == f"rnx: {labels[0]}: {flag_words(sentence(case))}\n", p.stderr
    assert p.returncode == (2 if where == "rnx" else 1), p.stderr
    assert snapshot(daemon) == before


@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][1] is not None])
def test_workflow_file(daemon, tmp_path, case):
    """`rnx workflow run FILE`: "FILE:L:C: job 'a': key: <sentence>", at the line that asked."""
    _, body, _, labels, _, _ = CASES[case]
    text = yaml_text(body)
    path = tmp_path / f"{case}.yaml"
    path.write_text(text)
    before = snapshot(daemon)
    p = daemon.rnx("workflow", "run", str(path))
    assert p.returncode == 1 and p.stdout == "", (p.stdout, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    m = re.match(rf"^{re.escape(str(path))}:(\d+):(\d+): job 'a': (.*)$", lines[0])
    assert m, p.stderr
    assert m.group(3) == f"{labels[1]}: {sentence(case)}", p.stderr
    # the line of the key that asked for the refused field
    want = next(i for i, l in enumerate(text.splitlines(), 1) if l.strip().startswith(labels[1] + ":"))
    assert int(m.group(1)) == want, (p.stderr, text)
    assert snapshot(daemon) == before


@pytest.mark.parametrize("case", list(CASES))
def test_api(daemon, case):
    """POST /v1/jobs: 400 {"field": key, "message": "key: <sentence>"}."""
    _, _, fields, labels, _, _ = CASES[case]
    before = snapshot(daemon)
    status, answer = post(daemon, fields)
    assert status == 400, answer
    err = answer["error"]
    assert err["code"] == "invalid_argument", err
    assert (err["field"], err["message"]) == (labels[2], f"{labels[2]}: {sentence(case)}"), json.dumps(err)
    assert snapshot(daemon) == before


def test_one_sentence_on_every_surface(daemon, tmp_path):
    """The three refusals of each case, side by side: after each surface's label, one sentence."""
    differ = []
    for case, (flags, body, fields, labels, _, _) in CASES.items():
        said = {}
        if flags is not None:
            p = daemon.rnx("job", "run", *flags, "true")
            said["flags"] = p.stderr.strip().removeprefix(f"rnx: {labels[0]}: ")
        if body is not None:
            path = tmp_path / f"{case}.yaml"
            path.write_text(yaml_text(body))
            p = daemon.rnx("workflow", "run", str(path))
            said["yaml"] = re.sub(rf"^{re.escape(str(path))}:\d+:\d+: job 'a': {re.escape(labels[1])}: ", "",
                                  p.stderr.strip())
        status, answer = post(daemon, fields)
        said["api"] = (answer["error"]["message"].removeprefix(f"{labels[2]}: ") if status == 400
                       else f"(HTTP {status})")
        if "flags" in said:   # in the words the user typed: flags for the API's fields
            said["flags"] = said["flags"] if said["flags"] != flag_words(said["api"]) else said["api"]
        if len(set(said.values())) != 1:
            differ.append((case, said))
    assert differ == [], "\n".join(f"{c}: {s}" for c, s in differ)


def test_gpu_count_0_is_no_gpu_on_every_surface(fresh_daemon, tmp_path):
    """gpu_count 0 asks for no GPU, as leaving it out does: `--gpu=0`, `gpu_count: 0` and
    {"gpu_count": 0} each make a job that runs with no GPU, stored with gpu_count 0."""
    d = fresh_daemon()
    p = d.rnx("job", "run", "--gpu=0", "true")
    assert p.returncode == 0 and p.stderr == "", (p.stdout, p.stderr)
    ids = [p.stdout.strip()]
    path = tmp_path / "zero.yaml"
    path.write_text(yaml_text("resources:\n  gpu_count: 0"))
    p = d.rnx("workflow", "run", "--follow", str(path))
    assert p.returncode == 0, (p.stdout, p.stderr)
    ids += [j["id"] for j in d.api("GET", "/v1/jobs")[1]["jobs"] if j["id"] not in ids]
    status, answer = d.api("POST", "/v1/jobs", {"command": "true", "gpu_count": 0})
    assert status == 201, answer
    ids.append(answer["id"])
    assert len(set(ids)) == 3, ids
    for i in ids:
        job = d.wait(i)
        assert job["status"] == "COMPLETED" and job["exit_code"] == 0, job
        assert job["gpus"] == [] and job["gpu_request"]["count"] == 0 and not job["gpu_request"]["all"], job


def test_the_api_takes_the_forms_its_refusals_name(daemon):
    """A refusal's one sentence names the text forms (`use megabytes (4096) or a unit: 4096MB,
    8GB`) on every surface, the API's too: the API takes them as strings (it refused "8GB" with a
    sentence that said to send 8GB)."""
    status, answer = daemon.api("POST", "/v1/jobs", {"command": "true", "max_memory_mb": "8GB",
                                                     "max_runtime_s": "1-2:00:00", "max_iobps": "10MB",
                                                     "max_cpu": "150%", "hold": True})
    assert status == 201, answer
    try:
        lim = daemon.job(answer["id"])["limits"]
        assert (lim["max_memory_mb"], lim["max_runtime_s"], lim["max_iobps"], lim["max_cpu"]) == \
            (8192, 93600, 10 * 1024 * 1024, 150), lim
    finally:
        daemon.api("DELETE", f"/v1/jobs/{answer['id']}?force=true")
    # still refused with the sentence when it is no such form, nothing made
    before = snapshot(daemon)
    status, answer = daemon.api("POST", "/v1/jobs", {"command": "true", "max_runtime_s": "2:00:00:00"})
    assert status == 400 and answer["error"]["field"] == "max_runtime_s", answer
    assert "H:MIN:SEC" in answer["error"]["message"], answer
    assert snapshot(daemon) == before


def test_an_update_takes_the_forms_too_and_only_for_its_own_field(daemon):
    """POST /v1/jobs/ID/update takes "8GB" and "2:00:00" as the numbers they are (the job shows
    8192, 7200); "gpu_count": "all" is gpu_all, a field no update changes: refused naming
    gpu_count and saying so (it was refused by a check of GPU ids that did not apply)."""
    status, answer = daemon.api("POST", "/v1/jobs", {"command": "true", "hold": True})
    assert status == 201, answer
    jid = answer["id"]
    try:
        status, answer = daemon.api("POST", f"/v1/jobs/{jid}/update", {"max_memory_mb": "8GB",
                                                                       "max_runtime_s": "2:00:00"})
        assert status == 200, answer
        lim = daemon.job(jid)["limits"]
        assert (lim["max_memory_mb"], lim["max_runtime_s"]) == (8192, 7200), lim
        status, answer = daemon.api("POST", f"/v1/jobs/{jid}/update", {"gpu_count": "all"})
        assert status == 400 and answer["error"]["field"] == "gpu_count", answer
        assert "sets another field than gpu_count, which an update does not change" in answer["error"]["message"], \
            answer
        # the same number again as text is no change
        status, answer = daemon.api("POST", f"/v1/jobs/{jid}/update", {"max_memory_mb": "8192MB"})
        assert status == 200, answer
        assert sum(ev == "updated" for ev, _ in daemon.events(jid)) == 1, daemon.events(jid)
    finally:
        daemon.api("POST", f"/v1/jobs/{jid}/cancel")
