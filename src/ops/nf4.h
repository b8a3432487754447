// QLoRA's frozen base: NF4 weights (blockwise 4-bit NormalFloat, bnb's
// layout) and the linear layer over one, dequantised a tile at a time.
// The weight's quantised tensors live on the allocator's device, as the
// model's parameters do; a GPU has no NF4 op yet (a clear error there).
// Kernels: kernels/cpu/nf4_weight.h, nf4_gemm.h, nf4.h.
#pragma once
#include <cstdint>
#include <optional>

#include "kernels/cpu/nf4.h"
#include "kernels/cpu/nf4_weight.h"
#include "ops/lowp.h"

namespace parallm::ops {

using cpu::kNf4BlockSize;
using cpu::nf4_storage_bytes;
using cpu::Nf4Weight;

// out (M, N) = inp (M, K) W^T + bias; round: tiles rounded to 16 bits.
void nf4_linear_forward(const Stream& s, Allocator& a, float* out, const float* inp,
                        const Nf4Weight& w, const float* bias, int64_t M,
                        std::optional<LowpType> round = {});
// dinp (M, K) += dout (M, N) W (the frozen weight gets no gradient).
void nf4_linear_backward_input(const Stream& s, Allocator& a, float* dinp, const float* dout,
                               const Nf4Weight& w, int64_t M, std::optional<LowpType> round = {});

}  // namespace parallm::ops
