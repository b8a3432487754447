// Element conversion on the GPU (convert.h).
#include "kernels/cuda/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"

namespace parallm::cuda {
namespace {

__global__ void f32_to_bf16_kernel(__nv_bfloat16* out, const float* in, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) out[i] = __float2bfloat16_rn(in[i]);
}

__global__ void bf16_to_f32_kernel(float* out, const __nv_bfloat16* in, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) out[i] = __bfloat162float(in[i]);
}

__global__ void fill_kernel(float* out, float value, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) out[i] = value;
}

}  // namespace

void f32_to_bf16(__nv_bfloat16* out, const float* in, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  f32_to_bf16_kernel<<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(out, in, n);
  PX_CUDA_LAUNCH("f32_to_bf16");
}

void bf16_to_f32(float* out, const __nv_bfloat16* in, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  bf16_to_f32_kernel<<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(out, in, n);
  PX_CUDA_LAUNCH("bf16_to_f32");
}

void fill(float* out, float value, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  fill_kernel<<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(out, value, n);
  PX_CUDA_LAUNCH("fill");
}

}  // namespace parallm::cuda
