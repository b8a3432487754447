// Rotary embedding kernels (rope.h). One thread per (b, t, i) pair index
// computes its cos/sin once in double and applies it to all H heads, so the
// trigonometry is shared H ways and adjacent threads touch adjacent i.
#include "kernels/cuda/arg_check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/rope.h"

namespace parallm::cuda {
namespace {

template <class T>
__global__ void rope_kernel(T* x, const int64_t* positions, int64_t BT, int64_t T_, int64_t H,
                            int64_t D, const double* table, double theta, double sign) {
  const int64_t half = D / 2, total = BT * half;
  for (int64_t k = grid_index(); k < total; k += grid_stride()) {
    const int64_t bt = k / half, i = k - bt * half;
    const double inv_freq =
        table != nullptr ? table[i]
                         : pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(D));
    const double a = static_cast<double>(positions[bt % T_]) * inv_freq;
    double sa, ca;
    sincos(a, &sa, &ca);
    const float c = static_cast<float>(ca), s = static_cast<float>(sign * sa);
    for (int64_t h = 0; h < H; ++h) {
      T* lo = x + (bt * H + h) * D + i;
      T* hi = lo + half;
      const float u = to_float(*lo), v = to_float(*hi);
      *lo = from_float<T>(u * c - v * s);
      *hi = from_float<T>(v * c + u * s);
    }
  }
}

template <class T>
void rope_apply(T* x, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                const double* table, double theta, double sign, const char* name,
                cudaStream_t s) {
  require_arg(D >= 2 && D % 2 == 0, name, "an even head dim D >= 2, D", D);
  require_arg(B >= 0 && T_ >= 0 && H >= 0, name, "B, T, H >= 0, B * T * H", B * T_ * H);
  require_arg(table != nullptr || theta > 0, name, "theta > 0, theta (truncated)",
              static_cast<int64_t>(theta));
  const int64_t pairs = B * T_ * (D / 2);
  if (pairs == 0 || H == 0) return;
  rope_kernel<T><<<elementwise_blocks(pairs), kElementwiseThreads, 0, s>>>(
      x, positions, B * T_, T_, H, D, table, theta, sign);
  PX_CUDA_LAUNCH(name);
}

}  // namespace

template <class T>
void rope_forward(T* x, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                  double theta, cudaStream_t s) {
  rope_apply(x, positions, B, T_, H, D, nullptr, theta, 1.0, "cuda::rope_forward", s);
}

template <class T>
void rope_forward(T* x, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                  const double* inv_freq, cudaStream_t s) {
  rope_apply(x, positions, B, T_, H, D, inv_freq, 0.0, 1.0, "cuda::rope_forward", s);
}

template <class T>
void rope_backward(T* dx, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                   double theta, cudaStream_t s) {
  rope_apply(dx, positions, B, T_, H, D, nullptr, theta, -1.0, "cuda::rope_backward", s);
}

template <class T>
void rope_backward(T* dx, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                   const double* inv_freq, cudaStream_t s) {
  rope_apply(dx, positions, B, T_, H, D, inv_freq, 0.0, -1.0, "cuda::rope_backward", s);
}

#define PX_INSTANTIATE(T)                                                                        \
  template void rope_forward<T>(T*, const int64_t*, int64_t, int64_t, int64_t, int64_t, double,  \
                                cudaStream_t);                                                   \
  template void rope_backward<T>(T*, const int64_t*, int64_t, int64_t, int64_t, int64_t, double, \
                                 cudaStream_t);                                                  \
  template void rope_forward<T>(T*, const int64_t*, int64_t, int64_t, int64_t, int64_t,          \
                                const double*, cudaStream_t);                                    \
  template void rope_backward<T>(T*, const int64_t*, int64_t, int64_t, int64_t, int64_t,         \
                                 const double*, cudaStream_t);
PX_INSTANTIATE(float)
PX_INSTANTIATE(__nv_bfloat16)
#undef PX_INSTANTIATE

}  // namespace parallm::cuda
