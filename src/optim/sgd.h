// SGD and SGD with momentum over a flat range of a ParameterSet, with
// torch.optim.SGD semantics (dampening 0, optional Nesterov, L2 weight decay
// added to the gradient of parameters marked for decay). Plain SGD keeps no
// state; with momentum one buffer of `capacity` floats (4 bytes/param,
// tag optimizer), element k belonging to flat element begin + k.
#pragma once
#include "optim/optimizer.h"

namespace parallm {

class Sgd : public Optimizer {
 public:
  // cfg.kind SGD: momentum 0 whatever cfg.momentum says; SGDMomentum: cfg.momentum.
  Sgd(const ParameterSet& params, const OptimizerConfig& cfg, Allocator& alloc, int64_t begin,
      int64_t end, int64_t capacity);
  void step_range(const ParameterSet& params, double lr, float* p, const float* g) override;
  OptimizerKind kind() const override { return kind_; }
  std::vector<OptimizerState> state() override;

 private:
  OptimizerKind kind_;
  double momentum_, weight_decay_;
  bool nesterov_;
  Tensor buf_;  // undefined without momentum
};

}  // namespace parallm
