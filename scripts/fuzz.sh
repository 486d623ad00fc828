#!/usr/bin/env bash
# fuzz.sh [SECONDS|--runs=N] [NAME...] — builds the libFuzzer harnesses of tests/fuzz (clang,
# ASan+UBSan, in build-fuzz) and runs each named one (default: all) in turn, for SECONDS
# (default 60) or for N inputs. What a run finds new is kept in build-fuzz/corpus/NAME (the
# seeds in tests/fuzz/corpus/NAME are only read); a crash is saved as
# build-fuzz/crashes/NAME-crash-<sha1> and ends the script with its status.
#   scripts/fuzz.sh 600 wfparse          ten minutes of the workflow parser
#   scripts/fuzz.sh --runs=20000         what scripts/test.sh runs: every harness, fixed seed
# Reproduce a crash: build-fuzz/tests/fuzz/fuzz_NAME build-fuzz/crashes/NAME-crash-...
# Exit status 77 (nothing run) when clang or libFuzzer is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${FUZZ_BUILD:-build-fuzz}
secs=60 runs=
case ${1:-} in
  --runs=*) runs=${1#--runs=}; shift ;;
  ''|*[!0-9]*) ;;
  *) secs=$1; shift ;;
esac
all=$(cd tests/fuzz && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//')
names=${*:-$all}

cc=${CC:-$(command -v clang || command -v clang-14 || true)}
if [[ -z $cc ]] || ! command -v "$cc" >/dev/null; then
  echo "fuzz: skipped: clang is not installed (Debian: clang-14, libclang-rt-14-dev; scripts/install-deps.sh)"
  exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$probe/p.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>/dev/null; then
  echo "fuzz: skipped: $cc cannot link -fsanitize=fuzzer,address,undefined (Debian: libclang-rt-14-dev)"
  exit 77
fi

if [[ ! -f $dir/build.ninja ]]; then
  # -Dwerror=false: clang warns where gcc does not in files of src/; the harnesses keep -Werror
  CC=$cc meson setup "$dir" -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=false \
    -Dbuildtype=debugoptimized >/dev/null
fi
targets=()
for n in $names; do
  [[ -f tests/fuzz/fuzz_$n.c ]] || { echo "fuzz: no harness '$n'; there are: $(echo $all)" >&2; exit 2; }
  targets+=("tests/fuzz/fuzz_$n")
done
if ! ninja -C "$dir" "${targets[@]}" >"$dir/build.log" 2>&1; then
  echo "fuzz: the harnesses do not build (the end of $dir/build.log):" >&2
  grep -E "error|undefined reference|FAILED" "$dir/build.log" | head -20 >&2
  exit 1
fi

# Per harness: the longest input worth trying. The log writer splits lines at 16 KiB.
max_len() {
  case $1 in
    logrecord) echo 40000 ;;
    wfparse|gpu_smi) echo 16384 ;;
    routes) echo 8192 ;;
    *) echo 4096 ;;
  esac
}
# With --runs=N: the routes harness runs the whole daemon per input (~400 inputs/s against
# 10,000 and more for the parsers), so it gets a quarter of N.
runs_of() {
  case $1 in
    routes) echo $(($2 / 4)) ;;
    *) echo "$2" ;;
  esac
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# leaks of libraries, not of joblet (each explained in the file)
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0}
mkdir -p "$dir/crashes"
total_start=$SECONDS
for n in $names; do
  out="$dir/corpus/$n"
  mkdir -p "$out"
  args=(-max_len="$(max_len "$n")" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0
        -artifact_prefix="$dir/crashes/$n-")
  if [[ -n $runs ]]; then
    # A fixed seed and a fresh output corpus: the same inputs every time, so CI is repeatable.
    rm -rf "$out"; mkdir -p "$out"
    args+=(-runs="$(runs_of "$n" "$runs")" -seed=1)
  else
    args+=(-max_total_time="$secs")
  fi
  start=$SECONDS
  if ! "$dir/tests/fuzz/fuzz_$n" "${args[@]}" "$out" "tests/fuzz/corpus/$n" >"$dir/fuzz-$n.log" 2>&1; then
    grep -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|INITED)' "$dir/fuzz-$n.log" | tail -n 40
    echo "fuzz: $n FAILED after $((SECONDS - start)) s; the input is in $dir/crashes/ (log: $dir/fuzz-$n.log)" >&2
    exit 1
  fi
  stats=$(grep -E '^#[0-9]+' "$dir/fuzz-$n.log" | tail -n 1 | sed -E 's/^#([0-9]+).*cov: ([0-9]+).*/\1 inputs, cov \2/')
  echo "fuzz: $n ok: $stats, $((SECONDS - start)) s"
done
echo "fuzz: all passed in $((SECONDS - total_start)) s"
