#include "parallel/tensor/partial_grad_sync.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/activation.h"

namespace parallm {

PartialGradSync::PartialGradSync(const ParameterSet& ps,
                                 const std::vector<std::pair<int, int>>& units, const TpGroup& tp,
                                 Allocator& alloc)
    : tp_(tp) {
  if (!tp.sp()) return;
  params_.resize(units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    int64_t n = 0;
    for (int i = units[u].first; i < units[u].second; ++i)
      if (ps.spec(i).tp_partial_grad) {
        params_[u].push_back(i);
        n += ps.numel(i);
      }
    half_ = std::max(half_, n);
  }
  if (half_ > 0) buffer_ = Tensor::zeros(alloc, {2 * half_}, DType::F32, MemTag::Communication);
}

void PartialGradSync::before_backward(const ParameterSet& ps, int unit) {
  if (!active()) return;
  float* keep = buffer_.data<float>();
  for (int i : params_[unit]) {
    const auto n = static_cast<size_t>(ps.numel(i));
    std::memcpy(keep, ps.grad(ParamRef{i}), n * sizeof(float));
    std::memset(ps.grad(ParamRef{i}), 0, n * sizeof(float));
    keep += n;
  }
}

void PartialGradSync::after_backward(const ParameterSet& ps, int unit) {
  if (!active() || params_[unit].empty()) return;
  float* keep = buffer_.data<float>();
  float* red = keep + half_;
  int64_t n = 0;
  for (int i : params_[unit]) {
    std::memcpy(red + n, ps.grad(ParamRef{i}), ps.numel(i) * sizeof(float));
    n += ps.numel(i);
  }
  {
    TpCommTimer timer(*tp_.counters);
    tp_.comm->all_reduce(red, static_cast<size_t>(n), DType::F32, comm::ReduceOp::Sum);
  }
  tp_.counters->sp_bytes += n * static_cast<int64_t>(sizeof(float));
  ++tp_.counters->sp_collectives;
  n = 0;
  for (int i : params_[unit]) {
    float* g = ps.grad(ParamRef{i});
    const int64_t k = ps.numel(i);
    std::memcpy(g, keep + n, k * sizeof(float));
    cpu::add_inplace(g, red + n, k);
    n += k;
  }
}

}  // namespace parallm
