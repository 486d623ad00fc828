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
run_suite build "normal build"

# Every libFuzzer harness of tests/fuzz for a fixed number of inputs (fixed seed), from its
# seed corpus: a short, repeatable run; scripts/fuzz.sh SECONDS runs them for as long as asked.
phase "fuzz harnesses: 20000 inputs each"
fuzz_rc=0
bash scripts/fuzz.sh --runs=20000 || fuzz_rc=$?
if ((fuzz_rc == 77)); then
  echo "(fuzz harnesses skipped: see the reason above)"
elif ((fuzz_rc != 0)); then
  exit "$fuzz_rc"
fi

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=87
export JOBLET_PASS=sanitizers   # tests/integration/conftest.py: SANITIZER_PASS_SKIPS
phase "ASan+UBSan build"
bash scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
run_suite build-asan "ASan+UBSan build"
phase "all tests passed"
