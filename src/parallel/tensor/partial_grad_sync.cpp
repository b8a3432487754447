#include "parallel/tensor/partial_grad_sync.h"

#include <algorithm>

#include "ops/activation.h"
#include "ops/copy.h"

namespace parallm {

PartialGradSync::PartialGradSync(const ParameterSet& ps,
                                 const std::vector<std::pair<int, int>>& units, const TpGroup& tp,
                                 Allocator& alloc)
    : tp_(tp) {
  if (!tp.active()) return;
  entries_.resize(units.size());
  int64_t keep = 0, reduced = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    int64_t k = 0, r = 0;
    for (int i = units[u].first; i < units[u].second; ++i) {
      const ParamSpec& s = ps.spec(i);
      const bool partial = (s.tp_partial_grad && tp.sp()) || s.tp_grad_sum;
      if (!partial && s.tp_replicas <= 1) continue;
      entries_[u].push_back({i, partial ? 1 : s.tp_replicas});
      k += ps.numel(i);
      r += reduced_numel(ps, entries_[u].back());
    }
    keep = std::max(keep, k);
    reduced = std::max(reduced, r);
  }
  keep_ = keep;
  if (reduced > 0)
    buffer_ = Tensor::zeros(alloc, {keep + reduced}, DType::F32, MemTag::Communication);
}

int64_t PartialGradSync::reduced_numel(const ParameterSet& ps, const Entry& e) const {
  return e.replicas == 1 ? ps.numel(e.param) : ps.numel(e.param) * (tp_.size() / e.replicas);
}

void PartialGradSync::before_backward(const ParameterSet& ps, int unit) {
  if (!active()) return;
  float* keep = buffer_.data<float>();
  for (const Entry& e : entries_[unit]) {
    const auto n = static_cast<size_t>(ps.numel(e.param));
    ops::copy(ps.stream(), keep, ps.grad(ParamRef{e.param}), n * sizeof(float));
    ops::zero(ps.stream(), ps.grad(ParamRef{e.param}), n * sizeof(float));
    keep += n;
  }
}

void PartialGradSync::after_backward(const ParameterSet& ps, int unit) {
  if (!active() || entries_[unit].empty()) return;
  float* keep = buffer_.data<float>();
  float* red = keep + keep_;
  // Lay out this micro-batch's partial gradients: a replicated shard in its
  // slot of a zeroed block (the other holders' slots stay zero here).
  int64_t n = 0;
  for (const Entry& e : entries_[unit]) {
    const int64_t k = ps.numel(e.param), total = reduced_numel(ps, e);
    const int64_t slot = e.replicas == 1 ? 0 : tp_.rank() / e.replicas;
    ops::zero(ps.stream(), red + n, static_cast<size_t>(total) * sizeof(float));
    ops::copy(ps.stream(), red + n + slot * k, ps.grad(ParamRef{e.param}), k * sizeof(float));
    n += total;
  }
  tp_.comm->all_reduce(red, static_cast<size_t>(n), DType::F32, comm::ReduceOp::Sum);
  n = 0;
  for (const Entry& e : entries_[unit]) {
    float* g = ps.grad(ParamRef{e.param});
    const int64_t k = ps.numel(e.param);
    const int64_t slot = e.replicas == 1 ? 0 : tp_.rank() / e.replicas;
    ops::copy(ps.stream(), g, keep, k * sizeof(float));
    ops::add_inplace(ps.stream(), g, red + n + slot * k, k);
    keep += k;
    n += reduced_numel(ps, e);
  }
}

}  // namespace parallm
