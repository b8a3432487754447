#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, runs every ctest
# (labels unit, dist, reference); then, on a CPU with AVX-512, the layout and
# kernel tests a second time with the CPU kernels capped at AVX2
# (PARALLM_MAX_CPU_ISA=avx2, docs/testing.md), so a bound that holds on one
# instruction set only fails here, not first on the next machine. Arguments
# go to the first ctest (e.g. -L unit); with arguments the second pass is
# skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)" "$@"
if [ $# -gt 0 ]; then
  exit 0
fi
if ! grep -qw avx512f /proc/cpuinfo; then
  echo "[test] no AVX-512 on this CPU: the pass above ran the AVX2 kernels; no second pass"
  exit 0
fi
# Every layout test at 2 ranks (dp, tp, pp, cp, ep and their MoE and LoRA /
# QLoRA forms: each parallelism's arithmetic; the 4- and 8-rank compositions
# add rank counts, not kernels, and the native pass has run them), the HF
# families at tp 2 / pp 2, a dp 4 data blend, a resume in another layout,
# and the unit suites whose numbers depend on the kernels (tests/kernels,
# the ISA cap, mixed precision, recompute, the model's forward/backward and
# its QLoRA/LoRA/dropout forms).
suites="AdamW|Attention|CrossEntropy|Embedding|GeGlu|Gelu|Gemm|GemmBf16|GradArithmetic"
suites+="|GroupedGemm|GroupedGemmLowp|LayerNorm|Linear|MoeRows|Nf4|Nf4Gemm|Nf4Weight|Norm"
suites+="|PagedAttention|PagedAttentionShapes|RMSNorm|RMSNormAddsOne|Rope|SkinnyGemm|SwiGlu"
suites+="|VecMath|VectorOps|CpuIsa|QloraModel|MixedPrecision|Recompute|Trainer|TransformerBoth"
suites+="|DropoutBoth|LoraBoth|MatmulWeight"
layouts="parallel\..*\.np2|train\.(lora|qlora)\.np2|checkpoint\.resume_load_only|reference\.family\..*"
layouts+="|data\.blend_order"
echo "[test] second pass: layout and kernel tests with PARALLM_MAX_CPU_ISA=avx2"
PARALLM_MAX_CPU_ISA=avx2 ctest --output-on-failure -j"$(nproc)" \
  -R "^(${layouts})$|(^|/)(${suites})\."
