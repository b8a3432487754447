// attention_merge (attention_merge.h): the loop context parallelism ran on
// the host, now a kernel so that a device's rows are merged where they live.
#include "kernels/cpu/attention_merge.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace parallm::cpu {

void attention_merge(float* out, float* lse, const float* part_out, const float* part_lse,
                     int64_t B, int64_t Hq, int64_t D, int64_t nq, int64_t len, int64_t i) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t qrow = Hq * D;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t t = 0; t < len; ++t) {
        const float lp = part_lse[(b * Hq + h) * len + t];
        if (lp == kNegInf) continue;
        float& la = lse[(b * Hq + h) * nq * len + i * len + t];
        float* o = out + ((b * nq + i) * len + t) * qrow + h * D;
        const float* op = part_out + (b * len + t) * qrow + h * D;
        if (la == kNegInf) {
          std::memcpy(o, op, static_cast<size_t>(D) * sizeof(float));
          la = lp;
          continue;
        }
        const double m = std::max(la, lp);
        const double ea = std::exp(la - m), ep = std::exp(lp - m), s = ea + ep;
        const float wa = static_cast<float>(ea / s), wp = static_cast<float>(ep / s);
        for (int64_t e = 0; e < D; ++e) o[e] = o[e] * wa + op[e] * wp;
        la = static_cast<float>(m + std::log(s));
      }
}

}  // namespace parallm::cpu
