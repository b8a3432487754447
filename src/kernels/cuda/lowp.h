// 16-bit float storage on the GPU for mixed precision, the twins of
// kernels/cpu/gemm_bf16.h's round_to_lowp / widen_lowp / round_inplace: bf16
// or IEEE f16 bits, round to nearest even, f16 overflowing to +-Inf beyond
// 65504, NaN staying NaN. Invariant: every input gives the bits the CPU's
// vector path gives (AVX-512 for bf16, F16C for f16), NaN payloads included;
// the GPU's own conversions make every NaN canonical, so NaN is handled apart.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cpu/gemm_bf16.h"

namespace parallm::cuda {

// dst = 16-bit bits of src (n elements).
void round_to_lowp(uint16_t* dst, const float* src, int64_t n, cpu::LowpType t, cudaStream_t s);
// dst = src widened to f32 (exact).
void widen_lowp(float* dst, const uint16_t* src, int64_t n, cpu::LowpType t, cudaStream_t s);
// In place: x = widen(round(x)), the value an f32 takes when stored in 16 bits.
void round_inplace(float* x, int64_t n, cpu::LowpType t, cudaStream_t s);

}  // namespace parallm::cuda
