// Device helpers shared by the row-wise kernels: bf16/float loads and stores
// with fp32 math, and warp/block sums and maxima. Every reduction is a fixed
// shuffle tree over a fixed thread layout, so results are bitwise
// reproducible run to run. Block reductions must be reached by every thread
// of the block (they contain __syncthreads) and need blockDim.x % 32 == 0.
#pragma once
#include <cuda_bf16.h>

namespace parallm::cuda {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

template <class V>
__device__ __forceinline__ V warp_sum(V v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block, returned to every thread. shm: at least 33 elements.
template <class V>
__device__ __forceinline__ V block_sum(V v, V* shm) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // shm may still be read from a previous call
  if (lane == 0) shm[warp] = v;
  __syncthreads();
  if (warp == 0) {
    V t = lane < nwarps ? shm[lane] : V(0);
    t = warp_sum(t);
    if (lane == 0) shm[32] = t;
  }
  __syncthreads();
  return shm[32];
}

// Max over the block, returned to every thread. shm: at least 33 floats.
__device__ __forceinline__ float block_max(float v, float* shm) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) shm[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float t = lane < nwarps ? shm[lane] : -INFINITY;
    t = warp_max(t);
    if (lane == 0) shm[32] = t;
  }
  __syncthreads();
  return shm[32];
}

}  // namespace parallm::cuda
