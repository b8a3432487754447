// Holds a layout's parameters against the one-process run's, by name, the
// way every layout-invariance test does: the relative distance of the whole
// vector (norm-wise) within norm_tol, and each element within elem_tol
// relative, with a floor of elem_tol x the parameters' RMS for elements near
// zero. Tensors may hold padded vocabulary rows past the reference's size;
// those are not compared. `names_from_got`: compare the names `got` holds (a
// pipeline stage holds a subset) instead of every name of `ref`.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace parallm::testing {

using NamedParams = std::map<std::string, std::vector<float>>;

inline void expect_params_match(const NamedParams& ref, const NamedParams& got, double norm_tol,
                                double elem_tol, const std::string& what,
                                bool names_from_got = false) {
  const NamedParams& names = names_from_got ? got : ref;
  ASSERT_FALSE(names.empty()) << what;
  double ss = 0.0, dd = 0.0;
  size_t count = 0;
  for (const auto& [name, unused] : names) {
    auto r = ref.find(name);
    auto g = got.find(name);
    ASSERT_TRUE(r != ref.end() && g != got.end()) << what << ": parameter " << name;
    ASSERT_GE(g->second.size(), r->second.size()) << what << ": " << name;
    for (size_t i = 0; i < r->second.size(); ++i) {
      const double d = double(g->second[i]) - r->second[i];
      ss += double(r->second[i]) * r->second[i];
      dd += d * d;
    }
    count += r->second.size();
  }
  EXPECT_LE(std::sqrt(dd / ss), norm_tol) << what << ": relative distance of the parameters";
  const double floor = elem_tol * std::sqrt(ss / count);
  for (const auto& [name, unused] : names) {
    const std::vector<float>& r = ref.at(name);
    const std::vector<float>& g = got.at(name);
    size_t bad = 0, worst = 0;
    double worst_ratio = 0.0;
    for (size_t i = 0; i < r.size(); ++i) {
      const double ratio =
          std::abs(double(g[i]) - r[i]) / std::max(elem_tol * std::abs(r[i]), floor);
      if (ratio > 1.0) ++bad;
      if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
    }
    EXPECT_EQ(bad, 0u) << what << ": " << name << ": " << bad << " elements differ; worst at "
                       << worst << ": " << g[worst] << " vs " << r[worst];
  }
}

}  // namespace parallm::testing
