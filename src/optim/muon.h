// Muon (Keller Jordan, 2024; github.com/KellerJordan/Muon, muon.py): for the
// 2-D weight matrices inside the transformer blocks, SGD-momentum whose
// update is orthogonalised: buf = lerp(buf, g, 1 - mu); u = lerp(g, buf, mu)
// (Nesterov); O = NewtonSchulz5(u) (optim/newton_schulz.h);
// O *= sqrt(max(1, rows / cols)); p *= 1 - lr_m * wd_m; p -= lr_m * O, with
// lr_m = lr * muon_lr / (peak lr). Every other parameter (embeddings, positions,
// LM head, norms, biases) takes AdamW, as the reference's MuonWithAuxAdam.
// State (tag optimizer): 4 bytes per owned matrix element (momentum), 8 per
// other owned element (AdamW moments). NS needs whole matrices: a ZeRO
// rank's u for a matrix a shard boundary cuts is summed over the shard group
// into the whole matrix, a tp-sharded one is all-gathered over tp; each rank
// owning part of it orthogonalises the whole matrix and keeps its elements,
// so the result is the one-process update in every layout (docs/optimizers.md).
#pragma once
#include "optim/optimizer.h"

namespace parallm {

class Muon : public Optimizer {
 public:
  // Owns the flat range [begin, end). shard_group: the data-parallel group
  // whose ranks own the other ranges of a ZeRO layout, rank r owning
  // [r * shard_size, (r + 1) * shard_size) (null when this range is the
  // whole set or no other rank updates the rest).
  Muon(const ParameterSet& params, const OptimizerConfig& cfg, Allocator& alloc, int64_t begin,
       int64_t end, const TpGroup& tp, comm::Communicator* shard_group, int64_t shard_size);
  // Muon's matrices: 2-D parameters of the blocks ("layers.*"); the
  // embeddings and the LM head are 2-D too but take AdamW, as in the reference.
  static bool is_matrix(const ParamSpec& s);
  // Collective over tp and the shard group: a matrix that one rank owns
  // whole is orthogonalised there alone; one that a shard boundary cuts is
  // all-reduced over the shard group (so at most dp - 1 per step).
  void step_range(const ParameterSet& params, double lr, float* p, const float* g) override;
  OptimizerKind kind() const override { return OptimizerKind::Muon; }
  std::vector<OptimizerState> state() override;

 private:
  OptimizerConfig cfg_;
  Allocator& alloc_;
  TpGroup tp_;
  comm::Communicator* shard_group_;
  std::vector<bool> matrix_;   // per parameter
  std::vector<bool> cut_;      // per parameter: a matrix split between ZeRO ranks
  std::vector<int64_t> slot_;  // per parameter: where its first owned element sits in
                               // momentum_ (matrices) or m_/v_ (others)
  Tensor momentum_, m_, v_;
  std::vector<FlatSpan> matrix_spans_, other_spans_;
};

}  // namespace parallm
