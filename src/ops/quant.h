// Inference weights in GGUF's block formats (Q8_0, Q4_0, Q4_K, Q6_K) and the
// linear layer over one: integer dot products against the activation
// quantised to 8 bits per block of 32, a decode step's few rows and a
// prompt's many alike. CPU only: a device without these kernels gets a
// clear error. Kernels:
// kernels/cpu/quant_blocks.h, quant_weight.h, quant_gemm.h.
#pragma once
#include <cstdint>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu/quant_weight.h"
#include "ops/stream.h"

namespace parallm::ops {

using cpu::dequantize_blocks;
using cpu::quant_bits_per_value;
using cpu::quant_row_bytes;
using cpu::quant_traits;
using cpu::quant_type_from_ggml;
using cpu::quant_type_from_name;
using cpu::quantize_blocks;
using cpu::QuantTraits;
using cpu::QuantType;
using cpu::QuantWeight;

// out (M, N) = inp (M, K) W^T + bias (N); bias may be null.
void quant_linear_forward(const Stream& s, Allocator& a, float* out, const float* inp,
                          const QuantWeight& w, const float* bias, int64_t M);

}  // namespace parallm::ops
