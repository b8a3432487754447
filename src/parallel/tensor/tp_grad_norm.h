// The squared gradient norm a tensor-parallel rank contributes, so that one
// sum over tp (and dp) counts every element of the one-process model once:
// tp-sharded parameters (shard_dim >= 0) count on every rank (a shard held
// by several ranks, tp_replicas > 1, on the first of them), replicated ones
// on tp rank 0 only (their gradients are identical across tp; MoE experts,
// whose shard_dim is the ep split, are replicated over tp), a pipeline
// stage's copy of another stage's parameter (pipeline_copy) nowhere.
#pragma once
#include <cstdint>

#include "nn/parameters.h"
#include "parallel/tensor/tp_group.h"

namespace parallm {

// g: the gradients of flat elements [begin, end) of ps. skip_experts: leave
// out MoE expert parameters (ParamSpec::expert), which expert parallelism
// counts separately (optim/grad_clip.h).
double tp_grad_sum_squares(const ParameterSet& ps, const float* g, int64_t begin, int64_t end,
                           const TpGroup& tp, bool skip_experts = false);

}  // namespace parallm
