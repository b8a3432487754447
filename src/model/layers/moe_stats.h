// MoeStats: what the MoE layers of one step report (docs/moe.md): the
// balancing losses' unweighted sums, token counts, per-expert load and
// drops. Summed over layers and micro-batches on a rank, then over the
// data-parallel ranks by the trainer; every field is a sum, so the totals do
// not depend on the layout. Counted once per training micro-batch (in the
// layer's backward, which runs once even under full recomputation).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace parallm {

struct MoeStats {
  double aux_sum = 0.0;             // sum over layers and sequences of E * sum_i f_i P_i
  double z_sum = 0.0;               // sum over layers and tokens of logsumexp(logits)^2
  double sequences = 0.0;           // per layer: sequences routed
  double tokens = 0.0;              // per layer: tokens routed
  double assignments = 0.0;         // token-expert pairs chosen (tokens x topk)
  double dropped = 0.0;             // of those, over capacity
  std::vector<double> expert_load;  // (E) assignments chosen per expert, before dropping
  // With the expert bias only (moe_expert_bias.h): (L, E) assignments kept
  // per expert in each global layer, the bias update's loads; else empty.
  std::vector<double> layer_load;

  bool empty() const { return tokens == 0.0; }
  void add(const MoeStats& o) {
    aux_sum += o.aux_sum, z_sum += o.z_sum, sequences += o.sequences, tokens += o.tokens;
    assignments += o.assignments, dropped += o.dropped;
    if (expert_load.size() < o.expert_load.size()) expert_load.resize(o.expert_load.size(), 0.0);
    for (size_t i = 0; i < o.expert_load.size(); ++i) expert_load[i] += o.expert_load[i];
    if (layer_load.size() < o.layer_load.size()) layer_load.resize(o.layer_load.size(), 0.0);
    for (size_t i = 0; i < o.layer_load.size(); ++i) layer_load[i] += o.layer_load[i];
  }
  // Flat form for one all-reduce: 6 scalars, the E loads, the LE layer loads
  // (zeros where this rank has none: a stage without MoE layers).
  std::vector<double> flat(size_t E, size_t LE) const {
    std::vector<double> v = {aux_sum, z_sum, sequences, tokens, assignments, dropped};
    v.resize(6 + E + LE, 0.0);
    std::copy(expert_load.begin(), expert_load.begin() + std::min(E, expert_load.size()),
              v.begin() + 6);
    std::copy(layer_load.begin(), layer_load.begin() + std::min(LE, layer_load.size()),
              v.begin() + 6 + static_cast<std::ptrdiff_t>(E));
    return v;
  }
  static MoeStats from_flat(const std::vector<double>& v, size_t E) {
    MoeStats s;
    s.aux_sum = v[0], s.z_sum = v[1], s.sequences = v[2], s.tokens = v[3];
    s.assignments = v[4], s.dropped = v[5];
    s.expert_load.assign(v.begin() + 6, v.begin() + 6 + static_cast<std::ptrdiff_t>(E));
    s.layer_load.assign(v.begin() + 6 + static_cast<std::ptrdiff_t>(E), v.end());
    return s;
  }
};

}  // namespace parallm
