// Muon (Keller Jordan, 2024; github.com/KellerJordan/Muon, muon.py): for the
// 2-D weight matrices inside the transformer blocks, SGD-momentum whose
// update is orthogonalised: buf = lerp(buf, g, 1 - mu); u = lerp(g, buf, mu)
// (Nesterov); O = NewtonSchulz5(u) (optim/newton_schulz.h);
// O *= sqrt(max(1, rows / cols)); p *= 1 - lr_m * wd_m; p -= lr_m * O, with
// lr_m = lr * muon_lr_ratio. Every other parameter (embeddings, positions,
// LM head, norms, biases) takes AdamW, as the reference's MuonWithAuxAdam.
// State (tag optimizer): 4 bytes per matrix element (momentum) and 8 per
// other element (AdamW moments). Needs whole matrices: a tp-sharded matrix
// is all-gathered over tp, orthogonalised whole and each rank keeps its
// slice, so the result is layout invariant; ZeRO shards are refused (docs/optimizers.md).
#pragma once
#include "optim/optimizer.h"

namespace parallm {

class Muon : public Optimizer {
 public:
  // [begin, end) must be the whole ParameterSet (Muon needs whole matrices).
  Muon(const ParameterSet& params, const OptimizerConfig& cfg, Allocator& alloc, int64_t begin,
       int64_t end, const TpGroup& tp);
  // Muon's matrices: 2-D parameters of the blocks ("layers.*"); the
  // embeddings and the LM head are 2-D too but take AdamW, as in the reference.
  static bool is_matrix(const ParamSpec& s);
  // Collective over tp when a matrix is tp-sharded (every tp rank steps together).
  void step_range(const ParameterSet& params, double lr, float* p, const float* g) override;
  OptimizerKind kind() const override { return OptimizerKind::Muon; }
  std::vector<OptimizerState> state() override;

 private:
  OptimizerConfig cfg_;
  Allocator& alloc_;
  TpGroup tp_;
  std::vector<bool> matrix_;     // per parameter
  std::vector<int64_t> slot_;    // per parameter: its first element in momentum_ or m_/v_
  Tensor momentum_, m_, v_;
  std::vector<FlatSpan> matrix_spans_, other_spans_;
};

}  // namespace parallm
