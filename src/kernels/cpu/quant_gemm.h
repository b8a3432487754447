// The linear layer over a GGUF-block weight (quant_weight.h), for inference:
// integer dot products. Each activation row is quantised to 8 bits per block
// of 32 (an f32 scale, round to nearest); each weight block is multiplied
// with it in int32 (AVX512-VNNI vpdpbusd, else AVX2 vpmaddubsw + vpmaddwd,
// else scalar) and scaled by both blocks' scales into f32 sums. Rows go in
// chunks of kQuantDotMaxRows, each weight row (or packed group) taken through
// every chunk while it is in L1, split over the threads by output rows: a
// decode step (a row per sequence) reads W once, a prompt batches the same
// kernel. Invariant: a row's result has the same bits whatever M is.
#pragma once
#include <cstdint>

#include "kernels/cpu/quant_weight.h"
#include "tensor/allocator.h"

namespace parallm::cpu {

inline constexpr int64_t kQuantDotMaxRows = 8;

// The instruction paths of the dot products, each chosen at run time.
enum class QuantDotPath { kScalar, kAvx2, kVnni };
// The best this build and CPU allow under PARALLM_MAX_CPU_ISA.
QuantDotPath quant_dot_path();
const char* quant_dot_path_name(QuantDotPath p);
// Whether path p can run here (built in and allowed).
bool quant_dot_path_available(QuantDotPath p);

// out (M, N) = inp (M, K) W^T + bias (N); bias may be null.
void quant_linear_forward(Allocator& a, float* out, const float* inp, const QuantWeight& w,
                          const float* bias, int64_t M);

// The same on path p (any M; a packed weight runs on its own path), no
// bias: for tests of each path.
void quant_dot_rows(QuantDotPath p, Allocator& a, float* out, const float* inp,
                    const QuantWeight& w, int64_t M);

}  // namespace parallm::cpu
