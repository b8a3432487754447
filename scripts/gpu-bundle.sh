#!/usr/bin/env bash
# Prepares what a lent GPU machine needs to run the gpu tests and benchmarks
# (docs/cuda.md). That machine has CUDA 13 (runtime, cuBLAS, NCCL), cmake and
# PyTorch but none of the Debian packages parallm links, and no registry; so
# this builds here (nvcc targets sm_90) and packs the GPU executables with
# every shared library they load that is not part of glibc, libstdc++ or
# CUDA, xz-compressed, into gpu-bundle/bundle.tar.xz (git-ignored; carry it).
# scripts/gpu-run.sh unpacks and runs it there.
#   scripts/gpu-bundle.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
if [ ! -f "$build/build.ninja" ]; then
  ./scripts/install-deps.sh
  cmake --preset release >/dev/null
fi
# The one model's training and decode benchmarks run on the GPU too (--device cuda).
bins=(parallm tests/parallm_gpu_tests bench/gpt2_train_bench bench/infer_bench)
for src in bench/gpu/*.cpp; do bins+=("bench/gpu_$(basename "$src" .cpp)"); done
targets=()
for b in "${bins[@]}"; do targets+=("$(basename "$b")"); done
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for b in "${bins[@]}"; do
  [ -x "$build/$b" ] || { echo "gpu-bundle: $build/$b was not built" >&2; exit 1; }
  cp "$build/$b" "$stage/bin/"
done
# glibc, the C++ runtime and CUDA's own libraries come from the GPU machine.
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+|libgcc_s|libcuda\.|libcudart|libcublas|libnccl|libnvidia)'
for b in "$stage"/bin/*; do
  ldd "$b" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    if ! [[ "$name" =~ $skip ]]; then cp -Ln "$path" "$stage/lib/" 2>/dev/null || true; fi
  done
done
cp bench/gpu/*.py tests/cli/device_cuda.sh "$stage/bin/"
mkdir -p "$stage/common"  # device_cuda.sh reads ../common/cli_checks.sh beside it
cp tests/common/cli_checks.sh "$stage/common/"
mkdir -p gpu-bundle
tar -C "$stage" -cJf gpu-bundle/bundle.tar.xz .
size=$(du -m gpu-bundle/bundle.tar.xz | cut -f1)
echo "gpu-bundle: gpu-bundle/bundle.tar.xz, ${size} MiB ($(ls "$stage/bin" | wc -l) programs, $(ls "$stage/lib" | wc -l) libraries)"
[ "$size" -lt 60 ] || { echo "gpu-bundle: over the 64 MiB a device call carries" >&2; exit 1; }
