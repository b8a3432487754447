// The expert parts of the memory model (docs/memory.md "Experts"): one MoE
// layer's parameter tensors on a (tp, ep) rank in ParameterSet order (router,
// the stacked local experts, whole or split over tp, the shared expert and
// its gate), the token load the activation models assume, and the ZeRO
// shard under ep (dense elements over dp x cp, expert elements over
// expert-dp = dp x cp / ep, as parallel/zero/expert_shards.h splits them).
// Invariant: moe_layer_tensors matches the shapes and order that
// model/moe/moe*.cpp register, so the allocator and the model agree.
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"

namespace parallm {

// One parameter tensor of a block as the ParameterSet stores it on a rank.
struct LayerTensor {
  int64_t numel = 0;
  bool matrix = false;      // 2-D: Muon orthogonalises it (optim/muon.h is_matrix)
  bool expert = false;      // ParamSpec::expert: split over ep, reduced over expert-dp
  bool sp_partial = false;  // tp_partial_grad under sequence parallelism
};

// The tensors that replace the MLP in an MoE layer on a tp rank of an ep
// group of `ep` ranks: router (E, C); experts (E/ep, I_e, C) ... with I_e =
// moe.expert_intermediate(intermediate), whole on every tp rank under
// expert_tp 1; under expert_tp = tp (moe_experts.h) fc / gate / up and fc's
// bias keep I_e / tp features, proj / down I_e / tp inputs, proj's bias is
// whole, and no expert gradient is partial over tp (every tp rank is fed
// every row); a shared expert tp-split like a dense MLP (ceil(S / tp)
// features) and its gate (1, C).
std::vector<LayerTensor> moe_layer_tensors(const ModelConfig& m, int64_t tp, int64_t ep,
                                           int64_t expert_tp = 1);

// Kept assignments per token that the memory model assumes: an even load,
// every expert receiving T k / E assignments of each sequence of T tokens,
// at most its capacity (MoeConfig::capacity): E min(T k / E, cap) / T.
// Dropless: k. Exact when k == E (every token goes to every expert).
double moe_assignments_per_token(const MoeConfig& moe, int64_t T);

// ZeRO under ep (--ep > 1): the most elements one rank owns
// (parallel/zero/expert_shards.h), which its optimizer, ZeRO-2's gradient
// shard and ZeRO-3's value shard hold, packed. `tensors`: the stage's tensors in flat
// order, each in a slot padded to `align` elements; the expert tensors'
// [offset, offset + numel) ranges are sharded ceil(X / edp) over
// expert-dp (edp = dc / ep), the rest of the padded flat buffer (padding
// included) is the dense part of each rank's ceil(N / dc) shard of the
// ZeRO group, dc = dp x cp ranks. Rank r of that group (r = cp_rank + cp x
// dp_rank: its members in world order, tp and pp fixed) is expert-dp rank
// r / ep (grid/rank_grid.h folds dp x cp the same way). Maximum over r.
int64_t zero1_ep_owned(const std::vector<LayerTensor>& tensors, int64_t align, int64_t dc,
                       int64_t ep);

}  // namespace parallm
