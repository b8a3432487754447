// The passes beside the cuBLASLt GEMMs (blas.h): bias and GELU applied after a
// GEMM when no fused epilogue kernel fits the case, the bias gradient as a
// deterministic column sum, C = beta * C for a GEMM with K = 0, and the GELU
// gradient applied to a GEMM's result when the DGELU epilogue does not fit.
// Row-major (rows, cols) matrices; math in fp32.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallm::cuda {

// x = src (rows, cols) + bias (cols, may be null); pre (may be null) = x;
// out = gelu ? gelu_tanh(x) : x. src may equal out or pre.
template <class T>
void bias_act(T* out, T* pre, const T* src, const T* bias, int64_t rows, int64_t cols, bool gelu,
              cudaStream_t s);

// dbias (cols) += sum over rows of dout (rows, cols), in a fixed order. Tall
// matrices are summed in chunks of rows through `scratch` (scratch_floats
// floats of device memory, unused by other work on the stream meanwhile; may
// be null: one pass).
template <class T>
void bias_grad(float* dbias, const T* dout, int64_t rows, int64_t cols, float* scratch,
               int64_t scratch_floats, cudaStream_t s);

// d (n) = d * gelu_tanh'(pre) elementwise (pre: the GELU's input).
template <class T>
void gelu_grad_mul(T* d, const T* pre, int64_t n, cudaStream_t s);

// C (rows, cols; leading dimension ldc) = beta * C; beta = 0 writes zeros.
template <class T>
void scale_matrix(T* C, float beta, int64_t rows, int64_t cols, int64_t ldc, cudaStream_t s);

}  // namespace parallm::cuda
