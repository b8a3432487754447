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
# The Python `safetensors` package (PyPI; no Debian package) reads exported
# models in tests/checkpoint; best effort, the test skips without it.
install_py_safetensors() {
  /usr/bin/python3 -c "import safetensors" 2>/dev/null && return 0
  /usr/bin/python3 -m pip install --quiet --break-system-packages safetensors >/dev/null 2>&1 ||
    echo "[install-deps] note: pip could not install safetensors (checkpoint.hf_python will skip)"
}
if [ ${#missing[@]} -eq 0 ]; then
  install_py_safetensors
  exit 0
fi
echo "[install-deps] installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_py_safetensors
