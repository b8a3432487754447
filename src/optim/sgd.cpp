#include "optim/sgd.h"

#include "base/error.h"
#include "ops/optimizer.h"

namespace parallm {

Sgd::Sgd(const ParameterSet& params, const OptimizerConfig& cfg, Allocator& alloc, int64_t begin,
         int64_t end, int64_t capacity)
    : Optimizer(begin, end),
      kind_(cfg.kind),
      momentum_(cfg.kind == OptimizerKind::SGDMomentum ? cfg.momentum : 0.0),
      weight_decay_(cfg.weight_decay),
      nesterov_(cfg.nesterov) {
  PX_CHECK(0 <= begin && begin <= end && end <= params.total_numel() && capacity >= end - begin,
           "optimizer range [{}, {}) (capacity {}) does not fit {} parameters", begin, end,
           capacity, params.total_numel());
  if (momentum_ > 0.0) buf_ = Tensor::zeros(alloc, {capacity}, DType::F32, MemTag::Optimizer);
}

void Sgd::step_range(const ParameterSet& params, double lr, float* p, const float* g) {
  ++step_;
  float* buf = buf_.defined() ? buf_.data<float>() : nullptr;
  for_each_param_in(params, begin_, end_, [&](int i, int64_t lo, int64_t hi) {
    const int64_t k = lo - begin_;
    ops::SgdParams h{.lr = lr,
                     .momentum = momentum_,
                     .nesterov = nesterov_,
                     .weight_decay = params.spec(i).weight_decay ? weight_decay_ : 0.0};
    ops::sgd_step(params.stream(), p + k, g + k, buf ? buf + k : nullptr, hi - lo, h);
  });
}

std::vector<OptimizerState> Sgd::state() {
  if (!buf_.defined()) return {};
  return {{"momentum_buffer", &buf_, {{begin_, end_}}}};
}

}  // namespace parallm
