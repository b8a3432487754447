#include "base/rng.h"

#include <cmath>
#include <numbers>

namespace parallm {

double normal_at(uint64_t key, uint64_t index) {
  double u1 = uniform_at(key, index, 0);
  double u2 = uniform_at(key, index, 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace parallm
