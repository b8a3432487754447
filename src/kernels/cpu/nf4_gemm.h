// The linear layer over an NF4 weight (QLoRA's frozen base): W (N, K) is
// dequantised a tile of rows at a time into one small Workspace-tagged
// scratch buffer (at most kNf4TileBytes of f32) and each tile goes through
// the dense f32 GEMM (cpu::gemm: oneDNN, or the skinny kernel for few rows).
// Invariant: no fp32 copy of more than one tile of W exists at any time, so
// the allocator's Workspace peak bounds what dequantisation costs.
#pragma once
#include <cstdint>

#include <optional>

#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/nf4_weight.h"
#include "tensor/allocator.h"

namespace parallm::cpu {

inline constexpr int64_t kNf4TileBytes = 256 * 1024;  // an L2-sized tile of f32 rows

// Rows of W per tile for K columns: as many as fit kNf4TileBytes, at least one.
int64_t nf4_tile_rows(int64_t K);

// out (M, N) = inp (M, K) W^T + bias (N); bias may be null. round: each
// dequantised tile rounded to 16 bits (bnb's bf16 compute dtype; the caller
// rounds the activation operand), products summed in f32.
void nf4_linear_forward(Allocator& a, float* out, const float* inp, const Nf4Weight& w,
                        const float* bias, int64_t M, std::optional<LowpType> round = {});
// dinp (M, K) += dout (M, N) W. W is frozen: it gets no gradient.
void nf4_linear_backward_input(Allocator& a, float* dinp, const float* dout, const Nf4Weight& w,
                               int64_t M, std::optional<LowpType> round = {});

}  // namespace parallm::cpu
