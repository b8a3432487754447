// The MoE experts' linears: one linear per group of rows (an expert's
// tokens, rows offsets[g] .. offsets[g+1]), f32 or with 16-bit inputs and
// weights under mixed precision. Kernels: kernels/cpu/grouped_gemm.h.
#pragma once
#include <cstdint>

#include "ops/lowp.h"

namespace parallm::ops {

// out (M, OC) = inp (M, IC) W_g^T + b_g per group; offsets (groups + 1).
void grouped_linear_forward(const Stream& s, float* out, const float* inp, const float* weight,
                            const float* bias, const int64_t* offsets, int64_t groups, int64_t IC,
                            int64_t OC);
// dinp += dout W_g; dweight_g += dout_g^T inp_g; dbias_g += row sums (each may be null).
void grouped_linear_backward(const Stream& s, float* dinp, float* dweight, float* dbias,
                             const float* dout, const float* inp, const float* weight,
                             const int64_t* offsets, int64_t groups, int64_t IC, int64_t OC);
// The same with 16-bit inp / dout / weight (rounded by the caller), f32
// outputs, biases and sums; dbias from dout_f32.
void grouped_linear_forward_lowp(const Stream& s, const LowpGemm& gemm, Allocator& scratch,
                                 float* out, const uint16_t* inp, const uint16_t* weight,
                                 const float* bias, const int64_t* offsets, int64_t groups,
                                 int64_t IC, int64_t OC);
void grouped_linear_backward_lowp(const Stream& s, const LowpGemm& gemm, Allocator& scratch,
                                  float* dinp, float* dweight, float* dbias, const uint16_t* dout,
                                  const float* dout_f32, const uint16_t* inp,
                                  const uint16_t* weight, const int64_t* offsets, int64_t groups,
                                  int64_t IC, int64_t OC);

}  // namespace parallm::ops
