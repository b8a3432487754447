// The 16-bit mixed GEMM on the GPU (blas.h's gemm_lowp): bf16 or f16 A and B,
// f32 C, fp32 accumulation, through blas.cpp's row-major cuBLASLt path (its
// workspace and per-shape heuristic cache; blas_impl.h). Invariant: the same
// meaning and argument checks as cpu::LowpGemm::gemm, so a caller can switch
// backends; only the summation order (cuBLASLt's choice) differs.
#include <cstdint>

#include "base/error.h"
#include "kernels/cuda/blas.h"
#include "kernels/cuda/blas_impl.h"

namespace parallm::cuda {

void gemm_lowp(Blas& b, cpu::LowpType t, bool trans_a, bool trans_b, int64_t M, int64_t N,
               int64_t K, const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb,
               float beta, float* C, int64_t ldc, cudaStream_t s) {
  // The CPU's oneDNN path only adds into C (a sum post-op) or overwrites it;
  // refusing other betas here keeps the two backends accepting the same calls.
  PX_CHECK(beta == 0.0f || beta == 1.0f, "cuda::gemm_lowp: beta must be 0 or 1, got {}", beta);
  const cudaDataType ab = t == cpu::LowpType::BF16 ? CUDA_R_16BF : CUDA_R_16F;
  // Compute type is CUBLAS_COMPUTE_32F for 16-bit inputs whatever the Blas's
  // TF32 setting (TF32 applies to fp32 inputs only): 16-bit products are
  // exact in fp32 and the sums run in fp32, as on the CPU.
  row_major_gemm(b, ab, CUDA_R_32F, trans_a, trans_b, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc,
                 s);
}

}  // namespace parallm::cuda
