// Dense GEMMs on the GPU through cuBLASLt, with the meaning of kernels/cpu/
// matmul.h: row-major, C (M, N) = alpha * op(A) * op(B) + beta * C, and the
// linear layer built on it (bias and tanh-GELU fused into the GEMM's epilogue
// where cuBLASLt has a kernel for the case, a separate pass otherwise), and
// the backward of a linear layer fed by a GELU (GELU gradient fused likewise).
// T = float (fp32 in and out) or __nv_bfloat16 (bf16 in and out, fp32
// accumulation). Backward accumulates (+=) like the CPU kernels; for bf16 the
// weight and bias gradients are fp32 accumulators. dbias is deterministic.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/cpu/gemm_bf16.h"

namespace parallm::cuda {

// A cuBLASLt handle and its 32 MiB workspace on the device current at
// construction; one per device per thread of use, and calls sharing one Blas
// must be on one stream at a time (the workspace is reused). allow_tf32 =
// false keeps fp32 GEMMs in true fp32 (CUBLAS_COMPUTE_32F, not _FAST_TF32).
class Blas {
 public:
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;
  explicit Blas(bool allow_tf32 = false);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  bool allow_tf32() const { return allow_tf32_; }
  int device() const;
  struct Impl;  // cuBLASLt state; defined in blas.cpp only (no cuBLAS header here)
  Impl& impl() { return *impl_; }

 private:
  bool allow_tf32_;
  std::unique_ptr<Impl> impl_;
};

template <class T>
void gemm(Blas& b, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const T* A, int64_t lda, const T* B, int64_t ldb, float beta, T* C, int64_t ldc,
          cudaStream_t s);

// Mixed precision, the twin of cpu::LowpGemm::gemm (blas_lowp.cpp): C (M, N)
// (f32) = op(A) op(B) + beta C, row-major, A and B the 16-bit bits of type t
// (bf16 or IEEE f16), products and sums in fp32 (CUBLAS_COMPUTE_32F, never
// TF32); beta is 0 or 1. Equal to the CPU's result up to the summation order.
void gemm_lowp(Blas& b, cpu::LowpType t, bool trans_a, bool trans_b, int64_t M, int64_t N,
               int64_t K, const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb,
               float beta, float* C, int64_t ldc, cudaStream_t s);

enum class Epilogue { None, Gelu };  // Gelu: the tanh approximation (GPT-2's gelu_new)

// out (N, OC) = inp (N, IC) * weight (OC, IC)^T + bias (OC); bias may be null.
// Epilogue::Gelu: pre_gelu (N, OC), when not null, receives the pre-activation
// (bias included) and out = gelu(pre-activation).
template <class T>
void linear_forward(Blas& b, T* out, T* pre_gelu, const T* inp, const T* weight, const T* bias,
                    int64_t N, int64_t IC, int64_t OC, Epilogue ep, cudaStream_t s);

// dinp (N, IC) += dout * weight; dweight (OC, IC) += dout^T * inp; dbias (OC) +=
// sum over rows of dout. Each may be null (skipped).
template <class T>
void linear_backward(Blas& b, T* dinp, float* dweight, float* dbias, const T* dout, const T* inp,
                     const T* weight, int64_t N, int64_t IC, int64_t OC, cudaStream_t s);

// The backward of out (N, OC) = gelu(pre) (N, IC) * weight^T + bias, with
// inp = gelu(pre) the layer's input (GPT-2's MLP output projection):
// dpre (N, IC) = (dout * weight) * gelu'(pre), WRITTEN (not added);
// dweight (OC, IC) += dout^T * inp; dbias (OC) += sum over rows of dout
// (deterministic). dweight and dbias may be null. dpre must not overlap pre.
// bf16 fuses the GELU gradient into the GEMM (cuBLASLt's DGELU epilogue, tanh
// form) when cuBLASLt takes the case (IC % 8 == 0, pre 16-byte aligned); fp32
// and other cases run the GEMM into dpre, then multiply by gelu'(pre).
template <class T>
void linear_backward_gelu(Blas& b, T* dpre, const T* pre, float* dweight, float* dbias,
                          const T* dout, const T* inp, const T* weight, int64_t N, int64_t IC,
                          int64_t OC, cudaStream_t s);

}  // namespace parallm::cuda
