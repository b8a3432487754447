#include "optim/adamw.h"

namespace parallm {

AdamW::AdamW(const ParameterSet& params, const AdamWConfig& cfg, Allocator& alloc)
    : AdamW(params, cfg, alloc, 0, params.total_numel(), params.total_numel()) {}

AdamW::AdamW(const ParameterSet& params, const AdamWConfig& cfg, Allocator& alloc, int64_t begin,
             int64_t end, int64_t capacity)
    : Optimizer(begin, end), cfg_(cfg) {
  PX_CHECK(0 <= begin && begin <= end && end <= params.total_numel() && capacity >= end - begin,
           "optimizer range [{}, {}) (capacity {}) does not fit {} parameters", begin, end,
           capacity, params.total_numel());
  m_ = Tensor::zeros(alloc, {capacity}, DType::F32, MemTag::Optimizer);
  v_ = Tensor::zeros(alloc, {capacity}, DType::F32, MemTag::Optimizer);
}

void AdamW::step_range(const ParameterSet& params, double lr, float* p, const float* g) {
  ++step_;
  // Moment element k belongs to flat element begin_ + k.
  float* m = m_.data<float>();
  float* v = v_.data<float>();
  for_each_param_in(params, begin_, end_, [&](int i, int64_t lo, int64_t hi) {
    cpu::AdamWParams h{.lr = lr, .beta1 = cfg_.beta1, .beta2 = cfg_.beta2, .eps = cfg_.eps,
                       .weight_decay = params.spec(i).weight_decay ? cfg_.weight_decay : 0.0,
                       .step = step_};
    const int64_t k = lo - begin_;
    cpu::adamw_step(p + k, g + k, m + k, v + k, hi - lo, h);
  });
}

std::vector<OptimizerState> AdamW::state() {
  return {{"exp_avg", &m_, {{begin_, end_}}}, {"exp_avg_sq", &v_, {{begin_, end_}}}};
}

}  // namespace parallm
