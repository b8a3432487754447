// GPipe: all forwards, then all backwards.
#include "parallel/pipeline/gpipe.h"

namespace parallm::pipeline {

std::vector<std::vector<Action>> gpipe_compute(int pp, int micro_batches) {
  std::vector<std::vector<Action>> out(pp);
  for (auto& list : out) {
    for (int i = 0; i < micro_batches; ++i) list.push_back({ActionKind::Forward, i, 0, -1});
    for (int i = 0; i < micro_batches; ++i) list.push_back({ActionKind::Backward, i, 0, -1});
  }
  return out;
}

}  // namespace parallm::pipeline
