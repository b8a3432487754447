// Vectorisable float exp/tanh/sigmoid for the elementwise kernels. glibc only
// vectorises expf/tanhf under -ffast-math, which we do not use, so these are
// written as branch-free inline code that GCC turns into SIMD inside loops.
// Invariant: relative error < 3e-7 on [-87.3, 88.3]; NaN in gives NaN out;
// exp is exactly 0 below -87.3 (so exp(-inf) == 0) and saturates at a finite
// ~2.4e38 above 88.38 (never inf), which sigmoid and tanh rely on. One
// double exp too, for x <= 0 only (within 2 ulp of libm; log-sum-exp).
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace parallm::cpu {

inline float exp_f32(float x) {
  constexpr float kHi = 88.3762626647949f, kLo = -87.3365447505531f;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kShift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const bool under = x < kLo;
  x = x > kHi ? kHi : x;  // comparisons keep NaN as NaN
  x = under ? kLo : x;
  const float t = x * kLog2e + kShift;
  const float n = t - kShift;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;  // |r| <= ln2/2, exact-ish reduction
  // Taylor to degree 7: truncation < 1e-8 relative on |r| <= 0.347.
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // The low mantissa bits of t hold n; build 2^n directly in the exponent field.
  const int32_t ni = std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(kShift);
  const float scale = std::bit_cast<float>((ni + 127) << 23);
  const float y = p * scale;
  return under ? 0.0f : y;
}

// exp(x) for x <= 0 (NaN gives NaN) in double precision, branch-free so
// that GCC vectorises it (log-sum-exp over a vocabulary, every decoded token): x = n ln2 + r, |r| <= ln2 / 2, exp(r) by Taylor to
// degree 13 (truncation < 1e-17 relative), 2^n built in the exponent field.
// Within 2 ulp of libm's exp; 0 below -708 (where exp is < 1e-307: nothing
// next to the max term's 1 in log_sum_exp).
inline double exp_f64_nonpositive(double x) {
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // low bits zero: n * kLn2Hi is exact
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kShift = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
  const bool under = x < -708.0;
  x = under ? -708.0 : x;
  const double t = x * kLog2e + kShift;
  const double k = t - kShift;
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  double q = 1.0 / 6227020800.0;  // 1 / 13!
  q = q * r + 1.0 / 479001600.0;
  q = q * r + 1.0 / 39916800.0;
  q = q * r + 1.0 / 3628800.0;
  q = q * r + 1.0 / 362880.0;
  q = q * r + 1.0 / 40320.0;
  q = q * r + 1.0 / 5040.0;
  q = q * r + 1.0 / 720.0;
  q = q * r + 1.0 / 120.0;
  q = q * r + 1.0 / 24.0;
  q = q * r + 1.0 / 6.0;
  q = q * r + 0.5;
  q = q * r + 1.0;
  q = q * r + 1.0;
  const int64_t ni = std::bit_cast<int64_t>(t) - std::bit_cast<int64_t>(kShift);
  const double scale = std::bit_cast<double>((ni + 1023) << 52);
  return under ? 0.0 : q * scale;
}

// exp in the precision of T: the fast path for float, libm for double (the
// double kernels serve as the finite-difference reference, so stay exact).
template <class T>
inline T exp_t(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return exp_f32(x);
  } else {
    return std::exp(x);
  }
}

template <class T>
inline T tanh_t(T x) {
  if constexpr (std::is_same_v<T, float>) {
    // 1 - 2/(e^{2x}+1): saturates correctly at both ends, abs error ~1e-7.
    return 1.0f - 2.0f / (exp_f32(2.0f * x) + 1.0f);
  } else {
    return std::tanh(x);
  }
}

template <class T>
inline T sigmoid_t(T x) {
  return T(1) / (T(1) + exp_t<T>(-x));
}

}  // namespace parallm::cpu
