// Launch shapes shared by the element-wise kernels: grid-stride loops over
// 64-bit indices, at most a few waves of blocks (the loop covers the rest).
#pragma once
#include <cstdint>

namespace parallm::cuda {

inline constexpr int kElementwiseThreads = 256;

inline int elementwise_blocks(int64_t n) {
  int64_t b = (n + kElementwiseThreads - 1) / kElementwiseThreads;
  return static_cast<int>(b < 132 * 16 ? b : 132 * 16);  // 16 blocks per SM on an H100
}

__device__ inline int64_t grid_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

}  // namespace parallm::cuda
