// Rotary position embedding on the GPU in the rotate-half form of
// kernels/cpu/rope.h: within each head of dim D, element i pairs with
// i + D/2, rotated by pos * inv_freq[i]: theta^(-2i/D), or a table of the
// scaled variants (a device array of D/2 doubles). Angles, cos and sin are computed in
// double (positions reach 1e5+) and rounded to float, as on the CPU.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallm::cuda {

// x: (B, T, H, D) rotated in place; positions: (T) DEVICE array of global
// positions shared over B. D must be even.
template <class T>
void rope_forward(T* x, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                  double theta, cudaStream_t s);
// The transpose (rotation by -angle), in place on dx.
template <class T>
void rope_backward(T* dx, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                   double theta, cudaStream_t s);
// The same with a DEVICE table inv_freq (D/2 values) in place of theta.
template <class T>
void rope_forward(T* x, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                  const double* inv_freq, cudaStream_t s);
template <class T>
void rope_backward(T* dx, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                   const double* inv_freq, cudaStream_t s);

}  // namespace parallm::cuda
