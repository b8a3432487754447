// Skinny GEMM: C (M, N) = alpha * A (M, K) * W (N, K)^T + beta * C for a few
// rows M (decode: one row per sequence), W in f32 or as 16-bit bits (bf16 or
// f16, widened exactly in registers). Such a product is bound by reading W:
// each W row is streamed from memory once for all M rows, split over the
// OpenMP threads by blocks of output features. Invariant: every C[m][n] is
// summed in one fixed order that depends on K only (not on M, m, N or the
// thread count), so a row gets the same bits in a batch as alone.
#pragma once
#include <cstdint>

#include "kernels/cpu/gemm_bf16.h"

namespace parallm::cpu {

// Up to this many rows the skinny kernel beats oneDNN's sgemm (and, for
// 16-bit W without AVX512-BF16, widening W first by far): W is read from
// memory once and the few rows of A stay in L1 (bench/decode_gemm_bench.cpp).
inline constexpr int64_t kSkinnyMaxRows = 8;

// True when C = op(A) op(B) has the shape the skinny kernel serves: A not
// transposed, B = W transposed (the linear layer's forward), M small.
inline bool skinny_fits(bool trans_a, bool trans_b, int64_t M) {
  return !trans_a && trans_b && M >= 1 && M <= kSkinnyMaxRows;
}

void skinny_gemm_nt(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                    const float* W, int64_t ldw, float beta, float* C, int64_t ldc);

// W holds 16-bit values of type t; A is f32 (the caller rounds it first when
// it wants the products of two 16-bit numbers, which f32 then holds exactly).
void skinny_gemm_nt_lowp(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                         const uint16_t* W, LowpType t, int64_t ldw, float beta, float* C,
                         int64_t ldc);

// One weight of a fused call: C (M, N) = A W^T, row stride ldc. W points to
// f32 or to 16-bit values, as the call says.
struct SkinnyPart {
  const void* W;
  int64_t N;
  int64_t ldw;
  float* C;
  int64_t ldc;
};

// Several products of the same A (q, k and v; gate and up) as one pass: one
// parallel region whose tasks stream each W in turn. Each C[m][n] has
// exactly the bits skinny_gemm_nt(_lowp) gives with alpha 1 and beta 0.
void skinny_gemm_nt_parts(int64_t M, int64_t K, const float* A, int64_t lda,
                          const SkinnyPart* parts, int64_t n_parts);
void skinny_gemm_nt_parts_lowp(int64_t M, int64_t K, const float* A, int64_t lda,
                               const SkinnyPart* parts, int64_t n_parts, LowpType t);

}  // namespace parallm::cpu
