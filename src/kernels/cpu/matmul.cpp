// GEMM (f32 through oneDNN's dnnl_sgemm, or the skinny kernel for a few rows
// times a transposed matrix; f64 through BLAS) and the linear layer (out = inp * W^T +
// b) with its backward. Invariant: backward accumulates (beta = 1) into dinp, dweight and dbias;
// dbias is reduced over rows in a fixed order, so results do not depend on the thread count or on
// scheduling.
#include "kernels/cpu/matmul.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/skinny_gemm.h"

namespace parallm::cpu {

namespace {

// Column block for reductions over rows: wide enough to vectorise, narrow
// enough that a 768-column layer still splits over a dozen threads.
constexpr int64_t kColBlock = 64;

template <class T>
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint M, blasint N, blasint K, T alpha,
               const T* A, blasint lda, const T* B, blasint ldb, T beta, T* C, blasint ldc) {
  if constexpr (std::is_same_v<T, float>) {
    static_cast<void>(cpu_isa());  // fixes oneDNN's ISA (PARALLM_MAX_CPU_ISA) before its first use
    // oneDNN over OpenBLAS for f32 (docs/gemm.md): as fast or faster on
    // AVX-512, thread-count-independent results, and the same OpenMP pool.
    dnnl_sgemm(ta == CblasTrans ? 'T' : 'N', tb == CblasTrans ? 'T' : 'N', M, N, K, alpha, A, lda,
               B, ldb, beta, C, ldc);
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // BLAS would reject lda = 0; the product is empty, only beta acts
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == T(0) ? T(0) : beta * C[i * ldc + j];
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    // Few rows times a transposed weight (decode): bound by reading B once.
    if (skinny_fits(trans_a, trans_b, M))
      return skinny_gemm_nt(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  blas_gemm<T>(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
               static_cast<blasint>(M), static_cast<blasint>(N), static_cast<blasint>(K), alpha, A,
               static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta, C,
               static_cast<blasint>(ldc));
}

template <class T>
void linear_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t IC,
                    int64_t OC) {
  gemm<T>(false, true, N, OC, IC, T(1), inp, IC, weight, IC, T(0), out, OC);
  if (bias == nullptr) return;
#pragma omp parallel for schedule(static) if (N * OC > 16384)
  for (int64_t n = 0; n < N; ++n) {
    T* o = out + n * OC;
#pragma omp simd
    for (int64_t j = 0; j < OC; ++j) o[j] += bias[j];
  }
}

template <class T>
void linear_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                     int64_t N, int64_t IC, int64_t OC) {
  if (dinp != nullptr) gemm<T>(false, false, N, IC, OC, T(1), dout, OC, weight, IC, T(1), dinp, IC);
  if (dweight != nullptr)
    gemm<T>(true, false, OC, IC, N, T(1), dout, OC, inp, IC, T(1), dweight, IC);
  if (dbias == nullptr) return;
  // Each thread owns whole column blocks and walks rows in order: every
  // element's sum has one fixed order whatever the thread count.
  const int64_t nblocks = (OC + kColBlock - 1) / kColBlock;
#pragma omp parallel for schedule(static) if (N * OC > 16384)
  for (int64_t b = 0; b < nblocks; ++b) {
    const int64_t c0 = b * kColBlock, width = std::min(kColBlock, OC - c0);
    double acc[kColBlock] = {};  // double: N can be tens of thousands of rows
    for (int64_t n = 0; n < N; ++n) {
      const T* d = dout + n * OC + c0;
#pragma omp simd
      for (int64_t j = 0; j < width; ++j) acc[j] += d[j];
    }
    for (int64_t j = 0; j < width; ++j) dbias[c0 + j] += static_cast<T>(acc[j]);
  }
}

#define PX_INSTANTIATE(T)                                                                       \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*,  \
                        int64_t, T, T*, int64_t);                                               \
  template void linear_forward<T>(T*, const T*, const T*, const T*, int64_t, int64_t, int64_t); \
  template void linear_backward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t,  \
                                   int64_t);
PX_INSTANTIATE(float)
PX_INSTANTIATE(double)
#undef PX_INSTANTIATE

}  // namespace parallm::cpu
