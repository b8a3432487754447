// The last stage of the deterministic column reductions (norm weight and
// bias gradients): out[c] += sum over chunks k of part[k, c]. One warp per
// column, lanes striding over the chunks, then the fixed shuffle tree, so the
// order is the same every run. (A thread per column walking every chunk was
// latency-bound: 0.45 ms per LayerNorm backward on an H200 at 128 chunks.)
#pragma once
#include <cstdint>

#include "kernels/cuda/reduce.cuh"

namespace parallm::cuda {

inline constexpr int kColumnSumWarps = 8;  // columns per block

template <class Acc>
__global__ void column_sum_kernel(float* out, const Acc* part, int64_t chunks, int64_t cols) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumnSumWarps + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (c >= cols) return;
  Acc s = 0;
  for (int64_t k = lane; k < chunks; k += 32) s += part[k * cols + c];
  s = warp_sum(s);
  if (lane == 0) out[c] += static_cast<float>(s);
}

inline unsigned column_sum_blocks(int64_t cols) {
  return static_cast<unsigned>((cols + kColumnSumWarps - 1) / kColumnSumWarps);
}

}  // namespace parallm::cuda
