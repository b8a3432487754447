// The expert parts of the memory model (see moe_memory.h).
#include "plan/moe_memory.h"

#include <algorithm>

namespace parallm {

std::vector<LayerTensor> moe_layer_tensors(const ModelConfig& m, int64_t tp, int64_t ep,
                                           int64_t expert_tp) {
  const MoeConfig& moe = m.moe;
  const int64_t C = m.hidden, E = moe.num_experts, El = E / ep;
  // Under expert tp each rank keeps its I_e / tp slice (the trainer checks
  // that tp divides I_e) and is fed every row, so no gradient is partial.
  const bool etp = expert_tp > 1;
  const int64_t Ie = moe.expert_intermediate(m.intermediate) / expert_tp;
  const bool bias = m.uses_bias();
  std::vector<LayerTensor> out;
  // Router (moe.cpp): replicated over tp, partial under sp, dense (over dp).
  out.push_back({.numel = E * C, .matrix = true, .sp_partial = true});
  // Experts (moe_experts.cpp): stacked (E_local, out, in), biases (E_local, out).
  // A stacked weight is 3-D (not a Muon matrix), a stacked bias 2-D.
  auto expert = [&](int64_t n, bool matrix) {
    out.push_back({.numel = El * n, .matrix = matrix, .expert = true, .sp_partial = !etp});
  };
  if (m.uses_swiglu()) {
    for (int i = 0; i < 3; ++i) expert(Ie * C, false);  // gate, up, down
  } else {
    expert(Ie * C, false);  // fc
    if (bias) expert(Ie, true);
    expert(C * Ie, false);      // proj
    if (bias) expert(C, true);  // whole under expert tp (added by tp rank 0)
  }
  // Shared expert (moe_shared_expert.cpp): a dense Mlp, column then row
  // parallel; its row-parallel bias is replicated (partial under sp).
  if (moe.shared_intermediate > 0) {
    const int64_t S = (moe.shared_intermediate + tp - 1) / tp;
    for (int i = 0; i < (m.uses_swiglu() ? 2 : 1); ++i) {  // fc, or gate and up
      out.push_back({.numel = C * S, .matrix = true});
      if (bias) out.push_back({.numel = S});
    }
    out.push_back({.numel = S * C, .matrix = true});  // proj / down
    if (bias) out.push_back({.numel = C, .sp_partial = true});
    if (moe.shared_expert_gate) out.push_back({.numel = C, .matrix = true, .sp_partial = true});
  }
  return out;
}

double moe_assignments_per_token(const MoeConfig& moe, int64_t T) {
  const double E = static_cast<double>(moe.num_experts), k = moe.topk;
  const double even = static_cast<double>(T) * k / E;  // one expert's share of a sequence
  const double cap = static_cast<double>(moe.capacity(T));
  return E * std::min(even, cap) / static_cast<double>(T);
}

int64_t zero1_ep_owned(const std::vector<LayerTensor>& tensors, int64_t align, int64_t dc,
                       int64_t ep) {
  std::vector<std::pair<int64_t, int64_t>> experts;  // merged as DataParallel merges them
  int64_t N = 0, X = 0;
  for (const LayerTensor& t : tensors) {
    if (t.expert) {
      if (!experts.empty() && experts.back().second == N)
        experts.back().second = N + t.numel;
      else
        experts.emplace_back(N, N + t.numel);
      X += t.numel;
    }
    N += (t.numel + align - 1) / align * align;
  }
  const int64_t edp = dc / ep, S = (N + dc - 1) / dc, Se = (X + edp - 1) / edp;
  int64_t worst = 0;
  for (int64_t r = 0; r < dc; ++r) {
    const int64_t b = std::min(N, r * S), e = std::min(N, (r + 1) * S);
    int64_t dense = e - b;
    for (const auto& [lo, hi] : experts)
      dense -= std::max<int64_t>(0, std::min(e, hi) - std::max(b, lo));
    const int64_t er = r / ep;
    const int64_t expert = std::min(X, (er + 1) * Se) - std::min(X, er * Se);
    worst = std::max(worst, dense + expert);
  }
  return worst;
}

}  // namespace parallm
