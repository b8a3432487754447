// argmax_rows (argmax.h): one block a row; each thread keeps the first
// maximum of its strided elements, then (value, index) pairs meet in a
// fixed shuffle tree where the larger value, or at a tie the lower index,
// wins.
#include <climits>
#include <cmath>

#include "kernels/cuda/arg_check.h"
#include "kernels/cuda/argmax.h"
#include "kernels/cuda/cuda_check.h"

namespace parallm::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void keep_better(float& v, int& i, float ov, int oi) {
  if (ov > v || (ov == v && oi < i)) {
    v = ov;
    i = oi;
  }
}

__device__ __forceinline__ void warp_argmax(float& v, int& i) {
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, i, o);
    keep_better(v, i, ov, oi);
  }
}

__global__ void argmax_rows_kernel(int32_t* out, const float* x, int64_t V) {
  __shared__ float sv[kThreads / 32];
  __shared__ int si[kThreads / 32];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * V;
  // i == INT_MAX: no element yet (a row of -inf still names its first index).
  float v = -INFINITY;
  int i = INT_MAX;
  for (int64_t j = threadIdx.x; j < V; j += kThreads) {
    const float e = row[j];
    if (!isnan(e) && (i == INT_MAX || e > v)) {  // strictly greater: the first maximum stays
      v = e;
      i = static_cast<int>(j);
    }
  }
  warp_argmax(v, i);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sv[warp] = v;
    si[warp] = i;
  }
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? sv[lane] : -INFINITY;
    i = lane < kThreads / 32 ? si[lane] : INT_MAX;
    warp_argmax(v, i);
    if (lane == 0) out[blockIdx.x] = i == INT_MAX ? 0 : i;
  }
}

}  // namespace

void argmax_rows(int32_t* out, const float* x, int64_t N, int64_t V, cudaStream_t s) {
  if (N == 0) return;
  require_arg(V >= 1 && V < INT_MAX, "argmax_rows", "row length V in 1..2^31-1", V);
  argmax_rows_kernel<<<static_cast<unsigned>(N), kThreads, 0, s>>>(out, x, V);
  PX_CUDA_LAUNCH("argmax_rows");
}

}  // namespace parallm::cuda
