// The kernel work one rank does for one micro-batch of one pipeline stage,
// as parallm's layers run it (model/layers/*): each linear's shape (rows x
// in -> out, tp-split as Column/RowParallelLinear split it), the attention
// core's units (batch x local query heads x visible causal pairs x head dim;
// context parallel divides the pairs), and element-wise element counts by
// kind (sequence parallel divides the norm and residual rows by tp). The
// step-time model prices this list with calibrated kernel costs
// (plan/op_costs.h). Counts are per micro-batch.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "plan/memory_model.h"
#include "plan/op_costs.h"

namespace parallm {

struct LinearWork {
  int64_t rows = 0, in = 0, out = 0;
  double calls = 0;  // per micro-batch (layers x linears of this shape)
  // Under the zero-bubble schedule the tp linears (Column/RowParallelLinear)
  // defer their dW GEMM to the W pass (nn/weight_grad_queue.h); the router,
  // the routed experts and the LM head compute theirs in B.
  bool deferred_dw = true;
};

struct StageWork {
  std::vector<LinearWork> linears;     // forward once and backward once each
  std::vector<LinearWork> recomputed;  // forward again before the backward (full recompute)
  double attn_units = 0;               // forward and backward once
  double attn_units_recomputed = 0;
  int64_t attn_seq = 0;  // the length of the attention kernel's calls
  int64_t attn_head_dim = 0;
  std::map<std::string, double> elements;  // forward and backward once
  std::map<std::string, double> elements_recomputed;
  double moe_layers = 0;  // MoE layers in the stage (each dispatches over ep)
  int64_t moe_rows = 0;   // rows an MoE layer routes on this rank per micro-batch
};

// The first stage (embedding + its layers) and the last (its layers, final
// norm, LM head and loss); with pp 1 one stage holding both ends. Layers
// are dealt out as the runtime does (pp x v chunks of n_layers / (pp v)).
std::vector<StageWork> end_stage_works(const MemoryQuery& q);

// Seconds of one micro-batch of a stage on calibrated kernels: matrix work
// (linears and the attention core) and element-wise work, forward,
// recomputation and backward together; and the same seconds by the
// zero-bubble schedule's passes: F (forward), B (recomputation and the
// input gradients, with every dW that is not deferred) and W (the deferred
// dW GEMMs, half of a linear's calibrated backward: the same FLOPs as dX).
struct StageSeconds {
  double matmul_s = 0, elementwise_s = 0;
  double forward_s = 0, backward_s = 0, weight_s = 0;
};
StageSeconds price_stage(const StageWork& w, const OpCosts& c);

}  // namespace parallm
