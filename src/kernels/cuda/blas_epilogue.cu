// Bias, GELU, GELU-gradient, bias-gradient and scaling passes beside the GEMMs
// (blas_epilogue.h).
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/blas_epilogue.h"
#include "kernels/cuda/column_sum.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gelu.cuh"
#include "kernels/cuda/launch.cuh"

namespace parallm::cuda {
namespace {

__device__ inline float load(const float* p, int64_t i) { return p[i]; }
__device__ inline float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ inline void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ inline void store(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16(v); }

template <class T>
__global__ void bias_act_kernel(T* out, T* pre, const T* src, const T* bias, int64_t rows,
                                int64_t cols, bool gelu) {
  const int64_t n = rows * cols;
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    float x = load(src, i);
    if (bias != nullptr) x += load(bias, i % cols);
    if (pre != nullptr) store(pre, i, x);
    store(out, i, gelu ? gelu_tanh(x) : x);
  }
}

// Column sums in a fixed order (deterministic). A block covers 32 columns and
// one chunk of rows; its 8 rows of threads stride over the chunk, and the 8
// partial sums of a column are added in order. With one chunk the block adds
// into dbias; with several each writes its sum to partial[chunk][col] and
// column_sum_kernel (column_sum.cuh) adds the chunks in a fixed order.
constexpr int kGradCols = 32;
constexpr int kGradRows = 8;

template <class T>
__global__ void bias_grad_kernel(float* dbias, float* partial, const T* dout, int64_t rows,
                                 int64_t cols, int64_t rows_per_chunk) {
  __shared__ float part[kGradRows][kGradCols + 1];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kGradCols + threadIdx.x;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t r1 = r0 + rows_per_chunk < rows ? r0 + rows_per_chunk : rows;
  float acc = 0.f;
  if (c < cols)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kGradRows) acc += load(dout, r * cols + c);
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float sum = 0.f;
    for (int y = 0; y < kGradRows; ++y) sum += part[y][threadIdx.x];
    if (partial == nullptr)
      dbias[c] += sum;
    else
      partial[static_cast<int64_t>(blockIdx.y) * cols + c] = sum;
  }
}

template <class T>
__global__ void gelu_grad_mul_kernel(T* d, const T* pre, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride())
    store(d, i, load(d, i) * gelu_tanh_grad(load(pre, i)));
}

template <class T>
__global__ void scale_kernel(T* C, float beta, int64_t rows, int64_t cols, int64_t ldc) {
  const int64_t n = rows * cols;
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const int64_t at = (i / cols) * ldc + i % cols;
    store(C, at, beta == 0.f ? 0.f : beta * load(C, at));
  }
}

}  // namespace

template <class T>
void bias_act(T* out, T* pre, const T* src, const T* bias, int64_t rows, int64_t cols, bool gelu,
              cudaStream_t s) {
  const int64_t n = rows * cols;
  if (n == 0) return;
  bias_act_kernel<T>
      <<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(out, pre, src, bias, rows, cols, gelu);
  PX_CUDA_LAUNCH("bias_act_kernel");
}

template <class T>
void bias_grad(float* dbias, const T* dout, int64_t rows, int64_t cols, float* scratch,
               int64_t scratch_floats, cudaStream_t s) {
  if (cols == 0 || rows == 0) return;
  const int64_t col_blocks = (cols + kGradCols - 1) / kGradCols;
  // Enough chunks of rows for ~1024 blocks, each at least 64 rows, as many
  // as the scratch holds; the count depends only on the shape and scratch size.
  int64_t chunks = (1024 + col_blocks - 1) / col_blocks;
  chunks = std::min(chunks, (rows + 63) / 64);
  chunks = std::min(chunks, scratch != nullptr ? scratch_floats / cols : int64_t{1});
  chunks = std::max<int64_t>(std::min<int64_t>(chunks, 65535), 1);
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  float* partial = chunks > 1 ? scratch : nullptr;
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(chunks));
  bias_grad_kernel<T><<<grid, dim3(kGradCols, kGradRows), 0, s>>>(dbias, partial, dout, rows, cols,
                                                                  rows_per_chunk);
  PX_CUDA_LAUNCH("bias_grad_kernel");
  if (partial != nullptr) {
    column_sum_kernel<float>
        <<<column_sum_blocks(cols), kColumnSumWarps * 32, 0, s>>>(dbias, partial, chunks, cols);
    PX_CUDA_LAUNCH("bias_grad_finish");
  }
}

template <class T>
void gelu_grad_mul(T* d, const T* pre, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  gelu_grad_mul_kernel<T><<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(d, pre, n);
  PX_CUDA_LAUNCH("gelu_grad_mul_kernel");
}

template <class T>
void scale_matrix(T* C, float beta, int64_t rows, int64_t cols, int64_t ldc, cudaStream_t s) {
  const int64_t n = rows * cols;
  if (n == 0 || beta == 1.f) return;
  scale_kernel<T><<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(C, beta, rows, cols, ldc);
  PX_CUDA_LAUNCH("scale_kernel");
}

template void bias_act<float>(float*, float*, const float*, const float*, int64_t, int64_t, bool,
                              cudaStream_t);
template void bias_act<__nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, const __nv_bfloat16*,
                                      const __nv_bfloat16*, int64_t, int64_t, bool, cudaStream_t);
template void bias_grad<float>(float*, const float*, int64_t, int64_t, float*, int64_t,
                               cudaStream_t);
template void bias_grad<__nv_bfloat16>(float*, const __nv_bfloat16*, int64_t, int64_t, float*,
                                       int64_t, cudaStream_t);
template void gelu_grad_mul<float>(float*, const float*, int64_t, cudaStream_t);
template void gelu_grad_mul<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, int64_t,
                                           cudaStream_t);
template void scale_matrix<float>(float*, float, int64_t, int64_t, int64_t, cudaStream_t);
template void scale_matrix<__nv_bfloat16>(__nv_bfloat16*, float, int64_t, int64_t, int64_t,
                                          cudaStream_t);

}  // namespace parallm::cuda
