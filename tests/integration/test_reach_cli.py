"""rnx's refusals and failures that a coverage run of src/cli found no test reached, each
through the real rnx against the real daemon: what it refuses is named (the path, the flag or
the field, and what is accepted), the exit status is docs/cli.md's (1 a failure, 2 a usage
error), and nothing is done on a refusal.

- rnx job cp into a job (cmd_cp.c copy_in): a tar from stdin into no directory or a file; a
  DEST ending in '/' that is no directory; a directory onto a file; '.' as SRC; a FIFO in the
  source left out with a word while the rest arrives;
- rnx job cp out of a job (copy_out): stdout that cannot be written (/dev/full);
- rnx job batch (cmd_batch.c cmd_batch_plan): no SCRIPT, a directory, a missing or too large
  script; --export=NAME not set here is left out with a note; a '#!' line's argument is kept;
- rnx job update (cmd_job.c job_update): nothing to change; --after=none with jobs named;
- --upload=/ and a '..' that leads nowhere (upload.c top_name);
- rnx workflow validate of a directory or a file over 1 MiB (wfparse.c wfp_parse_file);
- rnx node add / show refusals (cmd_node.c), with a config file of the test's own;
- rnx job wait of a job deleted (cmd_wait.c);
- rnx job exec's refusals (cmd_exec.c), nothing started; rnx gpu, network, volume, node and
  runtime without a command, with one unknown, with operands or flags that are not theirs, and
  'help' as a command; a nodes file rnx will not read (cmd_node.c conf_read);
- rnx runtime export to a directory (refused before the download) or to a FILE that cannot be
  made (named as given, not only as FILE.part); runtime import of a directory;
- rnx job status of a job with a read-only volume (print.c print_job's Volumes line);
- rnx job status of a job lost (its shim SIGKILLed): print.c fmt_end_reason's "lost", which
  left out joblet's words on why and where to look."""
import json
import os
import shutil
import signal
import socket
import tempfile

import subprocess

import pytest

from conftest import BUILD, SANITIZER_MARKS, wait_for


@pytest.fixture(scope="module")
def job(daemon):
    """A running job with /work/d (a directory) and /work/f (a file)."""
    p = daemon.rnx("--json", "job", "run", "sh", "-c",
                   "mkdir -p /work/d && printf x > /work/f && touch /tmp/.ready && exec sleep 300", check=True)
    jid = json.loads(p.stdout)["id"]
    wait_for(lambda: daemon.api("GET", f"/v1/jobs/{jid}/archive?path=/tmp/.ready&stat=1")[0] == 200,
             "the job ready")
    yield jid
    daemon.rnx("job", "kill", jid)
    daemon.wait(jid)
    daemon.rnx("job", "delete", jid)


@pytest.fixture
def tmp():
    t = tempfile.mkdtemp(prefix="joblet-reach-cli-")
    yield t
    shutil.rmtree(t, ignore_errors=True)


def rnx_in(d, *args, cwd=None, stdout=subprocess.PIPE, env=None):
    """rnx run in cwd, its stdout where given (a file object: /dev/full)."""
    p = subprocess.run([os.path.join(BUILD, "rnx"), *args], cwd=cwd, stdout=stdout, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, text=True, timeout=120, env={**d.rnx_env(), **(env or {})})
    for mark in SANITIZER_MARKS:
        assert mark not in p.stderr, p.stderr
    return p


def kind(d, jid, path):
    """What is at path in the job ("file", "dir", ...), None when nothing."""
    code, ans = d.api("GET", f"/v1/jobs/{jid}/archive?path={path}&stat=1")
    return ans.get("type") if code == 200 else None


def test_cp_into_a_job_refusals_name_the_destination_and_copy_nothing(daemon, job, tmp):
    src = os.path.join(tmp, "src")
    os.mkdir(src)
    with open(os.path.join(src, "a"), "w") as f:
        f.write("a")
    cases = [(("-", f"{job}:/work/nope"), f"{job}:/work/nope: no such directory; a tar from stdin goes into a directory"),
             (("-", f"{job}:/work/f"), f"{job}:/work/f: not a directory; a tar from stdin goes into a directory"),
             ((os.path.join(src, "a"), f"{job}:/work/nope/"), f"{job}:/work/nope/: no such directory"),
             ((src, f"{job}:/work/f"), f"{job}:/work/f exists and is not a directory: a directory cannot replace it"),
             ((src + "/.", f"{job}:/work/d"), f"{src}/.: name the directory itself (e.g. its full path)")]
    for args, why in cases:
        p = daemon.rnx("job", "cp", *args, input="")
        assert p.returncode == 1 and p.stderr == f"rnx: {why}\n", (args, p.returncode, p.stderr)
    p = rnx_in(daemon, "job", "cp", ".", f"{job}:/work/d", cwd=src)
    assert p.returncode == 1 and p.stderr == "rnx: .: name the directory itself (e.g. its full path)\n", p.stderr
    # nothing landed: /work/f still the file, /work/nope absent, /work/d empty
    assert kind(daemon, job, "/work/f") == "file" and kind(daemon, job, "/work/nope") is None
    for name in ("a", "src", "nope"):
        assert kind(daemon, job, f"/work/d/{name}") is None


