// ExpertBias: the aux-loss-free balancing bias of every MoE layer
// (DeepSeek-V3; Megatron's --moe-router-enable-expert-bias, docs/moe.md).
// Layer l's bias (E) is added to its sigmoid scores to choose the top-k
// experts, never to the gates, and has no gradient: after each optimizer step
// b_i += rate * sign(mean_i load - load_i), with load_i the assignments
// expert i kept over the whole global batch (all micro-batches and ranks).
// Invariant: every rank holds the same (L, E) values, all layers (dense
// layers' rows stay 0), so the state is independent of the layout; the
// loads are integer counts summed in double, so every layout updates the
// bias bit for bit alike. Checkpoints keep it in train_state.json.
#pragma once
#include <cstdint>
#include <vector>

namespace parallm {

class ExpertBias {
 public:
  ExpertBias() = default;
  // Zeros for n_layers layers of num_experts experts.
  ExpertBias(int64_t n_layers, int64_t num_experts);
  bool enabled() const { return !values_.empty(); }
  int64_t num_experts() const { return E_; }
  const float* layer(int64_t l) const { return values_.data() + l * E_; }  // (E)
  // loads (L, E): kept assignments per layer over the global batch.
  void update(const std::vector<double>& loads, double rate);
  const std::vector<float>& values() const { return values_; }  // (L, E)
  // A checkpoint's values; throws, naming both sizes, when they do not fit.
  void restore(const std::vector<float>& values);

 private:
  int64_t L_ = 0, E_ = 0;
  std::vector<float> values_;
};

}  // namespace parallm
