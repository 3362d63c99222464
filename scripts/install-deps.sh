#!/usr/bin/env bash
# Installs the Debian packages ds needs, skipping those already present, so a
# repeat run costs one dpkg query. Usage: scripts/install-deps.sh [sanitize]
set -euo pipefail

pkgs=(cmake ninja-build ccache g++ make lld-22 python3
      llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
      nlohmann-json3-dev libzip-dev libgtest-dev libgmock-dev libbenchmark-dev
      libopenblas-dev libopenmpi-dev openmpi-bin liburing-dev libdnnl-dev
      libtorch-dev python3-torch python3-matplotlib
      openssh-server openssh-client iproute2 util-linux)
# `make fuzz` and `make test-sanitize`: clang and its sanitizer and
# libFuzzer runtimes.
if [ "${1:-}" = sanitize ]; then
  pkgs+=(clang-22 libclang-rt-22-dev)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "error: missing Debian packages: ${missing[*]}" >&2
  echo "fix: run as root, or: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have empty or stale package lists.
apt-get update -q
# openssh-server's scripts would start the machine's own sshd, listening on
# every address; the multi-host tests run private ones inside network
# namespaces only (scripts/multihost/two-hosts.sh). Debian's policy-rc.d
# keeps package scripts from starting services during the install.
policy=/usr/sbin/policy-rc.d
if [ ! -e $policy ]; then
  printf '#!/bin/sh\nexit 101\n' > $policy && chmod +x $policy
  trap 'rm -f $policy' EXIT
fi
apt-get install -y -q --no-install-recommends "${missing[@]}"
