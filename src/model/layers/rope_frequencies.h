// RopeFrequencies: the inverse frequencies of a LLaMA-family model's rotary
// embedding, the one place ModelConfig::rope_scaling (HF config.json
// "rope_scaling": linear, dynamic NTK, llama3; transformers 4.44
// modeling_rope_utils.py) is applied. Every path that rotates (training
// forward and backward, the KV-cached and paged inference forward, context
// parallel) takes its table from here. Invariant: without scaling the table
// is exactly pow(theta, -2i/D) in double, what the rope kernel always used;
// dynamic NTK is stateless: a forward's table depends only on its own length.
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"

namespace parallm {

class RopeFrequencies {
 public:
  RopeFrequencies() = default;
  // Throws when the scaling cannot apply to the model's head_dim.
  explicit RopeFrequencies(const ModelConfig& cfg);
  // Whether the table changes with the forward's length (dynamic NTK: only
  // beyond max_positions).
  bool depends_on_length() const { return scaling_.type == RopeScalingType::Dynamic; }
  int64_t max_positions() const { return max_positions_; }
  // The head_dim / 2 inverse frequencies for a forward whose largest position
  // is length - 1 (transformers: max(position_ids) + 1). Dynamic NTK beyond
  // max_positions uses base theta * (factor * length / max_positions -
  // (factor - 1)) ^ (D / (D - 2)); every other case is the fixed table.
  std::vector<double> at_length(int64_t length) const;

 private:
  double theta_ = 10000.0;
  int64_t head_dim_ = 0;
  int64_t max_positions_ = 0;
  RopeScaling scaling_;
  std::vector<double> fixed_;  // the length-independent table
};

// The longest sequence (prompt plus new tokens) the model may run: dynamic
// NTK stretches its frequencies to any length, so no limit then (INT64_MAX);
// otherwise max_positions (llama3 and linear configs already state the
// extended context there).
int64_t rope_context_limit(const ModelConfig& cfg);

}  // namespace parallm
