#!/usr/bin/env bash
# Every test: unit tests (cmocka) and integration tests (pytest, real daemon, real kernel, as
# root), first on the normal build, then again with AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# each step says when it starts (since the script's start): where the run's time goes
phase() { printf '=== %s (at %dm%02ds) ===\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)); }
pytest=(python3 -m pytest)
[[ -x /usr/bin/python3 ]] && pytest=(/usr/bin/python3 -m pytest)   # Debian's python3-pytest

run_suite() {  # run_suite BUILD_DIR LABEL
  local dir=$1 label=$2
  phase "$label: unit tests"
  meson test -C "$dir" --print-errorlogs
  phase "$label: layering"
  python3 scripts/layering.py "$dir"   # no cycles, no upward calls in src/ (docs/architecture.md)
  phase "$label: integration tests"
  # --durations: the slowest tests, to keep the whole run inside CI's time (the guide: < 35 min);
  # every test's time is in $dir/integration-junit.xml, to see where a run's time goes.
  # -n: the modules run in parallel workers (pytest-xdist), most of a test's time is waiting;
  # modules that share something of the machine's keep to one worker (conftest.py: SHARED).
  JOBLET_BUILD=$PWD/$dir "${pytest[@]}" -q -rs --durations=15 --junitxml="$dir/integration-junit.xml" -n "${JOBLET_TEST_WORKERS:-3}" --dist loadgroup \
    tests/integration tests/gpu
}

phase "normal build"
bash scripts/build.sh build

# Beside the normal pass, at the lowest priority (nice 19, the idle I/O class): the libFuzzer
# harnesses of tests/fuzz built and run for a fixed number of inputs each (fixed seed), from their
# seed corpus (a short, repeatable run; scripts/fuzz.sh SECONDS runs them for as long as asked),
# then the ASan+UBSan build. The normal pass mostly waits for its jobs: these take the CPU it
# leaves, ~4 minutes of the run when they came after it. What they print: build/side.log, shown
# once the normal pass is over; it ends the run as it did in line (a harness that fails, the build).
side_log=$PWD/build/side.log
setsid nice -n 19 ionice -c 3 bash -c '
  set -euo pipefail
  printf "=== fuzz harnesses: 20000 inputs each (beside the normal pass) ===\n"
  fuzz_rc=0
  bash scripts/fuzz.sh --runs=20000 || fuzz_rc=$?
  if ((fuzz_rc == 77)); then
    echo "(fuzz harnesses skipped: see the reason above)"
  elif ((fuzz_rc != 0)); then
    echo "fuzz harnesses: FAILED (exit $fuzz_rc)"
    exit "$fuzz_rc"
  fi
  printf "=== ASan+UBSan build (beside the normal pass) ===\n"
  bash scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
' >"$side_log" 2>&1 &
side=$!
trap 'kill -- -"$side" 2>/dev/null || true' EXIT
run_suite build "normal build"

phase "fuzz harnesses and ASan+UBSan build (made beside the normal pass)"
side_rc=0
wait "$side" || side_rc=$?
cat "$side_log"
((side_rc == 0)) || exit "$side_rc"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=87
export JOBLET_PASS=sanitizers   # tests/integration/conftest.py: SANITIZER_PASS_SKIPS
run_suite build-asan "ASan+UBSan build"
phase "all tests passed"
