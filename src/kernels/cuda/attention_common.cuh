// Device helpers shared by the GPU attention kernels: element load/store in
// fp32, the visibility rule (the CPU kernel's, attention.h: key j is visible
// to query i iff first(b, i) <= j < visible_end(i)), warp reductions and the
// row-delta kernel. Positions are int64 so offsets never overflow.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cpu/attention.h"

namespace parallm::cuda::detail {

__device__ inline float to_f(float x) { return x; }
__device__ inline float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T>
__device__ inline T from_f(float x);
template <>
__device__ inline float from_f<float>(float x) {
  return x;
}
template <>
__device__ inline __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// One past the last key query i sees (causal), or Tk.
__device__ inline int64_t visible_end(const cpu::AttnDims& d, int64_t i) {
  if (!d.causal) return d.Tk;
  const int64_t e = d.q_pos0 + i - d.k_pos0 + 1;
  return e < 0 ? 0 : (e > d.Tk ? d.Tk : e);
}

// The first key of query i's document in batch row b (0 without a mask).
__device__ inline int64_t first_key(const cpu::AttnDims& d, int64_t b, int64_t i) {
  if (d.doc_start == nullptr) return 0;
  const int64_t f = d.doc_start[b * d.doc_ld + d.q_pos0 + i] - d.k_pos0;
  return f < 0 ? 0 : (f > d.Tk ? d.Tk : f);
}

__device__ inline float warp_sum(float x) {
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
__device__ inline float warp_max(float x) {
  for (int o = 16; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

}  // namespace parallm::cuda::detail
