#include "plan/arrival_wait.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace parallm {

double expected_max_std_normal(int n) {
  if (n <= 1) return 0.0;
  // E[max] = integral of x n phi(x) Phi(x)^(n-1) dx; Simpson's rule over
  // [-10, 10], where the integrand is below 1e-20 outside for any n this
  // model meets (up to thousands of ranks).
  constexpr int kSteps = 800;  // h = 0.025: error far below 1e-6
  constexpr double kLo = -10.0, kHi = 10.0, h = (kHi - kLo) / kSteps;
  const double inv_sqrt_2pi = 1.0 / std::sqrt(2.0 * M_PI);
  auto f = [&](double x) {
    const double phi = inv_sqrt_2pi * std::exp(-0.5 * x * x);
    const double Phi = 0.5 * std::erfc(-x / std::sqrt(2.0));
    return x * n * phi * std::pow(Phi, n - 1);
  };
  double sum = f(kLo) + f(kHi);
  for (int i = 1; i < kSteps; ++i) sum += f(kLo + i * h) * (i % 2 == 1 ? 4.0 : 2.0);
  return sum * h / 3.0;
}

double arrival_wait_s(double jitter, double work_s, int n) {
  if (jitter <= 0 || work_s <= 0 || n <= 1) return 0.0;
  return expected_max_std_normal(n) * jitter * std::sqrt(work_s);
}

double fit_arrival_jitter(const std::vector<double>& works, const std::vector<double>& waits,
                          int n) {
  PX_CHECK(works.size() == waits.size(), "arrival fit: {} works but {} waits", works.size(),
           waits.size());
  const double e = expected_max_std_normal(n);
  double xy = 0, xx = 0;
  for (size_t i = 0; i < works.size(); ++i) {
    const double x = e * std::sqrt(std::max(0.0, works[i]));
    xy += x * waits[i];
    xx += x * x;
  }
  return xx > 0 && xy > 0 ? xy / xx : 0.0;
}

}  // namespace parallm
