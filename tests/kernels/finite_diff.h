// Shared helpers for the kernel tests: deterministic random buffers and a
// central finite-difference check of an analytic gradient. The loss is always
// a scalar L(x) (typically sum(out * R) for random R), evaluated in double.
// Invariant: the check restores every perturbed element before returning.
#pragma once
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/rng.h"

namespace parallm::test {

// n standard normals * scale (+ shift), reproducible from (seed, name).
template <class T = double>
std::vector<T> randn(size_t n, uint64_t seed, const char* name, double scale = 1.0,
                     double shift = 0.0) {
  const uint64_t key = stream_key(seed, name);
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(shift + scale * normal_at(key, i));
  return v;
}

template <class T>
std::vector<T> cast_vec(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Checks analytic[i] against (L(x + h e_i) - L(x - h e_i)) / 2h for every i.
// Tolerance: rtol * max(1, |analytic|) (absolute for small gradients).
inline void expect_grad_matches(const std::function<double()>& loss, std::vector<double>& x,
                                const std::vector<double>& analytic, const std::string& what,
                                double h = 1e-6, double rtol = 1e-6) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double lp = loss();
    x[i] = saved - h;
    const double lm = loss();
    x[i] = saved;
    const double numeric = (lp - lm) / (2 * h);
    EXPECT_NEAR(analytic[i], numeric, rtol * std::max(1.0, std::abs(analytic[i])))
        << what << "[" << i << "]";
  }
}

inline void expect_all_near(const std::vector<float>& got, const std::vector<double>& want,
                            double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << "[" << i << "]";
}

// Runs fn with the OpenMP thread count set to n, restoring the previous count.
template <class Fn>
void with_threads(int n, Fn&& fn) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(n);
  fn();
  omp_set_num_threads(saved);
}

}  // namespace parallm::test
