// Adam and AdamW over a flat range [begin, end) of a ParameterSet, with
// torch.optim semantics. One state and one walk: two moment buffers of
// `capacity` floats (8 bytes/param, tag optimizer; a ZeRO rank pads its
// shard to the common capacity), element k belonging to flat element
// begin + k. The two differ only in the decay rule, applied to parameters
// marked for decay (matrices and embeddings, not norms or biases): Adam adds
// L2 to the gradient (g + wd * p) before the moments, AdamW decays p
// decoupled (p *= 1 - lr * wd) before the update.
#pragma once
#include "optim/optimizer.h"

namespace parallm {

class Adam : public Optimizer {
 public:
  // cfg.kind: Adam or AdamW. Moments for every parameter.
  Adam(const ParameterSet& params, const OptimizerConfig& cfg, Allocator& alloc)
      : Adam(params, cfg, alloc, 0, params.total_numel(), params.total_numel()) {}
  // Moments for the flat range [begin, end) only, stored in `capacity`
  // (>= end - begin) elements.
  Adam(const ParameterSet& params, const OptimizerConfig& cfg, Allocator& alloc, int64_t begin,
       int64_t end, int64_t capacity);
  void step_range(const ParameterSet& params, double lr, float* p, const float* g) override;
  OptimizerKind kind() const override { return kind_; }
  std::vector<OptimizerState> state() override {
    return {{"exp_avg", &m_, {{begin_, end_}}}, {"exp_avg_sq", &v_, {{begin_, end_}}}};
  }
  const Tensor& exp_avg() const { return m_; }
  const Tensor& exp_avg_sq() const { return v_; }

 private:
  OptimizerKind kind_;
  double beta1_, beta2_, eps_, weight_decay_;
  Tensor m_, v_;
};

}  // namespace parallm
