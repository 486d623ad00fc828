#!/usr/bin/env bash
# The main job: build joblet, start the daemon on its embedded defaults (no config file;
# state and socket in a scratch directory so the demo never touches a real installation),
# and run real isolated jobs through rnx.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $(id -u) -ne 0 ]]; then echo "demo: run as root (joblet creates namespaces and cgroups)" >&2; exit 1; fi
bash scripts/install-deps.sh
bash scripts/build.sh build

root=$PWD
demo=$(mktemp -d /tmp/joblet-demo.XXXXXX)
sock=$demo/joblet.sock
export JOBLET_SOCKET=$sock
./build/joblet --state-dir "$demo/state" --socket "$sock" >"$demo/joblet.log" 2>&1 &
pid=$!
# At the end: the daemon stopped (cleanly: it unmounts the users' /work filesystems and the runsc
# tmpfs when no job runs), its log shown, then the scratch directory removed (about 2 GB of
# sparse images) unless something is still mounted under it, or JOBLET_DEMO_KEEP=1 asks to keep it;
# the job networks' bridge and table removed.
finish() {
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
    # the bridge and nftables table the network jobs made (a joblet keeps them between runs)
    ./build/joblet-net down >/dev/null 2>&1 || true
    echo; echo "--- daemon log ($demo/joblet.log) ---"; cat "$demo/joblet.log"
    local left
    left=$(awk -v d="$demo" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo)
    if [[ -n $left ]]; then
        printf 'demo: still mounted under %s, so it is kept:\n%s\n' "$demo" "$left" >&2
    elif [[ ${JOBLET_DEMO_KEEP:-0} == 1 ]]; then
        echo "demo: kept $demo (JOBLET_DEMO_KEEP=1)"
    else
        rm -rf --one-file-system "$demo"
    fi
}
trap finish EXIT
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.05; done
rnx() { "$root/build/rnx" "$@"; }
step() { printf '\n\033[1m$ rnx %s\033[0m\n' "$*"; }

step --version; rnx --version
step job run --follow sh -c 'echo "hello from $(hostname)"; id; ls /'
rnx job run --follow sh -c 'echo "hello from $(hostname)"; id; ls /'

printf 'print("uploaded script ran, argv =", __import__("sys").argv[1:])\n' >"$demo/hello.py"
step job run --upload "$demo/hello.py" --follow python3 hello.py a b
rnx job run --upload "$demo/hello.py" --follow python3 hello.py a b

step job run --max-memory=32 --follow python3 -c 'big allocation'
rnx job run --max-memory=32 --name oom-demo --follow python3 -c 'x = bytearray(256 << 20)' || echo "(exit code $?)"

step job run --max-cpu=50 --cpu-cores=0 --max-runtime=2s sh -c 'while :; do :; done'
busy=$(rnx job run --max-cpu=50 --cpu-cores=0 --max-runtime=2s --name busy-loop sh -c 'while :; do :; done')
sleep 3

step job run -e GREETING=hi -s TOKEN=s3cret --follow sh -c 'echo "$GREETING, token has ${#TOKEN} characters"'
rnx job run -e GREETING=hi -s TOKEN=s3cret --name secrets --follow sh -c 'echo "$GREETING, token has ${#TOKEN} characters"'

