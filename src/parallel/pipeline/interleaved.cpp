// Interleaved 1F1B over (micro-batch, chunk) units, Megatron's order.
#include "parallel/pipeline/interleaved.h"

#include <algorithm>

namespace parallm::pipeline {
namespace {

// The k-th forward (or backward) unit of a stage: groups of pp micro-batches,
// all chunks of one group before the next group.
Action unit(int k, int pp, int v, bool forward) {
  const int group = k / (pp * v), in_group = k % (pp * v);
  int chunk = in_group / pp;
  if (!forward) chunk = v - 1 - chunk;
  const int mb = group * pp + in_group % pp;
  return {forward ? ActionKind::Forward : ActionKind::Backward, mb, chunk, -1};
}

}  // namespace

int interleaved_warmup(int pp, int stage, int m, int v) {
  return std::min((pp - stage - 1) * 2 + (v - 1) * pp, m * v);
}

std::vector<std::vector<Action>> interleaved_compute(int pp, int m, int v) {
  std::vector<std::vector<Action>> out(pp);
  const int total = m * v;
  for (int s = 0; s < pp; ++s) {
    auto& list = out[s];
    const int warmup = interleaved_warmup(pp, s, m, v);
    for (int k = 0; k < warmup; ++k) list.push_back(unit(k, pp, v, true));
    for (int k = 0; k < total - warmup; ++k) {
      list.push_back(unit(warmup + k, pp, v, true));
      list.push_back(unit(k, pp, v, false));
    }
    for (int k = total - warmup; k < total; ++k) list.push_back(unit(k, pp, v, false));
  }
  return out;
}

}  // namespace parallm::pipeline
