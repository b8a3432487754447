// Activation bytes of this implementation's layers (MemoryQuery's Parallm
// activation model), as opposed to Korthikanti et al.'s Megatron-LM 16-bit
// count. Each term is one tensor of a Saved struct in src/model (Block,
// Norm, Attention, Mlp) or of Transformer::Forward, so the sum at the end of
// the forward pass equals the allocator's peak of MemTag::Activation: the
// backward allocates only workspace while it frees activations.
// Invariant: the element counts here match src/model/layers/*.h's shapes.
#pragma once
#include "plan/memory_model.h"

namespace parallm {

struct ParallmActivations {
  double per_layer = 0;   // bytes one block saves for one micro-batch
  double outside = 0;     // embedding output + final norm's input, output and stats
  double working = 0;     // one block's full set, rebuilt at a time under full recompute
  double head_chunk = 0;  // the LM head's (chunk rows, V/tp) logits buffer (workspace)
};

// Byte counts for q's shapes. Elements are 4 bytes under fp32 and 2 under
// bf16/fp16 (assumed until mixed precision lands). Recomputation (assumed
// until it lands): full keeps only each block's input; selective drops the
// outputs of the cheap elementwise parts (norm outputs, the MLP activation).
ParallmActivations parallm_activations(const MemoryQuery& q);

}  // namespace parallm
