// Element conversion on the GPU: f32 <-> bf16 (round to nearest even, as the
// CPU's half.h does, so both backends store the same bits) and fills.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallm::cuda {

void f32_to_bf16(__nv_bfloat16* out, const float* in, int64_t n, cudaStream_t s);
void bf16_to_f32(float* out, const __nv_bfloat16* in, int64_t n, cudaStream_t s);
void fill(float* out, float value, int64_t n, cudaStream_t s);

}  // namespace parallm::cuda
