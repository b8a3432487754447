#include "optim/adamw.h"

namespace parallm {

AdamW::AdamW(const ParameterSet& params, const AdamWConfig& cfg, Allocator& alloc) : cfg_(cfg) {
  m_ = Tensor::zeros(alloc, {params.total_numel()}, DType::F32, MemTag::Optimizer);
  v_ = Tensor::zeros(alloc, {params.total_numel()}, DType::F32, MemTag::Optimizer);
}

void AdamW::step(const ParameterSet& params, double lr) {
  ++step_;
  float* p = params.flat_values().data<float>();
  const float* g = params.flat_grads().data<float>();
  float* m = m_.data<float>();
  float* v = v_.data<float>();
  for (int i = 0; i < params.size(); ++i) {
    const int64_t off = params.offset(i);
    cpu::AdamWParams h{.lr = lr, .beta1 = cfg_.beta1, .beta2 = cfg_.beta2, .eps = cfg_.eps,
                       .weight_decay = params.spec(i).weight_decay ? cfg_.weight_decay : 0.0,
                       .step = step_};
    cpu::adamw_step(p + off, g + off, m + off, v + off, params.numel(i), h);
  }
}

}  // namespace parallm
