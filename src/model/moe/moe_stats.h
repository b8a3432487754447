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
  static constexpr size_t kScalars = 7;  // leading scalars of the flat form
  double aux_sum = 0.0;                  // sum over layers and sequences of E * sum_i f_i P_i
  double z_sum = 0.0;                    // sum over layers and tokens of logsumexp(logits)^2
  double sequences = 0.0;                // per layer: sequences routed
  double tokens = 0.0;                   // per layer: tokens routed
  double assignments = 0.0;              // token-expert pairs chosen (tokens x topk)
  double dropped = 0.0;                  // of those, over capacity
  std::vector<double> expert_load;       // (E) assignments chosen per expert, before dropping
  // With the expert bias only (moe_expert_bias.h): (L, E) assignments kept
  // per expert in each global layer, the bias update's loads; else empty.
  std::vector<double> layer_load;
  // The load an expert-parallel rank waits for (the planner's input,
  // docs/planner.md): per dispatch (a layer's micro-batch), the busiest of
  // the e blocks of E / e consecutive experts (what one rank of ep e holds)
  // over the mean block, kept assignments, summed over dispatches; index e,
  // for each e dividing E (zeros elsewhere).
  double dispatches = 0.0;
  std::vector<double> ep_max_load_sum;  // (E + 1)

  bool empty() const { return tokens == 0.0; }
  void add(const MoeStats& o) {
    aux_sum += o.aux_sum, z_sum += o.z_sum, sequences += o.sequences, tokens += o.tokens;
    assignments += o.assignments, dropped += o.dropped;
    if (expert_load.size() < o.expert_load.size()) expert_load.resize(o.expert_load.size(), 0.0);
    for (size_t i = 0; i < o.expert_load.size(); ++i) expert_load[i] += o.expert_load[i];
    if (layer_load.size() < o.layer_load.size()) layer_load.resize(o.layer_load.size(), 0.0);
    for (size_t i = 0; i < o.layer_load.size(); ++i) layer_load[i] += o.layer_load[i];
    dispatches += o.dispatches;
    if (ep_max_load_sum.size() < o.ep_max_load_sum.size())
      ep_max_load_sum.resize(o.ep_max_load_sum.size(), 0.0);
    for (size_t i = 0; i < o.ep_max_load_sum.size(); ++i)
      ep_max_load_sum[i] += o.ep_max_load_sum[i];
  }
  // One dispatch's kept assignments per expert (E of them).
  void record_dispatch(const std::vector<double>& kept) {
    const size_t E = kept.size();
    double total = 0.0;
    for (double x : kept) total += x;
    if (total == 0.0) return;  // nothing routed: no rank waits
    ep_max_load_sum.resize(std::max(ep_max_load_sum.size(), E + 1), 0.0);
    for (size_t e = 1; e <= E; ++e) {
      if (E % e != 0) continue;
      const size_t per = E / e;
      double busiest = 0.0;
      for (size_t b = 0; b < e; ++b) {
        double block = 0.0;
        for (size_t i = b * per; i < (b + 1) * per; ++i) block += kept[i];
        busiest = std::max(busiest, block);
      }
      ep_max_load_sum[e] += busiest / (total / static_cast<double>(e));
    }
    dispatches += 1.0;
  }
  // Flat form for one all-reduce: 7 scalars, the E loads, the E + 1 ep
  // sums, the LE layer loads (zeros where this rank has none: a stage
  // without MoE layers).
  std::vector<double> flat(size_t E, size_t LE) const {
    std::vector<double> v = {aux_sum, z_sum, sequences, tokens, assignments, dropped, dispatches};
    v.resize(kScalars + E + (E + 1) + LE, 0.0);
    auto put = [&](const std::vector<double>& x, size_t at, size_t n) {
      std::copy(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(std::min(n, x.size())),
                v.begin() + static_cast<std::ptrdiff_t>(at));
    };
    put(expert_load, kScalars, E);
    put(ep_max_load_sum, kScalars + E, E + 1);
    put(layer_load, kScalars + 2 * E + 1, LE);
    return v;
  }
  static MoeStats from_flat(const std::vector<double>& v, size_t E) {
    MoeStats s;
    s.aux_sum = v[0], s.z_sum = v[1], s.sequences = v[2], s.tokens = v[3];
    s.assignments = v[4], s.dropped = v[5], s.dispatches = v[6];
    const auto at = [&](size_t i) { return v.begin() + static_cast<std::ptrdiff_t>(i); };
    s.expert_load.assign(at(kScalars), at(kScalars + E));
    s.ep_max_load_sum.assign(at(kScalars + E), at(kScalars + 2 * E + 1));
    s.layer_load.assign(at(kScalars + 2 * E + 1), v.end());
    return s;
  }
};

}  // namespace parallm
