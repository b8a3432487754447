// Adam over a flat range of a ParameterSet with torch.optim.Adam semantics:
// weight decay is L2, added to the gradient (g + wd * p) of parameters
// marked for decay before the moments are updated (unlike AdamW's decoupled
// decay). Moments and the range walk: optim/adam_moments.h.
#pragma once
#include "optim/adam_moments.h"

namespace parallm {

class Adam : public AdamMoments {
 public:
  Adam(const ParameterSet& params, const OptimizerConfig& cfg, Allocator& alloc, int64_t begin,
       int64_t end, int64_t capacity)
      : AdamMoments(params,
                    cpu::AdamWParams{.lr = 0, .beta1 = cfg.beta1, .beta2 = cfg.beta2,
                                     .eps = cfg.eps, .weight_decay = cfg.weight_decay},
                    alloc, begin, end, capacity) {}
  void step_range(const ParameterSet& params, double lr, float* p, const float* g) override {
    update(params, lr, p, g, cpu::adam_step);
  }
  OptimizerKind kind() const override { return OptimizerKind::Adam; }
};

}  // namespace parallm
