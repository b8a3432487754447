#include "optim/adam.h"

#include "base/error.h"
#include "ops/optimizer.h"

namespace parallm {

Adam::Adam(const ParameterSet& params, const OptimizerConfig& cfg, Allocator& alloc, int64_t begin,
           int64_t end, int64_t capacity)
    : Optimizer(begin, end),
      kind_(cfg.kind),
      beta1_(cfg.beta1),
      beta2_(cfg.beta2),
      eps_(cfg.eps),
      weight_decay_(cfg.weight_decay) {
  PX_CHECK(kind_ == OptimizerKind::Adam || kind_ == OptimizerKind::AdamW,
           "Adam built for optimizer {}", optimizer_name(kind_));
  PX_CHECK(0 <= begin && begin <= end && end <= params.total_numel() && capacity >= end - begin,
           "optimizer range [{}, {}) (capacity {}) does not fit {} parameters", begin, end,
           capacity, params.total_numel());
  m_ = Tensor::zeros(alloc, {capacity}, DType::F32, MemTag::Optimizer);
  v_ = Tensor::zeros(alloc, {capacity}, DType::F32, MemTag::Optimizer);
}

void Adam::step_range(const ParameterSet& params, double lr, float* p, const float* g) {
  ++step_;
  // The decay rule is the only difference between the two kernels.
  const auto kernel = kind_ == OptimizerKind::AdamW ? ops::adamw_step : ops::adam_step;
  const ops::Stream& st = ops::Stream::of(m_);
  float* m = m_.data<float>();
  float* v = v_.data<float>();
  for_each_param_in(params, begin_, end_, [&](int i, int64_t lo, int64_t hi) {
    const ops::AdamWParams h{.lr = lr,
                             .beta1 = beta1_,
                             .beta2 = beta2_,
                             .eps = eps_,
                             .weight_decay = params.spec(i).weight_decay ? weight_decay_ : 0.0,
                             .step = step_};
    const int64_t k = lo - begin_;
    kernel(st, p + k, g + k, m + k, v + k, hi - lo, h);
  });
}

}  // namespace parallm
