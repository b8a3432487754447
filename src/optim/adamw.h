// AdamW over a ParameterSet's flat buffers, with decoupled weight decay
// applied only to parameters marked for decay (matrices and embeddings, not
// norms or biases). Moments are tagged optimizer memory (8 bytes/param).
// A ZeRO rank owns the moments of one flat range [begin, end) only and
// updates just that range; its moment buffers hold `capacity` elements so
// that every rank's shard has the same size.
#pragma once
#include "kernels/cpu/optimizer.h"
#include "optim/optimizer.h"

namespace parallm {

struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

class AdamW : public Optimizer {
 public:
  // Moments for every parameter.
  AdamW(const ParameterSet& params, const AdamWConfig& cfg, Allocator& alloc);
  // Moments for the flat range [begin, end) only, stored in `capacity`
  // (>= end - begin) elements.
  AdamW(const ParameterSet& params, const AdamWConfig& cfg, Allocator& alloc, int64_t begin,
        int64_t end, int64_t capacity);
  void step_range(const ParameterSet& params, double lr, float* p, const float* g) override;
  OptimizerKind kind() const override { return OptimizerKind::AdamW; }
  std::vector<OptimizerState> state() override;
  const Tensor& exp_avg() const { return m_; }
  const Tensor& exp_avg_sq() const { return v_; }

 private:
  AdamWConfig cfg_;
  Tensor m_, v_;
};

}  // namespace parallm
