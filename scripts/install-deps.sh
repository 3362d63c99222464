#!/usr/bin/env bash
# Installs the Debian packages ds needs, skipping those already present, so a
# repeat run costs one dpkg query. Usage: scripts/install-deps.sh [build|test|demo]
set -euo pipefail

pkgs=(cmake ninja-build ccache g++ make lld-22 python3
      llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
      nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
      libopenblas-dev libopenmpi-dev openmpi-bin
      libtorch-dev python3-torch)

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
apt-get install -y -q --no-install-recommends "${missing[@]}"
