// Element-wise ops of the layers: GELU (tanh form), SwiGLU and GeGLU
// forward and backward, and the in-place sums of residuals and gradients.
// Shapes are flat: n elements each. Kernels: kernels/cpu/activation.h.
#pragma once
#include <cstdint>

#include "ops/stream.h"

namespace parallm::ops {

void gelu_forward(const Stream& s, float* out, const float* inp, int64_t n);
void gelu_backward(const Stream& s, float* dinp, const float* inp, const float* dout, int64_t n);
// out = silu(gate) * up (SwiGLU) or gelu(gate) * up (GeGLU).
void swiglu_forward(const Stream& s, float* out, const float* gate, const float* up, int64_t n);
void swiglu_backward(const Stream& s, float* dgate, float* dup, const float* dout,
                     const float* gate, const float* up, int64_t n);
void geglu_forward(const Stream& s, float* out, const float* gate, const float* up, int64_t n);
void geglu_backward(const Stream& s, float* dgate, float* dup, const float* dout, const float* gate,
                    const float* up, int64_t n);
// y += x; y += a x.
void add_inplace(const Stream& s, float* y, const float* x, int64_t n);
void axpy(const Stream& s, float* y, float a, const float* x, int64_t n);
// out (N, C) += bias (C) on every row (a linear's bias after its GEMM).
void add_bias_rows(const Stream& s, float* out, const float* bias, int64_t N, int64_t C);

}  // namespace parallm::ops
