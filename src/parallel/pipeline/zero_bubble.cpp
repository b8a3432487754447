// ZB-H1: 1F1B order of F and B, with W passes lagging s micro-batches on stage s.
#include "parallel/pipeline/zero_bubble.h"

#include <algorithm>

#include "parallel/pipeline/one_f_one_b.h"

namespace parallm::pipeline {

int zero_bubble_w_lag(int pp, int stage, int m) { return std::min(stage, m); }

std::vector<std::vector<Action>> zero_bubble_h1_compute(int pp, int m) {
  auto base = one_f_one_b_compute(pp, m, ActionKind::BackwardInput);
  std::vector<std::vector<Action>> out(pp);
  for (int s = 0; s < pp; ++s) {
    const int lag = zero_bubble_w_lag(pp, s, m);
    int next_w = 0;
    for (const Action& a : base[s]) {
      out[s].push_back(a);
      if (a.kind == ActionKind::BackwardInput && a.micro_batch >= lag)
        out[s].push_back({ActionKind::BackwardWeight, next_w++, 0, -1});
    }
    while (next_w < m) out[s].push_back({ActionKind::BackwardWeight, next_w++, 0, -1});
  }
  return out;
}

}  // namespace parallm::pipeline
