#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, runs every ctest
# (labels unit, reference; dist once distributed tests exist).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)" "$@"
