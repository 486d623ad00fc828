#!/usr/bin/env bash
# package.sh [--out DIR] [--version VERSION] — builds joblet_<version>_amd64.deb with
# `dpkg-buildpackage -us -uc -b` (debian/: debhelper + meson) in a scratch copy of the source tree
# (dpkg-buildpackage writes its results next to the tree and its build under it), then moves the
# .deb and the .buildinfo/.changes to DIR (default: dist/). --version VERSION builds that version
# (a changelog entry is added in the copy only): the upgrade test uses it. DEB_BUILD_OPTIONS is
# passed on (nocheck skips the unit tests, parallel=N). Install: apt-get install ./dist/joblet_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
out=dist version=
while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    *) echo "usage: scripts/package.sh [--out DIR] [--version VERSION]" >&2; exit 2 ;;
  esac
done
for tool in dpkg-buildpackage dh; do
  command -v "$tool" >/dev/null || { echo "package.sh: $tool missing: apt-get install dpkg-dev debhelper" >&2; exit 1; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
scratch=$(mktemp -d /tmp/joblet-pkg.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
# The source: what git tracks plus new files it does not ignore; without git, the tree less
# build directories.
mkdir "$scratch/joblet"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [[ -e $f ]] && printf '%s\0' "$f"
  done | tar --null -T - -cf - | tar -xf - -C "$scratch/joblet"
else
  tar --exclude='./build*' --exclude=./dist --exclude=./obj-* -cf - . | tar -xf - -C "$scratch/joblet"
fi
cd "$scratch/joblet"
if [[ -n $version ]]; then
  { printf 'joblet (%s) unstable; urgency=medium\n\n  * Built by scripts/package.sh --version %s.\n\n -- %s  %s\n\n' \
      "$version" "$version" "$(sed -n 's/^Maintainer: //p' debian/control)" "$(date -R)"
    cat debian/changelog; } > debian/changelog.new
  mv debian/changelog.new debian/changelog
fi
jobs=$(nproc)
export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }parallel=$jobs"
dpkg-buildpackage -us -uc -b >"$scratch/build.log" 2>&1 || { tail -n 60 "$scratch/build.log" >&2; exit 1; }
mv "$scratch"/*.deb "$scratch"/*.buildinfo "$scratch"/*.changes "$out"/
ls "$out"/joblet_"$(dpkg-parsechangelog -S Version)"_*.deb
