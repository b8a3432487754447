// The 8-row dot-product kernels over packed GGUF groups (quant_packed.h),
// AVX2 or AVX512-VNNI. Each block's int32 products are exact; the f32 sums
// run per lane in block order.
#pragma once
#include <cstdint>

#include "kernels/cpu/quant_dot.h"

namespace parallm::cpu {

// out[m * ldc + r] = row r of the group . activation row m, for r < valid
// (<= 8) and m < the fn's M.
using PackedGroupFn = void (*)(const uint8_t* group, const QuantRows& x, float* out, int64_t ldc,
                               int valid);
// The kernel for M rows (1..8) of type t (Q8_0, Q4_0, Q4_K); vnni: the
// VNNI kernel (Q8_0 then expects codes packed biased).
PackedGroupFn packed_group_fn(bool vnni, QuantType t, int M);

}  // namespace parallm::cpu
