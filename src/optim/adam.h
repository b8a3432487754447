// Adam over a flat range of a ParameterSet with torch.optim.Adam semantics:
// weight decay is L2, added to the gradient (g + wd * p) of parameters
// marked for decay before the moments are updated (unlike AdamW's decoupled
// decay). Two moment buffers of `capacity` floats (8 bytes/param, tag
// optimizer), element k belonging to flat element begin + k.
#pragma once
#include "optim/optimizer.h"

namespace parallm {

class Adam : public Optimizer {
 public:
  Adam(const ParameterSet& params, const OptimizerConfig& cfg, Allocator& alloc, int64_t begin,
       int64_t end, int64_t capacity);
  void step_range(const ParameterSet& params, double lr, float* p, const float* g) override;
  OptimizerKind kind() const override { return OptimizerKind::Adam; }
  std::vector<OptimizerState> state() override;

 private:
  OptimizerConfig cfg_;
  Tensor m_, v_;
};

}  // namespace parallm
