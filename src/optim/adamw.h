// AdamW over a ParameterSet's flat buffers, with decoupled weight decay
// applied only to parameters marked for decay (matrices and embeddings, not
// norms or biases). Moments are tagged optimizer memory (8 bytes/param).
// A ZeRO rank owns the moments of one flat range [begin, end) only and
// updates just that range; its moment buffers hold `capacity` elements so
// that every rank's shard has the same size.
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
  // Moments for every parameter.
  AdamW(const ParameterSet& params, const AdamWConfig& cfg, Allocator& alloc);
  // Moments for the flat range [begin, end) only, stored in `capacity`
  // (>= end - begin) elements.
  AdamW(const ParameterSet& params, const AdamWConfig& cfg, Allocator& alloc, int64_t begin,
        int64_t end, int64_t capacity);
  // One update of the owned range with learning rate lr using params'
  // current gradients there.
  void step(const ParameterSet& params, double lr);
  // The same update on explicit buffers of the owned range: p[k] and g[k]
  // are the value and gradient of flat element begin() + k (ZeRO-2/3 keep
  // gradients, and under stage 3 values, only as such shards).
  void step_range(const ParameterSet& params, double lr, float* p, const float* g);
  int64_t steps_taken() const { return step_; }
  // Checkpoint resume: the bias-correction count continues from the saved one.
  void set_steps_taken(int64_t steps) { step_ = steps; }
  const Tensor& exp_avg() const { return m_; }
  const Tensor& exp_avg_sq() const { return v_; }
  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }

 private:
  AdamWConfig cfg_;
  int64_t begin_ = 0, end_ = 0;
  Tensor m_, v_;
  int64_t step_ = 0;
};

}  // namespace parallm
