// Dense f32 GEMM and the linear layer (out = inp W^T + b) forward and
// backward, and the skinny GEMM decode uses for a few rows over several
// weights at once. Row-major throughout. Kernels: kernels/cpu/matmul.h,
// kernels/cpu/skinny_gemm.h.
#pragma once
#include <cstdint>

#include "kernels/cpu/skinny_gemm.h"
#include "ops/stream.h"

namespace parallm::ops {

using cpu::SkinnyPart;  // its W and C are buffers of the stream's device

// C (M, N) = alpha op(A) op(B) + beta C.
void gemm(const Stream& s, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc);
// out (N, OC) = inp (N, IC) weight^T + bias (bias may be null).
void linear_forward(const Stream& s, float* out, const float* inp, const float* weight,
                    const float* bias, int64_t N, int64_t IC, int64_t OC);
// dinp += dout weight; dweight += dout^T inp; dbias += sum of dout rows (each may be null).
void linear_backward(const Stream& s, float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int64_t N, int64_t IC, int64_t OC);

// Whether op(A) op(B) is a shape the skinny GEMM serves (A plain, B = W^T, M
// small) on this stream: a device backend has no skinny GEMM, its GEMM serves.
inline bool skinny_fits(const Stream& s, bool trans_a, bool trans_b, int64_t M) {
  return s.backend() == nullptr && cpu::skinny_fits(trans_a, trans_b, M);
}
// Several C_p (M, N_p) = A W_p^T in one pass over the weights; W_p f32, or
// 16-bit of type t in the _lowp form (A then already rounded by the caller).
void skinny_gemm_nt_parts(const Stream& s, int64_t M, int64_t K, const float* A, int64_t lda,
                          const SkinnyPart* parts, int64_t n_parts);

}  // namespace parallm::ops
