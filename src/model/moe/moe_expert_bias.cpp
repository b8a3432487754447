// The expert bias's update rule and restore (see moe_expert_bias.h).
#include "model/moe/moe_expert_bias.h"

#include "base/error.h"

namespace parallm {

ExpertBias::ExpertBias(int64_t n_layers, int64_t num_experts)
    : L_(n_layers), E_(num_experts), values_(static_cast<size_t>(n_layers * num_experts), 0.0f) {}

void ExpertBias::update(const std::vector<double>& loads, double rate) {
  PX_CHECK(loads.size() == values_.size(),
           "expert bias update: {} loads for {} layers x {} experts", loads.size(), L_, E_);
  const float step = static_cast<float>(rate);
  for (int64_t l = 0; l < L_; ++l) {
    const double* load = loads.data() + l * E_;
    double mean = 0.0;
    for (int64_t i = 0; i < E_; ++i) mean += load[i];
    mean /= static_cast<double>(E_);
    float* b = values_.data() + l * E_;
    // A dense layer (no loads) and an expert at the mean stay where they are.
    for (int64_t i = 0; i < E_; ++i)
      if (load[i] < mean)
        b[i] += step;
      else if (load[i] > mean)
        b[i] -= step;
  }
}

void ExpertBias::restore(const std::vector<float>& values) {
  PX_CHECK(values.size() == values_.size(),
           "the checkpoint's moe expert bias has {} values; this model needs {} layers x {} "
           "experts = {}",
           values.size(), L_, E_, values_.size());
  values_ = values;
}

}  // namespace parallm
