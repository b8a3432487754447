#!/usr/bin/env bash
# Installs every Debian package parallm needs on a fresh Debian 12 machine.
# Idempotent: skips apt entirely when all packages are already present.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config git
  libopenmpi-dev openmpi-bin
  libopenblas-openmp-dev libdnnl-dev libomp-dev
  nlohmann-json3-dev libcli11-dev libtomlplusplus-dev libfmt-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-torch python3-numpy
  fortunes
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "[install-deps] installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
