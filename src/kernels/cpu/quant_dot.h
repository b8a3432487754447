// The integer dot-product kernels behind quant_gemm.h: one weight row of
// GGUF blocks against up to kQuantDotMaxRows activation rows quantised to
// 8 bits per block of 32. Each block's int32 dot product is exact; the f32
// sum of scaled blocks runs in an order fixed per path (lanes of 8 on the
// SIMD paths, block order on the scalar one), so paths agree to f32
// rounding, not bit for bit.
#pragma once
#include <cstdint>

#include "kernels/cpu/quant_blocks.h"

namespace parallm::cpu {

// Activation rows in 8 bits: row m's K values in q[m * K ...], per block of
// 32 its scale d[m * K/32 + b] (value = q * d), sum(q) and s = d * sum(q)
// (what offset codes and Q4_K's mins subtract).
struct QuantRows {
  const int8_t* q;
  const float* d;
  const float* s;
  const int32_t* sum;
  int64_t K;
};

// Quantises x (M, K) row-major into q (M * K), d, s and sum (M * K / 32 each).
void quantize_rows_q8(const float* x, int64_t M, int64_t K, int8_t* q, float* d, float* s,
                      int32_t* sum);

// res[m] = sum over the row of dequant(w) x_m, for each of the fn's M rows.
using QuantRowDotFn = void (*)(const uint8_t* wrow, const QuantRows& x, float* res);
// The kernel for M rows (1 <= M <= 8) of type t on path 0 scalar, 1 AVX2,
// 2 VNNI (the caller checks that the path is built and allowed).
QuantRowDotFn quant_row_dot_fn(int path, QuantType t, int M);

// Whether this build holds the AVX2 / VNNI kernels.
bool quant_dot_built_avx2();
bool quant_dot_built_vnni();

}  // namespace parallm::cpu
