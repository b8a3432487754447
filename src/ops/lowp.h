// Mixed precision's 16-bit side (bf16 / IEEE f16): rounding f32 values to
// 16 bits, and the GEMM of two 16-bit operands into an f32 result (oneDNN's
// bf16 matmul where the CPU has AVX512-BF16, else widened to f32 exactly),
// plain and skinny. Kernels: kernels/cpu/gemm_bf16.h, skinny_gemm.h.
#pragma once
#include <cstdint>

#include "kernels/cpu/gemm_bf16.h"
#include "ops/matmul.h"

namespace parallm::ops {

using cpu::LowpGemm;  // the CPU's 16-bit GEMM (its oneDNN primitives by shape)
using cpu::LowpType;

// dst = the 16-bit bits of src (round to nearest even).
void round_to_lowp(const Stream& s, uint16_t* dst, const float* src, int64_t n, LowpType t);
// x = x rounded to 16 bits, kept as f32.
void round_inplace(const Stream& s, float* x, int64_t n, LowpType t);
// C (M, N) f32 = op(A) op(B) + beta C, A and B 16-bit; scratch: the
// workspace of the emulated path.
void lowp_gemm(const Stream& s, const LowpGemm& g, bool trans_a, bool trans_b, int64_t M, int64_t N,
               int64_t K, const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb,
               float beta, float* C, int64_t ldc, Allocator& scratch);
// C (M, N) = alpha A W^T + beta C with W 16-bit of type t, A f32.
void skinny_gemm_nt_lowp(const Stream& s, int64_t M, int64_t N, int64_t K, float alpha,
                         const float* A, int64_t lda, const uint16_t* W, LowpType t, int64_t ldw,
                         float beta, float* C, int64_t ldc);
void skinny_gemm_nt_parts_lowp(const Stream& s, int64_t M, int64_t K, const float* A, int64_t lda,
                               const SkinnyPart* parts, int64_t n_parts, LowpType t);

}  // namespace parallm::ops