# two jobs on the built-in bridge network: the client finds the server by its name (docs/networks.md)
step job run --network=bridge --name=ps python3 server.py   '(one echo, then it ends)'
ps=$(rnx job run --network=bridge --name=ps python3 -c 'import socket
s = socket.create_server(("0.0.0.0", 29500)); c, _ = s.accept(); c.sendall(b"hello from ps, " + c.recv(64))')
step job run --network=bridge --follow python3 client.py   '(reaches ps by name)'
rnx job run --network=bridge --name=worker --follow python3 -c 'import socket, time
for _ in range(50):
    try:
        c = socket.create_connection(("ps", 29500), timeout=2); break
    except OSError:
        time.sleep(0.1)
c.sendall(b"worker here"); print(c.recv(100).decode())' || echo "(job networks: exit code $?; rnx network list says why)"
rnx job stop "$ps" >/dev/null 2>&1 || true
step network list; rnx network list

# batch work as a Slurm user writes it (docs/batch.md): an array of 6 tasks, 2 at once, each
# reading SLURM_ARRAY_TASK_ID; a job after it; rnx job wait for both
step job run --array=0-5%2 --name=sweep sh -c "'echo task \$SLURM_ARRAY_TASK_ID of \$SLURM_ARRAY_TASK_COUNT; sleep 0.5'"
sweep=$(rnx job run --array=0-5%2 --name=sweep sh -c 'echo task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT; sleep 0.5')
echo "$sweep"
step job run --after=sweep:ok sh -c "'echo every task of the sweep completed'"
report=$(rnx job run --after=sweep:ok sh -c 'echo every task of the sweep completed')
echo "$report"
step job list; rnx job list
step job wait sweep "$report"; rnx job wait "$sweep" "$report" || echo "(exit code $?)"
step job log sweep_4; rnx job log "${sweep:0:8}_4"

step job status "$busy"; rnx job status "$busy"
step job list; rnx job list

# GPUs: what this machine has (real discovery on the embedded defaults) ...
step gpu list; rnx gpu list
if rnx gpu list --json | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["gpus"] else 1)'; then
    step job run --gpu=1 --follow sh -c 'echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; ls /dev/nvidia*'
    rnx job run --gpu=1 --name gpu-real --follow sh -c 'echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; ls /dev/nvidia*' ||
        echo "(exit code $?)"
fi

# ... and a SIMULATED DGX H100 (gpu.fixture), so the GPU path shows on machines without one.
printf '\n\033[1m=== SIMULATED GPUs: a second joblet planning on tests/fixtures/dgx-h100 (no such hardware here) ===\033[0m\n'
kill $pid; wait $pid 2>/dev/null || true
# runtimes are built once and kept (a cache keyed by the recipe's hash, shared with the tests)
cache=${JOBLET_RUNTIME_CACHE:-/var/cache/joblet-test-runtimes}
mkdir -p "$cache" && chmod 700 "$cache"
printf 'gpu:\n  fixture: %s/tests/fixtures/dgx-h100/machine.json\nruntimes:\n  cache_dir: %s\n' "$PWD" "$cache" \
    >"$demo/sim.yml"
./build/joblet --config "$demo/sim.yml" --state-dir "$demo/sim-state" --socket "$sock" >>"$demo/joblet.log" 2>&1 &
pid=$!
for _ in $(seq 100); do rnx --version >/dev/null 2>&1 && break; sleep 0.05; done
step gpu list; rnx gpu list
step gpu topo; rnx gpu topo
step job run --gpu=2 --gpu-memory=40GB --name simulated-gpu-job sh -c "'env | grep -E CUDA|NVIDIA|JOBLET_GPU | sort'"
gj=$(rnx job run --gpu=2 --gpu-memory=40GB --name simulated-gpu-job sh -c 'env | grep -E "CUDA|NVIDIA|JOBLET_GPU" | sort')
echo "$gj"
step job log "$gj"; rnx job log "$gj"
step job status "$gj"; rnx job status "$gj"
step job run --gpu=9 true; rnx job run --gpu=9 true || echo "(refused: exit code $?)"

# The GPU/CUDA guide's training line, in the python-3.11-ml runtime (Debian's Python 3.11, numpy,
# pandas, scikit-learn, torch 1.13 CPU): built from Debian's mirror the first time (a few
# minutes), from the cache afterwards.
step runtime build runtimes/python-3.11-ml.yml
rnx runtime build runtimes/python-3.11-ml.yml
step runtime list; rnx runtime list
cp tests/fixtures/gpu-guide/scripts/distributed_training.py "$demo/"
step "job run --gpu=2 --runtime=python-3.11-ml python distributed_training.py   (the guide's line; its script uploaded, --follow to watch)"
(cd "$demo" && rnx job run --gpu=2 --runtime=python-3.11-ml --upload=distributed_training.py --follow \
    python distributed_training.py)
