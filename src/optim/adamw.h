// AdamW over a ParameterSet's flat buffers, with decoupled weight decay
// applied only to parameters marked for decay (matrices and embeddings, not
// norms or biases). Moments are tagged optimizer memory (8 bytes/param).
#pragma once
#include "kernels/cpu/optimizer.h"
#include "model/parameters.h"

namespace parallm {

struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

class AdamW {
 public:
  AdamW(const ParameterSet& params, const AdamWConfig& cfg, Allocator& alloc);
  // One update with learning rate lr using params' current gradients.
  void step(const ParameterSet& params, double lr);
  int64_t steps_taken() const { return step_; }
  const Tensor& exp_avg() const { return m_; }
  const Tensor& exp_avg_sq() const { return v_; }

 private:
  AdamWConfig cfg_;
  Tensor m_, v_;
  int64_t step_ = 0;
};

}  // namespace parallm