def test_cp_into_a_job_leaves_a_fifo_out_with_a_word(daemon, job, tmp):
    src = os.path.join(tmp, "sp")
    os.mkdir(src)
    with open(os.path.join(src, "a"), "w") as f:
        f.write("a")
    os.mkfifo(os.path.join(src, "fifo"))
    p = daemon.rnx("job", "cp", src, f"{job}:/work/d/")
    assert p.returncode == 0, p.stderr
    assert f"rnx: {src}/fifo: not a file, directory or symlink; left out\n" in p.stderr, p.stderr
    assert kind(daemon, job, "/work/d/sp/a") == "file" and kind(daemon, job, "/work/d/sp/fifo") is None
    # -q: the same copy says nothing
    p = daemon.rnx("job", "cp", "-q", src, f"{job}:/work/d/sp2")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert kind(daemon, job, "/work/d/sp2/a") == "file" and kind(daemon, job, "/work/d/sp2/fifo") is None


def test_cp_out_to_a_full_stdout_fails_saying_so(daemon, job):
    with open("/dev/full", "w") as full:
        p = rnx_in(daemon, "job", "cp", f"{job}:/work/f", "-", stdout=full)
    assert p.returncode == 1 and p.stderr == "rnx: writing stdout: No space left on device\n", p.stderr


def test_batch_refusals_name_the_script(daemon, tmp):
    before = daemon.job_count()
    p = daemon.rnx("job", "batch")
    assert p.returncode == 2 and p.stderr == ("rnx: job batch: missing SCRIPT; usage: rnx job batch [OPTIONS] "
                                              "SCRIPT [ARGS...] (or --wrap=COMMAND)\n"), p.stderr
    p = daemon.rnx("job", "batch", tmp)
    assert p.returncode == 2 and p.stderr == f"rnx: job batch: {tmp}: not a regular file\n", p.stderr
    p = daemon.rnx("job", "batch", f"{tmp}/none.sh")
    assert p.returncode == 2 and p.stderr == f"rnx: job batch: {tmp}/none.sh: No such file or directory\n"
    big = os.path.join(tmp, "big.sh")
    with open(big, "w") as f:
        f.write("#!/bin/sh\n")
        f.truncate((4 << 20) + 1)
    p = daemon.rnx("job", "batch", big)
    assert p.returncode == 2 and p.stderr == (f"rnx: job batch: {big}: 4194305 bytes; a batch script is at most "
                                              "4194304 (send data with --upload)\n"), p.stderr
    assert daemon.job_count() == before


def test_batch_export_of_a_name_not_set_is_left_out_with_a_note(daemon, tmp):
    s = os.path.join(tmp, "s.sh")
    with open(s, "w") as f:
        f.write("#!/bin/sh -e\necho \"x=$JRC_X y=$JRC_Y\"\n")
    p = daemon.rnx("--json", "job", "batch", "--export=JRC_X,JRC_Y", s, env={"JRC_Y": "yy"})
    assert p.returncode == 0, p.stderr
    assert p.stderr == "rnx: note: --export=JRC_X: not set here; left out\n", p.stderr
    j = json.loads(p.stdout)
    # the '#!' line's argument is kept: /bin/sh -e /work/s.sh
    assert j["command"] == "/bin/sh" and j["args"] == ["-e", "/work/s.sh"], j
    assert j["env"] == {"JRC_Y": "yy"}, j
    assert daemon.wait(j["id"])["status"] == "COMPLETED"
    assert daemon.output(j["id"]) == "x= y=yy\n"
    daemon.rnx("job", "delete", j["id"], check=True)


