// Rotary embedding, rotate-half form. Angles pos * inv_freq[i] are computed
// in double (positions reach 1e5+, where float angles lose whole radians) into
// a per-call (T, D/2) cos/sin table, then applied in T. Backward is the same
// rotation with the sine negated, which is its transpose (and inverse).
#include "kernels/cpu/rope.h"

#include <cmath>
#include <vector>

#include "base/error.h"

namespace parallm::cpu {

namespace {

template <class T>
void rope_apply(T* x, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                const double* inv_freq, bool inverse) {
  PX_CHECK(D % 2 == 0, "rope: head dim D={} must be even", D);
  PX_CHECK(inv_freq != nullptr, "rope: no inverse frequencies for head dim {}", D);
  const int64_t half = D / 2;
  std::vector<T> cos_t(static_cast<size_t>(T_ * half)), sin_t(static_cast<size_t>(T_ * half));
  const double sign = inverse ? -1.0 : 1.0;
#pragma omp parallel for schedule(static) if (T_ * half > 4096)
  for (int64_t t = 0; t < T_; ++t) {
    const double pos = static_cast<double>(positions[t]);
    for (int64_t i = 0; i < half; ++i) {
      const double a = pos * inv_freq[i];
      cos_t[t * half + i] = static_cast<T>(std::cos(a));
      sin_t[t * half + i] = static_cast<T>(sign * std::sin(a));
    }
  }
#pragma omp parallel for schedule(static) if (B * T_ * H * D > 16384)
  for (int64_t bt = 0; bt < B * T_; ++bt) {
    const T* c = cos_t.data() + (bt % T_) * half;
    const T* s = sin_t.data() + (bt % T_) * half;
    for (int64_t h = 0; h < H; ++h) {
      T* lo = x + (bt * H + h) * D;
      T* hi = lo + half;
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        const T a = lo[i], b = hi[i];
        lo[i] = a * c[i] - b * s[i];
        hi[i] = b * c[i] + a * s[i];
      }
    }
  }
}

std::vector<double> plain_inv_freq(int64_t D, double theta) {
  PX_CHECK(D % 2 == 0, "rope: head dim D={} must be even", D);
  PX_CHECK(theta > 0, "rope: theta={} must be positive", theta);
  std::vector<double> f(static_cast<size_t>(D / 2));
  for (int64_t i = 0; i < D / 2; ++i)
    f[i] = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(D));
  return f;
}

}  // namespace

template <class T>
void rope_forward(T* x, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                  const double* inv_freq) {
  rope_apply(x, positions, B, T_, H, D, inv_freq, false);
}

template <class T>
void rope_backward(T* dx, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                   const double* inv_freq) {
  rope_apply(dx, positions, B, T_, H, D, inv_freq, true);
}

template <class T>
void rope_forward(T* x, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                  double theta) {
  rope_apply(x, positions, B, T_, H, D, plain_inv_freq(D, theta).data(), false);
}

template <class T>
void rope_backward(T* dx, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                   double theta) {
  rope_apply(dx, positions, B, T_, H, D, plain_inv_freq(D, theta).data(), true);
}

#define PX_INSTANTIATE(T)                                                                        \
  template void rope_forward<T>(T*, const int64_t*, int64_t, int64_t, int64_t, int64_t,          \
                                const double*);                                                  \
  template void rope_backward<T>(T*, const int64_t*, int64_t, int64_t, int64_t, int64_t,         \
                                 const double*);                                                 \
  template void rope_forward<T>(T*, const int64_t*, int64_t, int64_t, int64_t, int64_t, double); \
  template void rope_backward<T>(T*, const int64_t*, int64_t, int64_t, int64_t, int64_t, double);
PX_INSTANTIATE(float)
PX_INSTANTIATE(double)
#undef PX_INSTANTIATE

}  // namespace parallm::cpu
