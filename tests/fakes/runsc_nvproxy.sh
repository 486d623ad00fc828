#!/bin/sh
# A fake runsc that advertises nvproxy (tests/integration/test_gvisor.py): it answers the
# daemon's probe (--version, flags) as a 2024 runsc would, and for `run` records its arguments
# (one per line) and the bundle's config.json next to the bundle, in the job's directory, then
# prints a line and exits 0. kill and delete succeed and do nothing. The record goes beside the
# bundle, <bundles>/<container id>.argv and .config.json (the bundle directory itself is removed
# when the job ends; these stay until the state directory goes).
case "$1" in
--version) printf 'runsc version release-20240101.0-fake\nspec: 1.1.0\n'; exit 0 ;;
flags | --help)
    printf '  -nvproxy\n    \tEnable support for Nvidia GPUs.\n  -platform string\n    \tspecifies which platform to use: systrap (default), ptrace, kvm.\n'
    exit 0 ;;
esac
bundle=
prev=
for a in "$@"; do
    [ "$prev" = "--bundle" ] && bundle=$a
    prev=$a
done
for a in "$@"; do
    case "$a" in run) ;; *) continue ;; esac
    [ -n "$bundle" ] || exit 2
    for id; do :; done
    dir=$(dirname "$bundle")
    printf '%s\n' "$@" > "$dir/$id.argv"
    cp "$bundle/config.json" "$dir/$id.config.json"
    echo "fake runsc ran the bundle"
    exit 0
done
exit 0