def test_update_refusals_change_nothing(daemon):
    jid = daemon.submit("sleep", "300", priority=3)
    try:
        p = daemon.rnx("job", "update", jid)
        assert p.returncode == 2 and p.stderr.startswith(
            "rnx: job update: nothing to change; give --priority, --max-runtime,"), p.stderr
        other = daemon.submit("true")
        daemon.wait(other)
        p = daemon.rnx("job", "update", jid, "--after=none", f"--after={other}")
        daemon.rnx("job", "delete", other, check=True)
        assert p.returncode == 2 and p.stderr == ("rnx: --after: none removes the jobs it waits for; do not also "
                                                  "name some\n"), p.stderr
        p = daemon.rnx("job", "update", jid, "--priority=7", "--after=none", "--after=" + jid)
        assert p.returncode == 2 and "--after: none removes" in p.stderr, p.stderr
        assert daemon.job(jid)["priority"] == 3 and not daemon.job(jid).get("after"), daemon.job(jid)
    finally:
        daemon.rnx("job", "kill", jid)
        daemon.wait(jid)
        daemon.rnx("job", "delete", jid)


def test_upload_of_the_root_or_of_nowhere_is_refused(daemon, tmp):
    before = daemon.job_count()
    p = daemon.rnx("job", "run", "--upload=/", "true")
    assert p.returncode == 2 and p.stderr == ("rnx: --upload: /: cannot upload the root directory; name what is "
                                              "inside it\n"), p.stderr
    p = daemon.rnx("job", "run", f"--upload={tmp}/nowhere/..", "true")
    assert p.returncode == 2 and p.stderr == f"rnx: --upload: {tmp}/nowhere/..: No such file or directory\n"
    assert daemon.job_count() == before


def test_workflow_file_refusals(daemon, tmp):
    p = daemon.rnx("workflow", "validate", "/dev/null")
    assert p.returncode == 1 and p.stderr == "/dev/null: not a regular file\n", p.stderr
    wf = os.path.join(tmp, "w.yaml")
    with open(wf, "w") as f:
        f.write("jobs:\n" + "#" * (1 << 20) + "\n")
    p = daemon.rnx("workflow", "validate", wf)
    assert p.returncode == 1 and p.stderr == (f"{wf}:1:1: the file is 1048583 bytes; joblet keeps workflow files "
                                              "of at most 1 MiB\n"), p.stderr


def test_node_add_and_show_refusals(daemon, tmp):
    conf = {"RNX_CONFIG": os.path.join(tmp, "cfg")}
    p = daemon.rnx("node", "add", "n1", env=conf)
    assert p.returncode == 2 and p.stderr.startswith(
        "rnx: node add: want NAME and a node file (rnx node add NAME FILE.rnx.yml), or NAME and --socket PATH"), p.stderr
    p = daemon.rnx("node", "add", "n1", "--socket", "rel.sock", env=conf)
    assert p.returncode == 2 and p.stderr.startswith("rnx: node add: --socket: 'rel.sock' is not an absolute path")
    p = daemon.rnx("node", "add", "n1", f"{tmp}/none.rnx.yml", env=conf)
    assert p.returncode == 1 and p.stderr == f"rnx: node add: {tmp}/none.rnx.yml: No such file or directory\n"
    p = daemon.rnx("node", "add", "n1", tmp, env=conf)
    assert p.returncode == 1 and p.stderr == f"rnx: node add: {tmp}: not a node file (not a regular file)\n"
    assert not os.path.exists(conf["RNX_CONFIG"])
    p = daemon.rnx("node", "show", "a", "b", env=conf)
    assert p.returncode == 2 and p.stderr == "rnx: node show: want at most one NAME; usage: rnx node show [NAME]\n"
    p = daemon.rnx("node", "show", "nope", env=conf)
    assert p.returncode == 2 and p.stderr.startswith("rnx: node show: NAME: no node 'nope' in "), p.stderr
    # the local node, as text and as JSON
    p = daemon.rnx("node", "show", env=conf, check=True)
    assert p.stdout == f"node:     local (the default)\nsocket:   {daemon.sock}\n", p.stdout
    p = daemon.rnx("--json", "node", "show", env=conf, check=True)
    assert json.loads(p.stdout) == {"name": "local", "socket": daemon.sock, "current": True}


