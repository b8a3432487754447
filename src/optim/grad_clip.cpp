#include "optim/grad_clip.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/optimizer.h"
#include "parallel/tensor/tp_grad_norm.h"

namespace parallm {

namespace {

const TpGroup& tp_of(const GradNormGroups& groups) {
  static const TpGroup kNone;  // immutable: the one-process group
  return groups.tp ? *groups.tp : kNone;
}

// sqrt of this rank's sum of squares summed over the groups.
double reduce_norm(double ss, const GradNormGroups& groups, std::span<double> also_summed) {
  const TpGroup& tp = tp_of(groups);
  // [also_summed..., sum of squares]: one dp and one pp reduction carry both.
  std::vector<double> sums(also_summed.begin(), also_summed.end());
  sums.push_back(ss);
  if (groups.dp && groups.dp->size() > 1)
    groups.dp->all_reduce(sums.data(), sums.size(), DType::F64, comm::ReduceOp::Sum);
  if (tp.active()) tp.comm->all_reduce(&sums.back(), 1, DType::F64, comm::ReduceOp::Sum);
  if (groups.pp && groups.pp->size() > 1)
    groups.pp->all_reduce(sums.data(), sums.size(), DType::F64, comm::ReduceOp::Sum);
  std::copy(sums.begin(), sums.end() - 1, also_summed.begin());
  return std::sqrt(sums.back());
}

}  // namespace

double global_grad_norm(const ParameterSet& ps, const float* g, int64_t begin, int64_t end,
                        const GradNormGroups& groups, std::span<double> also_summed) {
  const TpGroup& tp = tp_of(groups);
  const bool experts = groups.expert_grads != nullptr;
  double ss = tp_grad_sum_squares(ps, g, begin, end, tp, experts);
  // Experts are replicated over tp (counted on tp rank 0) unless split over
  // tp as well (tp_dim: every tp rank counts its slice).
  if (experts && groups.count_experts)
    for (int i = 0; i < ps.size(); ++i)
      if (ps.spec(i).expert && (tp.rank() == 0 || ps.spec(i).tp_dim >= 0))
        ss += ops::sum_squares(ps.stream(), groups.expert_grads + ps.offset(i), ps.numel(i));
  return reduce_norm(ss, groups, also_summed);
}

double global_grad_norm(const ParameterSet& ps, std::span<const GradSpan> spans,
                        const GradNormGroups& groups, std::span<double> also_summed) {
  double ss = 0.0;
  for (const GradSpan& s : spans)  // experts count on tp rank 0 (tp_grad_sum_squares)
    ss += tp_grad_sum_squares(ps, s.grads, s.span.begin, s.span.end, tp_of(groups));
  return reduce_norm(ss, groups, also_summed);
}

double global_grad_norm(const ParameterSet& ps) {
  return global_grad_norm(ps, ps.flat_grads().data<float>(), 0, ps.total_numel());
}

double clip_grad_norm(const ops::Stream& s, float* g, int64_t n, double norm, double max_norm) {
  if (max_norm <= 0.0) return 1.0;
  const double coef = max_norm / (norm + 1e-6);
  if (coef >= 1.0) return 1.0;
  ops::scale_inplace(s, g, n, static_cast<float>(coef));
  return coef;
}

double clip_grad_norm(const ParameterSet& ps, double norm, double max_norm) {
  return clip_grad_norm(ps.stream(), ps.flat_grads().data<float>(), ps.total_numel(), norm,
                        max_norm);
}

}  // namespace parallm
