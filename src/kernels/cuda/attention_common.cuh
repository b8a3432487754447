// Device helpers shared by the GPU attention kernels: the visibility rule
// (the CPU kernel's, attention.h: key j is visible to query i iff
// first(b, i) <= j < visible_end(i)); element conversion and warp
// reductions come from reduce.cuh. Positions are int64 so offsets never
// overflow.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cpu/attention.h"
#include "kernels/cuda/reduce.cuh"  // to_float, from_float, warp_sum, warp_max

namespace parallm::cuda::detail {

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

}  // namespace parallm::cuda::detail
