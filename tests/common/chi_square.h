// Chi-square helpers of the sampling tests (speculative decoding's law
// against plain decoding's; docs/testing.md): the acceptance bound and the
// two-sample statistic over token counts. Draws are seeded, so each run of
// a test sees the same numbers; a statistic above the bound is a
// distribution mismatch, not chance.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <utility>

namespace parallm::testing {

// The 1 - 1e-4 quantile of chi-square with df degrees of freedom (Wilson and
// Hilferty's cube-root normal approximation, z = 3.719).
inline double chi2_bound(int df) {
  const double a = 2.0 / (9.0 * df), z = 3.719;
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

// Two-sample chi-square of counts n[id] = {run a, run b} of equal sizes,
// over the ids seen at least 10 times in both together (the rest pooled):
// the statistic and its degrees of freedom.
inline std::pair<double, int> two_sample_chi2(const std::map<int32_t, std::array<int, 2>>& seen) {
  double chi2 = 0;
  int bins = 0;
  std::array<int, 2> pooled = {0, 0};
  auto add = [&](const std::array<int, 2>& n) {
    chi2 += std::pow(n[0] - n[1], 2) / (n[0] + n[1]);
    ++bins;
  };
  for (const auto& [id, n] : seen) {
    if (n[0] + n[1] >= 10) {
      add(n);
    } else {
      pooled[0] += n[0];
      pooled[1] += n[1];
    }
  }
  if (pooled[0] + pooled[1] > 0) add(pooled);
  return {chi2, bins - 1};
}

}  // namespace parallm::testing
