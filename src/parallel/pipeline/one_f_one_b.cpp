// 1F1B: warm-up, steady one-forward-one-backward, cool-down.
#include "parallel/pipeline/one_f_one_b.h"

#include <algorithm>

namespace parallm::pipeline {

int one_f_one_b_warmup(int pp, int stage, int micro_batches) {
  return std::min(pp - stage - 1, micro_batches);
}

std::vector<std::vector<Action>> one_f_one_b_compute(int pp, int m, ActionKind backward) {
  std::vector<std::vector<Action>> out(pp);
  for (int s = 0; s < pp; ++s) {
    auto& list = out[s];
    const int warmup = one_f_one_b_warmup(pp, s, m);
    for (int i = 0; i < warmup; ++i) list.push_back({ActionKind::Forward, i, 0, -1});
    for (int i = 0; i < m - warmup; ++i) {
      list.push_back({ActionKind::Forward, warmup + i, 0, -1});
      list.push_back({backward, i, 0, -1});
    }
    for (int i = m - warmup; i < m; ++i) list.push_back({backward, i, 0, -1});
  }
  return out;
}

}  // namespace parallm::pipeline
