#!/usr/bin/env bash
# build.sh [DIR] [extra meson options...] — configures once, then builds.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}; shift || true
if [[ ! -f $dir/build.ninja ]]; then
  meson setup "$dir" "$@" >/dev/null
fi
ninja -C "$dir" >/dev/null
