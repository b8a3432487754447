#include "parallel/tensor/tp_grad_norm.h"

#include <algorithm>

#include "ops/optimizer.h"

namespace parallm {

double tp_grad_sum_squares(const ParameterSet& ps, const float* g, int64_t begin, int64_t end,
                           const TpGroup& tp, bool skip_experts) {
  bool copies = false;  // a pipeline stage's copy of another stage's parameter
  for (int i = 0; i < ps.size(); ++i) copies = copies || ps.spec(i).pipeline_copy;
  if ((!tp.active() || tp.rank() == 0) && !copies && !skip_experts)
    return ops::sum_squares(ps.stream(), g, end - begin);
  const bool all = !tp.active() || tp.rank() == 0;
  double s = 0.0;
  for (int i = 0; i < ps.size(); ++i) {
    const ParamSpec& spec = ps.spec(i);
    if (spec.pipeline_copy) continue;  // counted by the stage that owns it
    if (skip_experts && spec.expert) continue;
    // Replicated over tp (experts unless split over tp as well, tp_dim; their
    // shard_dim is ep's): counted by tp rank 0.
    if (!all && (spec.expert ? spec.tp_dim : spec.shard_dim) < 0) continue;
    if (tp.rank() % spec.tp_replicas != 0) continue;  // a replicated shard: its first holder
    const int64_t lo = std::max(begin, ps.offset(i));
    const int64_t hi = std::min(end, ps.offset(i) + ps.numel(i));
    if (lo < hi) s += ops::sum_squares(ps.stream(), g + (lo - begin), hi - lo);
  }
  return s;
}

}  // namespace parallm