def test_wait_of_a_deleted_job_says_there_is_none(daemon):
    jid = daemon.submit("true")
    daemon.wait(jid)
    daemon.rnx("job", "delete", jid, check=True)
    p = daemon.rnx("job", "wait", jid)
    assert p.returncode == 125 and p.stderr == (f"rnx: job wait: no job matches '{jid}' (by id, id prefix or "
                                                "name)\n"), p.stderr



def test_status_of_a_lost_job_says_why_it_was_lost(daemon):
    """A job whose shim ended without its end record (here: SIGKILLed) is FAILED, end reason
    lost, and joblet says why (and where to look, when the shim wrote a log); rnx job status said
    only 'lost'."""
    jid = daemon.submit("sleep", "300")
    pid = daemon.wait_status(jid, "RUNNING")["pid"]
    with open(f"/proc/{pid}/stat") as f:
        st = f.read()
    shim = int(st[st.rindex(")") + 2:].split()[1])     # the job's init's parent: its shim
    with open(f"/proc/{shim}/comm") as f:
        assert f.read().strip() == "joblet-shim"
    os.kill(shim, signal.SIGKILL)
    j = daemon.wait(jid)
    assert (j["status"], j["end_reason"]) == ("FAILED", "lost"), j
    # (a SIGKILLed shim wrote no log: joblet says so, core/job_launch.c finalize)
    assert j["error"].startswith("the job's shim (pid ") and "ended without recording how the job ended" in \
        j["error"], j["error"]
    p = daemon.rnx("job", "status", jid, check=True)
    assert f"End reason: lost: {j['error']}\n" in p.stdout, p.stdout
    daemon.rnx("job", "delete", jid, check=True)


@pytest.mark.parametrize("args, rc, message", [
    (("gpu",), 2, "rnx: gpu: missing command (list, show, topo, drain, offline, online, gres-conf); "
                  "see 'rnx gpu --help'"),
    (("gpu", "show", "a/b"), 2, "rnx: gpu show: 'a/b' is not a GPU index or UUID"),
    (("gpu", "show", "x" * 200), 2, f"rnx: gpu show: '{'x' * 40}' is not a GPU index or UUID"),
    (("gpu", "show", ""), 2, "rnx: gpu show: the GPU is empty; give an index or a UUID (rnx gpu list)"),
    (("gpu", "list", "--force"), 2, "rnx: gpu list: --force is for drain, offline and online"),
    (("gpu", "topo", "x"), 2, "rnx: gpu topo: takes no arguments, got 'x'"),
    (("gpu", "drain"), 2, "rnx: gpu drain: expected one GPU (an index or a UUID); usage: rnx gpu drain [--force] GPU"),
    (("network",), 2, "rnx: network: missing command (create, list, remove); see 'rnx network --help'"),
    (("network", "list", "x"), 2, "rnx: network list: takes no arguments, got 'x'"),
    (("network", "list", "--cidr=10.0.0.0/24"), 2, "rnx: network list: --cidr is for 'rnx network create'"),
    (("network", "create"), 2, "rnx: network create: expected one NAME; usage: rnx network create NAME "
                               "--cidr=A.B.C.D/P"),
    (("network", "remove"), 2, "rnx: network remove: expected one NAME; usage: rnx network remove NAME"),
    (("network", "frob"), 2, "rnx: unknown command 'frob' for 'rnx network'; see 'rnx network --help'"),
    (("volume",), 2, "rnx: volume: missing command (create, list, remove); see 'rnx volume --help'"),
    (("volume", "list", "--size=1M"), 2, "rnx: volume list: --size and --type are for 'rnx volume create'"),
    (("volume", "create"), 2, "rnx: volume create: expected one NAME; usage: rnx volume create NAME --size=SIZE "
                              "[--type=filesystem|memory]"),
    (("volume", "frob"), 2, "rnx: unknown command 'frob' for 'rnx volume'; see 'rnx volume --help'"),
    (("node",), 2, "rnx: node: missing command (add, list, use, show, remove, disconnect); see 'rnx node --help'"),
    (("node", "frob"), 2, "rnx: unknown command 'frob' for 'rnx node'; see 'rnx node --help'"),
    (("runtime", "frob"), 2, "rnx: unknown command 'frob' for 'rnx runtime'; see 'rnx runtime --help'"),
])
def test_group_refusals_name_what_is_accepted(daemon, args, rc, message):
    p = daemon.rnx(*args)
    assert (p.returncode, p.stderr, p.stdout) == (rc, message + "\n", ""), p.stderr


