// Helpers the kernel benchmarks share: the median wall time of repeated
// runs (after one warm-up run: page faults, BLAS buffers) and reproducible
// normal inputs from the counter RNG.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "base/rng.h"

namespace parallm::bench {

template <class F>
double median_ms(int reps, F&& f) {
  f();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

inline std::vector<float> random_vec(size_t n, const char* name) {
  const uint64_t key = stream_key(1, name);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(normal_at(key, i));
  return x;
}

}  // namespace parallm::bench
