// The global gradient norm and clipping, one function each for every layout
// (torch.nn.utils.clip_grad_norm_ semantics). A rank holds the gradients of
// a flat range of its ParameterSet; the norm sums their squares over the
// groups that hold the rest: tp (shards; replicated tensors counted on one
// tp rank, parallel/tensor/tp_grad_norm.h), dp (ranges that tile the flat
// buffer, or a replicated buffer counted by one rank per range) and pp
// (stages hold disjoint layers; a stage's copy of another's parameter is not
// counted). One process passes its whole buffer and no groups.
#pragma once
#include <cstdint>
#include <span>

#include "comm/communicator.h"
#include "nn/parameters.h"
#include "optim/optimizer.h"
#include "parallel/tensor/tp_group.h"

namespace parallm {

struct GradNormGroups {
  comm::Communicator* dp = nullptr;  // null or size 1: none
  const TpGroup* tp = nullptr;
  comm::Communicator* pp = nullptr;
  // Expert parallelism (docs/moe.md): expert gradients differ between the ep
  // ranks inside dp and repeat over expert-dp, so they are left out of
  // [begin, end) and counted whole from expert_grads (the full flat buffer)
  // on one rank per expert-dp group (count_experts). Null: counted as usual.
  const float* expert_grads = nullptr;
  bool count_experts = false;
};

// The L2 norm of the whole model's gradients; g holds flat elements
// [begin, end) of ps. `also_summed` (e.g. this rank's loss sum) rides in the
// same dp and pp reductions and comes back summed over them (not over tp,
// whose ranks already hold the same loss). Collective over every group given.
double global_grad_norm(const ParameterSet& ps, const float* g, int64_t begin, int64_t end,
                        const GradNormGroups& groups = {}, std::span<double> also_summed = {});
// The same over scattered owned spans (ZeRO-2 under expert parallelism):
// spans[i]'s gradients are at grads[i]. Every element of the model must be
// in exactly one rank's spans over dp (experts: over the dp group's ep x
// expert-dp ranks), so no expert_grads are taken.
struct GradSpan {
  FlatSpan span;
  const float* grads;
};
double global_grad_norm(const ParameterSet& ps, std::span<const GradSpan> spans,
                        const GradNormGroups& groups, std::span<double> also_summed = {});
// The one process's norm: every gradient of ps.
double global_grad_norm(const ParameterSet& ps);

// Scales g (n elements) by max_norm / (norm + 1e-6) when that is below 1
// (max_norm <= 0 disables); returns the factor applied.
double clip_grad_norm(const ops::Stream& s, float* g, int64_t n, double norm, double max_norm);
// The one process's clip: the whole flat gradient buffer (padding is zero).
double clip_grad_norm(const ParameterSet& ps, double norm, double max_norm);

}  // namespace parallm
