// LayerNorm and RMSNorm over the last dimension C of N rows, forward and
// backward. Statistics are computed in double for double inputs and in float
// (with a compensated two-pass mean/variance) for float inputs.
#pragma once
#include <cstdint>

namespace parallm::cpu {

// out (N, C) = (inp - mean) * rstd * weight + bias; saves mean (N), rstd (N).
template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias,
                       int64_t N, int64_t C, double eps);
// dinp += ..., dweight += ..., dbias += ... (dbias may be null).
template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        const T* mean, const T* rstd, int64_t N, int64_t C);

// out (N, C) = inp * rstd * weight, rstd = 1/sqrt(mean(inp^2) + eps); saves rstd (N).
// adds_one (Gemma): the gain is (1 + weight), so a zero weight is the identity;
// dweight is the same sum either way.
template <class T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, const T* weight, int64_t N, int64_t C,
                     double eps, bool adds_one = false);
template <class T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight,
                      const T* rstd, int64_t N, int64_t C, bool adds_one = false);

}  // namespace parallm::cpu
