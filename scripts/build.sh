#!/usr/bin/env bash
# Installs dependencies (if missing) and builds parallm into build/ (Release).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
if [ ! -f build/build.ninja ]; then
  cmake --preset release >/dev/null
fi
cmake --build build -j"$(nproc)"
