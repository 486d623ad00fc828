#!/usr/bin/env bash
# Installs what joblet needs to build, test and benchmark on Debian 12. Idempotent: when
# every package is present it does nothing (no apt-get update, no network).
set -euo pipefail
PKGS=(
  build-essential meson ninja-build pkg-config
  libmicrohttpd-dev libjansson-dev libfyaml-dev libsqlite3-dev libseccomp-dev libsodium-dev
  nettle-dev   # SHA-256 of runtime recipes and trees (src/common/digest.c)
  gnutls-bin curl  # real TLS clients of the remote listener's tests (gnutls-cli, certtool, curl)
  libgnutls28-dev  # the TLS listener (joblet, with libmicrohttpd) and rnx's remote nodes (opened when used)
  libarchive-dev   # the tar streams of rnx job cp (src/exec/copy_main.c, src/cli/cmd_cp.c)
  libmnl-dev nftables   # jobs' networks: rtnetlink and the table inet joblet (src/exec/net_main.c)
  libcmocka-dev python3 python3-pytest
  python3-pytest-xdist   # scripts/test.sh runs the integration test files in parallel workers (conftest.py: PARALLEL)
  iproute2 util-linux procps
  e2fsprogs    # mke2fs: filesystem volumes (docs/volumes.md)
  runc bubblewrap
  busybox-static   # a tiny runtime root for the mount tests (tests/integration/busybox_runtime.py)
  mmdebstrap zstd   # building runtimes (docs/runtimes.md); bench/runtime_start.py compares runc
  prometheus   # promtool and a real Prometheus server for tests/integration/test_metrics.py
  clang-14 libclang-rt-14-dev   # libFuzzer, ASan, UBSan for the fuzz harnesses (scripts/fuzz.sh)
  zsh bash-completion   # tests/integration/test_completion.py runs rnx's completion in both shells
  tmux   # a real terminal for tests/integration/test_terminal.py (rnx job run -it)
  runsc   # gVisor: --isolation=gvisor (docs/sandbox.md, tests/integration/test_gvisor.py)
  podman   # reads joblet cdi generate's spec in tests/integration/test_cdi.py
  man-db groff-base   # the man pages rnx(1), joblet(8) are checked with man and groff -ww
  chromium chromium-driver python3-selenium   # the web console's browser test, headless (docs/console.md)
  debhelper dpkg-dev lintian   # scripts/package.sh builds the .deb (debian/), tests/integration/test_deb.py checks it
  slurmctld slurmd slurm-client libslurm-dev munge   # the test Slurm cluster (tests/integration/slurm_cluster.py), spank.h
)
# Packages whose postinst would start a daemon with Debian's default configuration; the tests
# start their own (private config, key, socket, ports), so these must not run or be enabled.
DAEMON_PKGS=(slurmctld slurmd munge)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then echo "install-deps: run as root (apt-get)" >&2; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  daemons=()
  for p in "${missing[@]}"; do
    for d in "${DAEMON_PKGS[@]}"; do [[ $p == "$d" ]] && daemons+=("$p"); done
  done
  policy=""
  if ((${#daemons[@]})) && [[ ! -e /usr/sbin/policy-rc.d ]]; then
    # invoke-rc.d and deb-systemd-invoke start nothing while policy-rc.d answers 101
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  if [[ -n $policy ]]; then rm -f "$policy"; trap - EXIT; fi
  if ((${#daemons[@]})) && [[ -d /run/systemd/system ]]; then
    # not at the next boot either (and stopped, should something have started them)
    for d in "${daemons[@]}"; do systemctl disable --now "$d.service" >/dev/null 2>&1 || true; done
  fi
fi

# Lighthouse, for tests/integration/test_console_lighthouse.py (docs/console.md): npm's package,
# pinned, in a fixed prefix of its own (nothing global); it drives Debian's chromium, it downloads
# no browser. Node and npm come from Debian (nodejs 18, which lighthouse 12 supports) unless a
# node and npm are installed already.
LIGHTHOUSE_VERSION=12.8.2
LIGHTHOUSE_PREFIX=/opt/joblet-test/lighthouse
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [[ $(id -u) -ne 0 ]]; then echo "install-deps: run as root (apt-get)" >&2; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends nodejs npm
fi
have=$(node -p "require('$LIGHTHOUSE_PREFIX/node_modules/lighthouse/package.json').version" 2>/dev/null || true)
if [[ $have != "$LIGHTHOUSE_VERSION" ]]; then
  echo "installing lighthouse $LIGHTHOUSE_VERSION into $LIGHTHOUSE_PREFIX"
  mkdir -p "$LIGHTHOUSE_PREFIX"
  npm install --prefix "$LIGHTHOUSE_PREFIX" --no-audit --no-fund --omit=dev "lighthouse@$LIGHTHOUSE_VERSION"
fi