@pytest.mark.parametrize("group", ["gpu", "network", "volume", "node"])
def test_group_help_as_a_command(daemon, group):
    p = daemon.rnx(group, "help")
    assert p.returncode == 0 and p.stdout.startswith(f"Usage: rnx {group} <command>") and p.stderr == "", p.stderr


def test_exec_refusals_start_nothing(daemon, job):
    cases = [((job,), "job exec: want a job and a command (rnx job exec ID sh -c 'ps'); see 'rnx job exec --help'"),
             ((job, "--"), "job exec: want a job and a command (rnx job exec ID sh -c 'ps'); see 'rnx job exec --help'"),
             (("", "ls"), "job exec: the ID is empty; usage: rnx job exec [flags] ID COMMAND [ARGS...]"),
             (("--env=1X=y", job, "ls"), "--env: '1X' is not a valid variable name; use letters, digits and '_', "
                                          "not starting with a digit"),
             (("-it", job, "ls"), "-t: your input is not a terminal; with a pipe or a file give -i alone (its stdout "
                                  "and stderr then stay apart), or run rnx from a terminal"),
             (("--workdir=rel", job, "ls"), "--workdir: workdir: 'rel' must be an absolute path without '..' "
                                            "(e.g. /work/src)"),
             ((job, ""), "command: is empty; give the program to run")]
    for args, why in cases:
        p = daemon.rnx("job", "exec", *args)
        assert (p.returncode, p.stderr) == (2, f"rnx: {why}\n"), (args, p.stderr)
    assert daemon.job(job)["status"] == "RUNNING"


def test_a_nodes_file_rnx_will_not_read_is_named(daemon, tmp):
    cfg = os.path.join(tmp, "cfg")
    env = {"RNX_CONFIG": cfg}
    os.mkdir(cfg)
    p = daemon.rnx("node", "list", env=env)
    assert (p.returncode, p.stderr) == (1, f"rnx: {cfg}: not a regular file\n")
    os.rmdir(cfg)
    with open(cfg, "w") as f:
        f.truncate(5 << 20)
    os.chmod(cfg, 0o600)
    p = daemon.rnx("node", "list", env=env)
    assert (p.returncode, p.stderr) == (1, f"rnx: {cfg}: larger than 4 MiB: not rnx's nodes file\n"), p.stderr
    os.chown(cfg, 1234, 1234)
    p = daemon.rnx("node", "list", env=env)
    assert (p.returncode, p.stderr) == (1, f"rnx: {cfg}: belongs to uid 1234, not to you (uid 0): rnx reads its "
                                           "nodes (and keys) only from a file of yours\n"), p.stderr
    assert os.path.getsize(cfg) == 5 << 20


def test_runtime_export_to_a_directory_or_nowhere_says_which_file(daemon, tmp):
    """A directory as FILE is refused before anything is asked of joblet (it was found only at
    the rename, once the whole archive came); a FILE that cannot be made is named as given,
    not only as rnx's FILE.part."""
    p = daemon.rnx("runtime", "export", "nosuch", tmp)
    assert p.returncode == 2 and p.stderr == (f"rnx: rnx runtime export: {tmp} is a directory; give the archive's "
                                              f"file name (e.g. {tmp}/nosuch.tar.zst)\n"), p.stderr
    out = f"{tmp}/no/such/out.tar.zst"
    p = daemon.rnx("runtime", "export", "nosuch", out)
    assert p.returncode == 1 and p.stderr == (f"rnx: {out}: No such file or directory (rnx writes it as "
                                              f"{out}.part, renamed once complete)\n"), p.stderr
    assert os.listdir(tmp) == []
    p = daemon.rnx("runtime", "import", tmp)
    assert p.returncode == 1 and p.stderr == f"rnx: {tmp}: not a file\n", p.stderr


def test_status_names_a_jobs_volumes_and_which_are_read_only(daemon):
    p = daemon.rnx("volume", "create", "reachcli", "--size=64MB", "--type=memory", check=True)
    p = daemon.rnx("--json", "job", "run", "--volume=reachcli:ro", "true", check=True)
    jid = json.loads(p.stdout)["id"]
    daemon.wait(jid)
    p = daemon.rnx("job", "status", jid, check=True)
    assert "\nVolumes: /volumes/reachcli (read-only)\n" in p.stdout, p.stdout
    daemon.rnx("job", "delete", jid, check=True)
    daemon.rnx("volume", "remove", "reachcli")   # (a memory volume is gone with its last job)
    assert "reachcli" not in daemon.rnx("volume", "list").stdout
