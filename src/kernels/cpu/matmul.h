// Dense matrix products (f32: oneDNN's sgemm, f64: OpenBLAS; docs/gemm.md has
// the measurements behind the choice), and the linear layer built on them.
// Row-major throughout.
// Convention for every backward kernel in kernels/cpu: gradients ACCUMULATE
// (+=) into their outputs; callers zero them when a fresh value is wanted.
#pragma once
#include <cstdint>

namespace parallm::cpu {

// C (M, N) = alpha * op(A) * op(B) + beta * C; op(A) is (M, K), op(B) is (K, N).
template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

// out (N, OC) = inp (N, IC) * weight(OC, IC)^T + bias (OC); bias may be null.
template <class T>
void linear_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t IC,
                    int64_t OC);

// dinp (N, IC) += dout * weight; dweight (OC, IC) += dout^T * inp; dbias (OC) += sum_rows dout.
// dinp, dweight and dbias may each be null (skipped).
template <class T>
void linear_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                     int64_t N, int64_t IC, int64_t OC);

}  // namespace parallm::cpu
