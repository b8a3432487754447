#!/usr/bin/env bash
# The op interface seals the kernels (cmake/CheckLayers.cmake): the check
# passes on the real tree, and fails, naming the file, on a copy of it that
# has a model file including a kernel header or calling cpu:: / cuda::.
# Usage: kernel_seal_check.sh <source dir> <build dir>
set -euo pipefail
src=$1 build=$2
table=$build/parallm_layers.cmake
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake -DPARALLM_LAYER_TABLE="$table" -P "$src/cmake/CheckLayers.cmake"

# A copy of src/ with the source root pointed at it.
cp -r "$src/src" "$work/src"
sed "s|^set(PARALLM_SRC_ROOT .*|set(PARALLM_SRC_ROOT \"$work\")|" "$table" > "$work/table.cmake"
expect_fail() {  # file text, expected message
  printf '%s\n' "$1" > "$work/src/model/seal_probe.cpp"
  if out=$(cmake -DPARALLM_LAYER_TABLE="$work/table.cmake" -P "$src/cmake/CheckLayers.cmake" 2>&1); then
    echo "FAIL: the check passed with: $1"; exit 1
  fi
  grep -q "$2" <<<"$out" || { echo "FAIL: expected '$2' in:"; echo "$out"; exit 1; }
}
expect_fail '#include "kernels/cpu/matmul.h"' \
  'src/model/seal_probe.cpp (layer model) includes kernels/cpu/matmul.h (layer kernels)'
expect_fail 'void f() { parallm::cpu::gemm<float>(); }' \
  'src/model/seal_probe.cpp (layer model) calls a kernel above src/ops'
expect_fail 'void f() { cuda::gelu_forward(); }' 'calls a kernel above src/ops'
printf '// cpu:: in a comment is prose, not a call\n' > "$work/src/model/seal_probe.cpp"
cmake -DPARALLM_LAYER_TABLE="$work/table.cmake" -P "$src/cmake/CheckLayers.cmake"
echo "kernel seal check: ok"
