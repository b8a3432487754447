// AdamW over a ParameterSet's flat buffers, with decoupled weight decay
// applied only to parameters marked for decay (matrices and embeddings, not
// norms or biases). Moments are tagged optimizer memory (8 bytes/param).
// A ZeRO rank owns the moments of one flat range [begin, end) only and
// updates just that range; its moment buffers hold `capacity` elements so
// that every rank's shard has the same size (optim/adam_moments.h).
#pragma once
#include "optim/adam_moments.h"

namespace parallm {

struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

class AdamW : public AdamMoments {
 public:
  // Moments for every parameter.
  AdamW(const ParameterSet& params, const AdamWConfig& cfg, Allocator& alloc)
      : AdamW(params, cfg, alloc, 0, params.total_numel(), params.total_numel()) {}
  // Moments for the flat range [begin, end) only, stored in `capacity`
  // (>= end - begin) elements.
  AdamW(const ParameterSet& params, const AdamWConfig& cfg, Allocator& alloc, int64_t begin,
        int64_t end, int64_t capacity)
      : AdamMoments(params,
                    cpu::AdamWParams{.lr = 0, .beta1 = cfg.beta1, .beta2 = cfg.beta2,
                                     .eps = cfg.eps, .weight_decay = cfg.weight_decay},
                    alloc, begin, end, capacity) {}
  void step_range(const ParameterSet& params, double lr, float* p, const float* g) override {
    update(params, lr, p, g, cpu::adamw_step);
  }
  OptimizerKind kind() const override { return OptimizerKind::AdamW; }
};

}  // namespace parallm
