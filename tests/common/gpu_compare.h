// Helpers of the GPU kernel tests: random inputs, bf16 rounding on the host
// (bit-identical to the GPU's), typed upload/download as float vectors, and
// an element-wise closeness check that names the first failing element.
// Reference convention: the CPU kernel in float on the (bf16-rounded) inputs.
#pragma once
#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "common/gpu_test.h"
#include "tensor/half.h"

namespace parallm::testing {

inline std::vector<float> random_normal(size_t n, uint32_t seed, float mean = 0.f,
                                        float stddev = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(mean, stddev);
  std::vector<float> x(n);
  for (auto& v : x) v = nd(rng);
  return x;
}

inline __nv_bfloat16 to_bf16(float f) {
  __nv_bfloat16_raw raw;
  raw.x = parallm::f32_to_bf16(f);
  return __nv_bfloat16(raw);
}

inline float from_bf16(__nv_bfloat16 h) {
  const __nv_bfloat16_raw raw = h;
  return parallm::bf16_to_f32(raw.x);
}

// x rounded to what storage type T holds (identity for float).
template <class T>
std::vector<float> round_to(std::vector<float> x) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    for (auto& v : x) v = from_bf16(to_bf16(v));
  return x;
}

template <class T>
std::vector<T> to_storage(const std::vector<float>& x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    std::vector<T> h(x.size());
    for (size_t i = 0; i < x.size(); ++i) h[i] = to_bf16(x[i]);
    return h;
  }
}

template <class T>
std::vector<float> to_floats(const std::vector<T>& x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    std::vector<float> f(x.size());
    for (size_t i = 0; i < x.size(); ++i) f[i] = from_bf16(x[i]);
    return f;
  }
}

// Upload: a device buffer of T holding x (rounded to T).
template <class T>
DeviceBuffer<T> upload(const std::vector<float>& x) {
  return DeviceBuffer<T>(to_storage<T>(x));
}
template <class T>
std::vector<float> download(const DeviceBuffer<T>& b) {
  return to_floats<T>(b.to_host());
}

// The relative tolerance of storage type T: fp32 kernels within 1e-5 of the
// CPU, bf16 within its rounding (2^-8 relative, with margin).
template <class T>
constexpr float rel_tol() {
  return std::is_same_v<T, float> ? 1e-5f : 1e-2f;
}

// Every |got - ref| <= atol + rtol * |ref|; reports the first violation.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& ref, float rtol,
                         float atol, const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const bool ok = std::fabs(got[i] - ref[i]) <= atol + rtol * std::fabs(ref[i]) ||
                    (std::isnan(got[i]) && std::isnan(ref[i]));
    if (!ok && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << ref.size() << " elements off; first at "
                     << first << ": got " << got[first] << ", want " << ref[first] << " (rtol "
                     << rtol << ", atol " << atol << ")";
}

// Bitwise equality of two float vectors (NaN payloads included).
inline void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b,
                             const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    uint32_t x, y;
    std::memcpy(&x, &a[i], 4);
    std::memcpy(&y, &b[i], 4);
    ASSERT_EQ(x, y) << what << ": element " << i << ": " << a[i] << " vs " << b[i];
  }
}

}  // namespace parallm::testing
