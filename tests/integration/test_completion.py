"""Shell completion (rnx completion bash|zsh), the man pages rnx(1) and joblet(8), and what
meson install puts where (issue 15, "the expected extras").

The bash tests run the real script in a real bash: COMP_WORDS split as readline splits them
(COMP_WORDBREAKS: "--network=host" is three words), COMP_LINE and COMP_POINT set, the
function called, COMPREPLY read back. The zsh tests drive an interactive zsh through zpty and
press Tab. Most need no daemon; the ones completing job ids and GPUs run the real one.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import BUILD, ROOT, Daemon, need_root

RNX = os.path.join(BUILD, "rnx")
JOBLET = os.path.join(BUILD, "joblet")
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"
NO_DAEMON = "/nonexistent/joblet-test-completion.sock"


def rnx(*args, env=None):
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JOBLET_SOCKET": NO_DAEMON}
    e.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    e.update(env or {})
    return subprocess.run([RNX, *args], capture_output=True, text=True, timeout=60, env=e)


# ---- bash -------------------------------------------------------------------------------

def readline_words(line):
    """COMP_WORDS as bash makes them: split at blanks, and the word-break characters rnx's
    words contain ('=' and ':') as words of their own; a trailing blank starts an empty word."""
    words = []
    for chunk in line.split():
        words += [w for w in re.split(r"([=:]+)", chunk) if w]
    if not line or line[-1].isspace():
        words.append("")
    return words


BASH_DRIVER = r"""
set -u
if [[ -n ${WITH_BASH_COMPLETION:-} ]]; then source /usr/share/bash-completion/bash_completion; fi
set +u
source "$SCRIPT"
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=$LINE
COMP_POINT=${#LINE}
COMPREPLY=()
# outside readline, compopt refuses ("not currently executing completion function")
compopt() { return 0; }
_rnx rnx "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
"""


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory):
    p = rnx("completion", "bash")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    path = tmp_path_factory.mktemp("compl") / "rnx.bash"
    path.write_text(p.stdout)
    return str(path)


def complete_bash(script, line, socket_path=NO_DAEMON, cwd=None, with_bash_completion=False, env=None, again=True):
    """COMPREPLY for the command line `line` (the cursor at its end); `line` starts with
    "rnx", which stands for the built rnx."""
    assert line.startswith("rnx")
    line = RNX + line[3:]
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
         "JOBLET_SOCKET": socket_path, "SCRIPT": script, "LINE": line}
    e.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    if with_bash_completion:
        e["WITH_BASH_COMPLETION"] = "1"
    e.update(env or {})
    # rnx gives the daemon 3 s, then offers nothing (a shell never hangs on it): on a loaded
    # machine under ASan (the last full run) that can pass, so an empty answer from the daemon is
    # asked for again, twice
    for attempt in range(3 if socket_path != NO_DAEMON and again else 1):
        p = subprocess.run(["bash", "--norc", "--noprofile", "-c", BASH_DRIVER, "bash", *readline_words(line)],
                           capture_output=True, text=True, timeout=60, env=e, cwd=cwd)
        assert p.returncode == 0, p.stderr
        assert p.stderr == "", f"completion wrote to the terminal: {p.stderr!r}"
        got = [l for l in p.stdout.split("\n") if l]
        if got:
            break
    return got


def test_readline_split_is_bashs():
    assert readline_words("rnx job run --network=h") == ["rnx", "job", "run", "--network", "=", "h"]
    assert readline_words("rnx job ") == ["rnx", "job", ""]


def test_top_level_commands(bash_script):
    got = complete_bash(bash_script, "rnx ")
    assert {"job", "workflow", "gpu", "audit", "monitor", "volume", "runtime", "completion"} <= set(got), got
    assert complete_bash(bash_script, "rnx wo") == ["workflow"]
    assert complete_bash(bash_script, "rnx comp") == ["completion"]


def test_subcommands(bash_script):
    assert complete_bash(bash_script, "rnx job ru") == ["run"]
    assert {"run", "list", "status", "log", "stop", "cancel", "delete", "delete-all", "metrics"} <= \
        set(complete_bash(bash_script, "rnx job "))
    assert set(complete_bash(bash_script, "rnx gpu ")) >= {"list", "show", "topo", "drain", "offline", "online"}
    assert complete_bash(bash_script, "rnx workflow va") == ["validate"]
    # global flags before the command are skipped over, their values too
    assert complete_bash(bash_script, f"rnx --socket {NO_DAEMON} --json job ru") == ["run"]
    assert complete_bash(bash_script, "rnx --json=1 job ru") == ["run"]


def test_flags_long_and_short(bash_script):
    assert complete_bash(bash_script, "rnx job run --max-m") == ["--max-memory"]
    assert complete_bash(bash_script, "rnx job run --no") == []
    assert complete_bash(bash_script, "rnx job log --no") == ["--no-follow"]
    # "[-f|--no-follow]" in a usage line is two flags; -f is --follow's
    assert sorted(complete_bash(bash_script, "rnx job log -")) == sorted(
        ["--stream", "--follow", "-f", "--no-follow", "--json", "--help", "-h", "--tail", "--since", "-t",
         "--timestamps", "--stdout", "--stderr"])
    run_flags = complete_bash(bash_script, "rnx job run -")
    assert {"-e", "-s", "-f", "-h", "--env", "--secret-env", "--follow", "--upload", "--gpu"} <= set(run_flags)
    assert all(f.startswith("-") for f in run_flags)
    assert "-e" not in complete_bash(bash_script, "rnx job run --")
    assert set(complete_bash(bash_script, "rnx --")) >= {"--socket", "--json", "--version", "--help"}
    assert set(complete_bash(bash_script, "rnx audit --")) >= {"--user", "--gpu", "--job", "--since", "--until",
                                                               "--limit", "--json"}
    # a subcommand described in its group's help: the group's flags, and those its entry names
    assert "--force" in complete_bash(bash_script, "rnx gpu drain --")
    assert "--force" not in complete_bash(bash_script, "rnx gpu show --")
    assert "--json" in complete_bash(bash_script, "rnx gpu show --")
    assert set(complete_bash(bash_script, "rnx runtime build --")) >= {"--replace", "--fresh", "--verbose"}
    assert set(complete_bash(bash_script, "rnx volume create --")) >= {"--size", "--type"}


def test_enumerated_values(bash_script):
    assert complete_bash(bash_script, "rnx job run --network ") == ["none", "host", "isolated", "bridge"]
    assert complete_bash(bash_script, "rnx job run --network h") == ["host"]
    # "--network=h": readline replaces only what follows '='
    assert complete_bash(bash_script, "rnx job run --network=") == ["none", "host", "isolated", "bridge"]
    assert complete_bash(bash_script, "rnx job run --network=h") == ["host"]
    assert complete_bash(bash_script, "rnx job run --cross-numa ") == ["yes", "no"]
    assert complete_bash(bash_script, "rnx job log --stream ") == ["stdout", "stderr"]
    assert complete_bash(bash_script, "rnx volume create x --type=m") == ["memory"]
    assert complete_bash(bash_script, "rnx completion ") == ["bash", "zsh"]
    assert complete_bash(bash_script, "rnx job run --gpu ") == ["all"]
    states = ["PENDING", "SCHEDULED", "QUEUED", "RUNNING", "STOPPING", "PREEMPTED", "HELD", "SUSPENDED", "STOPPED",
              "COMPLETED", "FAILED", "CANCELED"]
    assert complete_bash(bash_script, "rnx job list --status ") == states
    assert complete_bash(bash_script, "rnx job list --status=RU") == ["RUNNING"]
    # a LIST: the next item after the comma
    assert complete_bash(bash_script, "rnx job run --gpu-caps compute,u") == ["compute,utility"]
    # values without a list (a size, a name) have no candidates, and nothing else is offered
    assert complete_bash(bash_script, "rnx job run --max-memory ") == []
    assert complete_bash(bash_script, "rnx job run --name ") == []


@pytest.fixture
def files(tmp_path):
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.bin").write_bytes(b"x")
    (tmp_path / "flow.yml").write_text("jobs: {}\n")
    (tmp_path / "recipe.yml").write_text("name: x\n")
    (tmp_path / "notes.txt").write_text("x\n")
    (tmp_path / "rt.tar.zst").write_bytes(b"x")
    return str(tmp_path)


def test_file_values(bash_script, files):
    c = lambda line: sorted(complete_bash(bash_script, line, cwd=files))
    assert c("rnx job run --upload tr") == ["train.py"]
    assert c("rnx job run --upload=tr") == ["train.py"]
    assert c("rnx job run --upload ") == ["data", "flow.yml", "notes.txt", "recipe.yml", "rt.tar.zst", "train.py"]
    assert c("rnx job run --upload data/") == ["data/x.bin"]
    assert c("rnx workflow run f") == ["flow.yml"]
    assert c("rnx workflow validate ") == ["data", "flow.yml", "notes.txt", "recipe.yml", "rt.tar.zst", "train.py"]
    # RECIPE.yml and FILE.tar.zst: files of that kind, and directories
    assert c("rnx runtime build ") == ["data", "flow.yml", "recipe.yml"]
    assert c("rnx runtime import ") == ["data", "rt.tar.zst"]
    assert c(f"rnx --socket {files}/n") == [f"{files}/notes.txt"]


def test_after_the_jobs_command_everything_is_the_jobs(bash_script, files):
    c = lambda line, **kw: sorted(complete_bash(bash_script, line, cwd=files, **kw))
    # COMMAND: commands
    assert "echo" in c("rnx job run --max-cpu=50 ech")
    assert "echo" in c("rnx job run -- ech")
    assert "echo" in c("rnx job run --name x -e A=1 ech")
    # its arguments: files, never rnx's flags
    everything = ["data", "flow.yml", "notes.txt", "recipe.yml", "rt.tar.zst", "train.py"]
    assert c("rnx job run sleep ") == everything
    assert c("rnx job run --max-memory 512MB python3 tr") == ["train.py"]
    assert c("rnx job run python3 --max-m") == []
    assert c("rnx job run python3 --network ") == everything
    assert c("rnx job run -- --max-m") == []


@pytest.mark.skipif(not os.path.exists(BASH_COMPLETION), reason="bash-completion is not installed")
def test_after_the_jobs_command_with_bash_completion(bash_script, files):
    """With bash-completion loaded, the job's command line is completed as that command's
    own (_command_offset, as sudo's is): still never rnx's flags."""
    run_flags = set(complete_bash(bash_script, "rnx job run --")) - {"--help", "--version"}
    got = complete_bash(bash_script, "rnx job run --max-cpu 50 sleep --", cwd=files, with_bash_completion=True)
    assert not run_flags & set(got), got
    assert "echo" in complete_bash(bash_script, "rnx job run ech", cwd=files, with_bash_completion=True)
    assert "train.py" in complete_bash(bash_script, "rnx job run cat tr", cwd=files, with_bash_completion=True)
    # and rnx's own words still complete with bash-completion loaded
    assert complete_bash(bash_script, "rnx job run --network=h", with_bash_completion=True) == ["host"]


def test_no_daemon_gives_no_candidates_and_no_noise(bash_script):
    for line in ("rnx job status ", "rnx job log --stream stdout ", "rnx gpu show ", "rnx volume remove ",
                 "rnx job run --runtime ", "rnx audit --job ", "rnx runtime log ", "rnx workflow status "):
        assert complete_bash(bash_script, line) == [], line


def test_a_daemon_that_does_not_answer_gives_nothing_within_seconds(bash_script, tmp_path):
    """A socket that accepts and never answers (a stuck daemon) must not hang the shell."""
    path = str(tmp_path / "stuck.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(16)
    held = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        start = time.monotonic()
        assert complete_bash(bash_script, "rnx job status ", socket_path=path, again=False) == []
        assert time.monotonic() - start < 30   # (rnx gives up after 3 s; a hang is 60 s)
    finally:
        stop.set()
        t.join()
        for s in held:
            s.close()
        srv.close()


def test_unknown_commands_give_nothing(bash_script):
    assert complete_bash(bash_script, "rnx nosuch ") == []
    assert complete_bash(bash_script, "rnx job nosuch --") == []
    assert complete_bash(bash_script, "rnx nosuch job --") == []


def test_completion_command_usage_errors():
    p = rnx("completion")
    assert p.returncode == 2 and "missing shell (bash or zsh)" in p.stderr
    p = rnx("completion", "fish")
    assert p.returncode == 2 and p.stderr == "rnx: completion: unknown shell 'fish'; rnx completes bash and zsh\n"
    p = rnx("completion", "bash", "zsh")
    assert p.returncode == 2 and "expected one shell" in p.stderr
    p = rnx("completion", "--help")
    assert p.returncode == 0 and p.stdout.startswith("Usage: rnx completion bash|zsh\n")
    assert "completion bash|zsh" in rnx("--help").stdout


# ---- with a daemon ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_daemon():
    need_root()
    d = Daemon(f"gpu:\n  fixture: {ROOT}/tests/fixtures/a100-pcie-4/machine.json\n").start()
    yield d
    d.cleanup()


def test_job_ids_and_names_from_the_daemon(bash_script, gpu_daemon):
    d = gpu_daemon
    jid = d.submit("sleep", "30", name="compl-train")
    other = d.submit("true", name="compl-twice")
    other2 = d.submit("true", name="compl-twice")
    d.wait_status(jid, "RUNNING")
    got = complete_bash(bash_script, "rnx job status ", socket_path=d.sock)
    assert {jid, other, other2, "compl-train"} <= set(got), got
    assert "compl-twice" not in got   # a name two jobs share names neither
    assert complete_bash(bash_script, "rnx job status compl-t", socket_path=d.sock) == ["compl-train"]
    assert complete_bash(bash_script, f"rnx job stop {jid[:6]}", socket_path=d.sock) == [jid]
    # flags before the id, the id's place after them
    assert jid in complete_bash(bash_script, "rnx job log --stream stderr ", socket_path=d.sock)
    assert jid in complete_bash(bash_script, "rnx job metrics --interval 1 ", socket_path=d.sock)
    # --socket on the command line is the daemon asked
    assert jid in complete_bash(bash_script, f"rnx --socket {d.sock} job status ")
    assert jid in complete_bash(bash_script, f"rnx --socket={d.sock} job status ")
    # audit --job ID is a job's
    assert jid in complete_bash(bash_script, "rnx audit --job ", socket_path=d.sock)
    # a finished job's command line: no ids after the one that was asked for
    assert complete_bash(bash_script, f"rnx job status {jid} ", socket_path=d.sock) == []
    d.api("POST", f"/v1/jobs/{jid}/stop")


def test_gpus_and_volumes_from_the_daemon(bash_script, gpu_daemon):
    d = gpu_daemon
    assert complete_bash(bash_script, "rnx gpu show ", socket_path=d.sock) == ["0", "1", "2", "3"]
    assert complete_bash(bash_script, "rnx gpu drain --force ", socket_path=d.sock) == ["0", "1", "2", "3"]
    assert complete_bash(bash_script, "rnx audit --gpu ", socket_path=d.sock) == ["0", "1", "2", "3"]
    p = d.rnx("volume", "create", "compl-vol", "--size=16MB", "--type=memory")
    assert p.returncode == 0, p.stderr
    assert complete_bash(bash_script, "rnx volume remove ", socket_path=d.sock) == ["compl-vol"]
    assert complete_bash(bash_script, "rnx job run --volume ", socket_path=d.sock) == ["compl-vol"]
    assert complete_bash(bash_script, "rnx job run --volume=compl", socket_path=d.sock) == ["compl-vol"]
    # a new volume's name is the user's to choose
    assert complete_bash(bash_script, "rnx volume create ", socket_path=d.sock) == []
    d.rnx("volume", "remove", "compl-vol")


def test_workflow_ids_from_the_daemon(bash_script, gpu_daemon, tmp_path):
    d = gpu_daemon
    flow = tmp_path / "flow.yaml"
    flow.write_text("jobs:\n  a:\n    command: true\n")
    p = d.rnx("workflow", "run", str(flow))
    assert p.returncode == 0, p.stderr
    wid = p.stdout.strip()
    assert wid in complete_bash(bash_script, "rnx workflow status --detail ", socket_path=d.sock)
    assert complete_bash(bash_script, f"rnx workflow cancel {wid[:8]}", socket_path=d.sock) == [wid]
    # a workflow's id is no job's
    assert wid not in complete_bash(bash_script, "rnx job status ", socket_path=d.sock)


# ---- drift: the help is the source ----------------------------------------------------------

def help_of(*path):
    p = rnx(*path, "--help")
    assert p.returncode == 0, (path, p.stderr)
    return p.stdout


def commands_in(text):
    """The first words of the entries of a help's "Commands:" section."""
    names, inside = [], False
    for line in text.split("\n"):
        if line and not line.startswith(" "):
            inside = line == "Commands:"
            continue
        m = re.match(r"^ {1,4}([a-z][\w-]*)", line)
        if inside and m and m.group(1) not in names:
            names.append(m.group(1))
    return names


def command_paths():
    """Every command of rnx as its help lists them: ("audit",), ("job", "run"), ..."""
    paths = []
    for top in commands_in(help_of()):
        subs = commands_in(help_of(top))
        paths += [(top, s) for s in subs] if subs else [(top,)]
    return paths


def documented_flags(path):
    """The flags `rnx PATH --help` documents for PATH: its option lines and the flags of its
    usage line (a subcommand described in its group's help: those of its entry). A help shared
    by several subcommands with a usage line each ("rnx monitor status [--json]", "rnx monitor
    watch [--interval S] ..."): a flag only a sibling's usage line names is the sibling's."""
    text = help_of(*path)
    flags = set()
    mine, siblings = set(), set()
    if len(path) == 2:
        for line in text.split("\n"):
            m = re.match(r"^(?:Usage: | +)rnx " + re.escape(path[0]) + r" ([a-z][\w-]*)(.*)$", line)
            if m:
                (mine if m.group(1) == path[1] else siblings).update(re.findall(r"\[--([a-z][\w-]*)", m.group(2)))
    own = re.search(r"^Usage: rnx " + re.escape(" ".join(path)) + r"(\s|$)", text, re.M) or \
        re.search(r"^\s+rnx " + re.escape(" ".join(path)) + r"(\s|$)", text, re.M)
    for line in text.split("\n"):
        m = re.match(r"^ {0,7}(?:-(\w), )?--([a-z][\w-]*)", line)
        if m:
            flags.add("--" + m.group(2))
            if m.group(1):
                flags.add("-" + m.group(1))
        if re.match(r"^(Usage: | +)rnx " + re.escape(" ".join(path)) + r"(\s|$)", line):
            flags |= {"--" + f for f in re.findall(r"\[--([a-z][\w-]*)", line)}
    if not own:   # the group's help: this subcommand's entry
        entry = re.search(r"^ {1,4}" + re.escape(path[-1]) + r"\b.*(?:\n {6,}.*)*", text, re.M)
        assert entry, (path, text)
        flags |= {"--" + f for f in re.findall(r"(?<![\w-])--([a-z][\w-]*)", entry.group(0))}
    return {f for f in flags if not (f[2:] in siblings and f[2:] not in mine)} if own else flags


PATHS = command_paths() if os.path.exists(RNX) else []


def test_every_command_is_completed(bash_script):
    tops = {p[0] for p in PATHS}
    assert tops <= set(complete_bash(bash_script, "rnx ")), tops
    for top in tops:
        subs = [p[1] for p in PATHS if p[0] == top and len(p) == 2]
        if subs:
            assert set(subs) == set(complete_bash(bash_script, f"rnx {top} ")), top
    assert ("job", "run") in PATHS and ("audit",) in PATHS and ("completion",) in PATHS


@pytest.mark.parametrize("path", PATHS, ids=[" ".join(p) for p in PATHS])
def test_documented_flags_are_completed_and_completed_flags_are_real(bash_script, path):
    """The drift guard, over every command: each flag its help documents is a candidate, and
    each candidate is a flag rnx takes (`rnx PATH FLAG --help` is no 'unknown flag')."""
    words = " ".join(path)
    listed = complete_bash(bash_script, f"rnx {words} -")
    assert len(listed) == len(set(listed)), f"rnx {words}: a flag offered twice: {listed}"
    got = set(listed)
    doc = documented_flags(path)
    assert doc <= got, f"rnx {words}: documented but not completed: {doc - got}"
    for flag in sorted(got):
        p = rnx(*path, flag, "--help")
        assert "unknown flag" not in p.stderr, f"rnx {words}: completes {flag}, which rnx refuses: {p.stderr}"


# ---- zsh --------------------------------------------------------------------------------

ZSH = shutil.which("zsh")
need_zsh = pytest.mark.skipif(not ZSH, reason="zsh is not installed (scripts/install-deps.sh installs it)")


@pytest.fixture(scope="module")
def zsh_script(tmp_path_factory):
    p = rnx("completion", "zsh")
    assert p.returncode == 0 and p.stderr == ""
    path = tmp_path_factory.mktemp("zcompl") / "_rnx"
    path.write_text(p.stdout)
    return str(path)


@need_zsh
def test_zsh_script_parses_and_registers(zsh_script, tmp_path):
    p = subprocess.run([ZSH, "-n", zsh_script], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert open(zsh_script).readline() == "#compdef rnx\n"
    # sourced after compinit (source <(rnx completion zsh)) it binds _rnx to rnx
    p = subprocess.run([ZSH, "-f", "-c", f"autoload -Uz compinit; compinit -u -d {tmp_path}/zcd; "
                        f"source {zsh_script}; print -r -- $_comps[rnx]"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stdout == "_rnx\n" and p.stderr == "", (p.stdout, p.stderr)
    # found in $fpath, compinit binds it by its #compdef line alone
    d = tmp_path / "fp"
    d.mkdir()
    shutil.copy(zsh_script, d / "_rnx")
    p = subprocess.run([ZSH, "-f", "-c", f"fpath=({d} $fpath); autoload -Uz compinit; "
                        f"compinit -u -d {tmp_path}/zcd2; print -r -- $_comps[rnx]"],
                       capture_output=True, text=True, timeout=30)
    assert p.stdout == "_rnx\n", (p.stdout, p.stderr)


ZSH_DRIVER = r"""
zmodload zsh/zpty || exit 3
hits=$1; shift
zpty z "PATH=$BIN:\$PATH zsh -f -i"
zpty -w z "autoload -Uz compinit; compinit -u -d $HITDIR/zcd; source $SCRIPT; cd $CWD"
# every match added (and not merely probed) is written to the hits file
zpty -w z 'compadd() { if (( ! ${@[(I)-[OAD]*]} )); then local -a __h; builtin compadd -O __h "$@"; print -rl -- $__h >> '$hits'; fi; builtin compadd "$@"; }'
zpty -w z "print -r -- SYNC >> $hits"
for i in {1..100}; do grep -q SYNC $hits 2>/dev/null && break; sleep 0.1; done
for line in "$@"; do
  print -r -- "== $line" >> $hits
  zpty -n -w z "$line"$'\t'
  zpty -n -w z $'\C-e\C-u'"print -r -- END >> $hits"$'\n'
  for i in {1..100}; do grep -q '^END$' $hits 2>/dev/null && break; sleep 0.1; done
  sed -i '/^END$/d' $hits
done
zpty -d z
"""


def complete_zsh(script, lines, tmp_path, cwd, socket_path=NO_DAEMON):
    """What zsh offers on Tab after each of lines, typed into an interactive zsh."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    if not (bindir / "rnx").exists():
        os.symlink(RNX, bindir / "rnx")
    hits = tmp_path / "hits"
    hits.write_text("")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "BIN": str(bindir),
           "SCRIPT": script, "CWD": cwd, "HITDIR": str(tmp_path), "JOBLET_SOCKET": socket_path, "TERM": "dumb"}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    p = subprocess.run([ZSH, "-f", "-c", ZSH_DRIVER, "zsh", str(hits), *lines], capture_output=True,
                       text=True, timeout=120, env=env)
    if p.returncode == 3:
        pytest.skip("zsh has no zpty module")
    assert p.returncode == 0, p.stderr
    out, cur = {}, None
    for l in hits.read_text().split("\n"):
        if l.startswith("== "):
            cur = l[3:]
            out[cur] = []
        elif l and cur is not None and l != "SYNC":
            out[cur].append(l)
    return out


@need_zsh
def test_zsh_completes_for_real(zsh_script, tmp_path, files):
    got = complete_zsh(zsh_script, ["rnx job ", "rnx job run --max-m", "rnx job run --network ",
                                    "rnx job run --network=h", "rnx job list --status R", "rnx ",
                                    "rnx job run --upload tr", "rnx runtime build ", "rnx job run python3 --m",
                                    "rnx job run sleep "], tmp_path, files)
    assert {"run", "list", "status", "log"} <= set(got["rnx job "]), got
    assert got["rnx job run --max-m"] == ["--max-memory"], got
    assert got["rnx job run --network "] == ["none", "host", "isolated", "bridge"], got
    assert got["rnx job run --network=h"] == ["--network=host"], got
    assert got["rnx job list --status R"] == ["RUNNING"], got
    assert {"job", "workflow", "gpu", "completion"} <= set(got["rnx "]), got
    assert got["rnx job run --upload tr"] == ["train.py"], got
    assert "recipe.yml" in got["rnx runtime build "] and "notes.txt" not in got["rnx runtime build "], got
    assert "--max-memory" not in got["rnx job run python3 --m"], got
    assert "train.py" in got["rnx job run sleep "], got


# ---- man pages ----------------------------------------------------------------------------

MAN1 = os.path.join(BUILD, "data", "rnx.1")
MAN8 = os.path.join(BUILD, "data", "joblet.8")


def groff_warnings(page):
    p = subprocess.run(["groff", "-man", "-ww", "-z", "-Tutf8", page], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stderr


def man_text(page):
    p = subprocess.run(["man", "--warnings", "-l", page], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "MANWIDTH": "200", "MAN_KEEP_FORMATTING": "", "PAGER": "cat"})
    assert p.returncode == 0 and p.stderr == "", p.stderr
    return re.sub(r".\x08", "", p.stdout)


@pytest.mark.skipif(not shutil.which("groff"), reason="groff is not installed")
@pytest.mark.parametrize("page", [MAN1, MAN8], ids=["rnx.1", "joblet.8"])
def test_man_pages_have_no_warnings(page):
    assert os.path.exists(page), f"{page}: not built"
    assert groff_warnings(page) == ""
    text = open(page).read()
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "FILES", "SEE ALSO"):
        assert f"\n.SH {section}\n" in text, section


@pytest.mark.skipif(not shutil.which("man"), reason="man is not installed")
def test_rnx_man_page_has_every_command():
    text = man_text(MAN1)
    assert text.startswith("RNX(1)")
    assert "rnx - run and manage jobs on a joblet daemon" in text
    headings = re.findall(r"^   (rnx .*)$", text, re.M)
    for path in PATHS:
        name = "rnx " + " ".join(path)
        if name in headings:
            continue
        # a subcommand without help of its own: its entry in its group's section
        group = "rnx " + path[0]
        assert group in headings, (name, headings)
        section = text.split(f"\n   {group}\n", 1)[1].split("\n   rnx ", 1)[0]
        assert re.search(r"^ {7}" + re.escape(path[1]) + r"\b", section, re.M), (name, section)
    # every flag of job run, with its value
    for line in help_of("job", "run").split("\n"):
        m = re.match(r"^  ((?:-\w, )?--[\w-]+(?: \S+)?)", line)
        if m:
            assert m.group(1).split(" ")[-1].split(", ")[-1] in text, m.group(1)
    assert "JOBLET_SOCKET" in text.split("ENVIRONMENT", 1)[1]
    assert "/run/joblet/joblet.sock" in text.split("\nFILES", 1)[1]
    assert "joblet(8)" in text.split("SEE ALSO", 1)[1]
    assert "2 for a bad command" in text.split("EXIT STATUS", 1)[1]


@pytest.mark.skipif(not shutil.which("man"), reason="man is not installed")
def test_joblet_man_page_is_its_help():
    text = man_text(MAN8)
    assert text.startswith("JOBLET(8)")
    helptext = subprocess.run([JOBLET, "--help"], capture_output=True, text=True, timeout=30).stdout
    for flag in re.findall(r"^  (--[\w-]+)", helptext, re.M):
        assert re.search(r"^ {7}" + re.escape(flag), text, re.M), flag
    files = text.split("\nFILES", 1)[1]
    for path in ("/etc/joblet/joblet.yml", "/var/lib/joblet", "/run/joblet/joblet.sock"):
        assert path in files, path
    assert "rnx(1)" in text.split("SEE ALSO", 1)[1]


def test_man_pages_are_what_the_generator_makes_of_the_help(tmp_path):
    """The built pages are current: the generator run now over the built binaries gives them."""
    version = json.loads(subprocess.run(["meson", "introspect", "--projectinfo", BUILD], capture_output=True,
                                        text=True, timeout=60).stdout)["version"]
    for which, binary, built in (("rnx", RNX, MAN1), ("joblet", JOBLET, MAN8)):
        out = tmp_path / which
        p = subprocess.run(["python3", os.path.join(ROOT, "scripts", "mkman.py"), which, binary, str(out), version],
                           capture_output=True, text=True, timeout=120,
                           env={k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"})
        assert p.returncode == 0, p.stderr
        assert out.read_text() == open(built).read(), which


# ---- meson install ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    dest = tmp_path_factory.mktemp("destdir")
    p = subprocess.run(["meson", "install", "-C", BUILD, "--no-rebuild", "--destdir", str(dest)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    opts = {o["name"]: o["value"] for o in json.loads(subprocess.run(
        ["meson", "introspect", "--buildoptions", BUILD], capture_output=True, text=True, timeout=60).stdout)}
    return str(dest), opts


def test_meson_install_puts_pages_and_completions_in_place(installed):
    dest, opts = installed
    root = dest + opts["prefix"]
    mandir = os.path.join(root, opts["mandir"])
    datadir = os.path.join(root, opts["datadir"])
    where = {
        os.path.join(mandir, "man1", "rnx.1"): MAN1,
        os.path.join(mandir, "man8", "joblet.8"): MAN8,
        os.path.join(datadir, "bash-completion", "completions", "rnx"): None,
        os.path.join(datadir, "zsh", "vendor-completions", "_rnx"): None,
    }
    for path, built in where.items():
        assert os.path.isfile(path), path
        if built:
            assert open(path).read() == open(built).read()
    assert open(os.path.join(datadir, "bash-completion", "completions", "rnx")).read() == \
        rnx("completion", "bash").stdout
    assert open(os.path.join(datadir, "zsh", "vendor-completions", "_rnx")).read() == rnx("completion", "zsh").stdout


@pytest.mark.skipif(not os.path.exists(BASH_COMPLETION), reason="bash-completion is not installed")
def test_bash_completion_finds_the_installed_file(installed):
    """bash-completion's loader, looking where the prefix's share/ is, loads _rnx for rnx."""
    dest, opts = installed
    share = os.path.join(dest + opts["prefix"], opts["datadir"])
    script = f"source {BASH_COMPLETION}; __load_completion rnx; complete -p rnx"
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, timeout=60,
                       env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "XDG_DATA_DIRS": share,
                            "HOME": tempfile.gettempdir()})
    assert p.stdout.strip() == "complete -F _rnx rnx", (p.stdout, p.stderr)
