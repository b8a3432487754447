// LayerNorm and RMSNorm over the last dimension C of N rows, forward and
// backward (statistics saved by the forward). Kernels: kernels/cpu/norm.h.
#pragma once
#include <cstdint>

#include "ops/stream.h"

namespace parallm::ops {

// out (N, C) = (inp - mean) * rstd * weight + bias; saves mean, rstd (N).
void layernorm_forward(const Stream& s, float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int64_t C, double eps);
// dinp, dweight, dbias accumulate (dbias may be null).
void layernorm_backward(const Stream& s, float* dinp, float* dweight, float* dbias,
                        const float* dout, const float* inp, const float* weight, const float* mean,
                        const float* rstd, int64_t N, int64_t C);
// out (N, C) = inp * rstd * weight (Gemma: (1 + weight)); saves rstd (N).
void rmsnorm_forward(const Stream& s, float* out, float* rstd, const float* inp,
                     const float* weight, int64_t N, int64_t C, double eps, bool adds_one = false);
void rmsnorm_backward(const Stream& s, float* dinp, float* dweight, const float* dout,
                      const float* inp, const float* weight, const float* rstd, int64_t N,
                      int64_t C, bool adds_one = false);

}  // namespace parallm::ops
