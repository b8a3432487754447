// Activation bytes of this implementation's layers (MemoryQuery's Parallm
// activation model), as opposed to Korthikanti et al.'s Megatron-LM 16-bit
// count. Each term is one tensor of a Saved struct in src/model (Block,
// Norm, Attention, Mlp) or of Transformer::Forward, so the sum at the end of
// the forward pass equals the allocator's peak of MemTag::Activation: the
// backward allocates only workspace while it frees activations.
// MoE layers (model/moe/moe*.h) count their expert rows under an even
// load (plan/moe_memory.h), exact when the load is known.
// Invariant: the element counts here match src/model/layers/*.h's shapes.
#pragma once
#include "plan/memory_model.h"

namespace parallm {

struct ParallmActivations {
  double per_layer = 0;   // bytes one block saves for one micro-batch (mean over the stage)
  double layers = 0;      // bytes the first stage's blocks save for one micro-batch
  double outside = 0;     // embedding output + final norm's input, output and stats
  double working = 0;     // full recompute: what rebuilding one block's set adds to the peak
  double head_chunk = 0;  // the LM head's (chunk rows, V/tp) logits buffer (workspace)
};

// Byte counts for q's shapes. Saved activations are fp32 (4 bytes) under
// every precision: bf16/fp16 round a GEMM's inputs into a workspace at the
// GEMM (docs/mixed_precision.md), so q.precision does not change them.
// Recomputation (src/model/layers/block.cpp, docs/recompute.md): full keeps
// only each block's input (the previous block's output) and rebuilds one
// block's full set at a time in backward (`working`); selective drops both
// norms' outputs and statistics and the MLP activation.
ParallmActivations parallm_activations(const MemoryQuery& q);

// Bytes per parameter element that parallm's allocator holds for values
// (tag Parameter) and gradients (tag Gradient) before ZeRO sharding: fp32
// master values and fp32 gradients under every precision, plus the 16-bit
// GEMM copy of the values (also tag Parameter, never sharded) under
// bf16/fp16. Optimizer states hold no extra master copy.
struct ParallmStateBytes {
  double master = 4.0;     // fp32 values (sharded by ZeRO-3)
  double gemm_copy = 0.0;  // 2 under bf16/fp16 (kept whole on every rank)
  double gradient = 4.0;   // fp32 (sharded by ZeRO-2)
};
ParallmStateBytes parallm_state_bytes(Precision p);

}  // namespace parallm
