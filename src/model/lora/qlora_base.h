// QLoRA's base (docs/qlora.md): every block linear's frozen weight (q, k, v,
// o, gate, up, down; GPT-2's fc, proj), targeted or not, moved from f32 to
// NF4 after the base has its full-precision values (seeded init, --init-from
// or a resume's base). Embeddings, norms, biases and the LM head stay f32.
// Layout invariance: each tp shard is cut from the quantisation of the FULL
// tensor (gathered over tp), so every layout dequantises to the same values
// as one process; a shard must be whole 64-blocks of it (else a clear error).
#pragma once
#include <string>

#include "model/config.h"
#include "nn/parameters.h"
#include "parallel/tensor/tp_group.h"

namespace parallm {

// "layers.3.mlp.down.weight" and the like (not biases, norms or the head).
bool is_block_linear_weight(const std::string& name);

struct QloraBase {
  int weights = 0;        // tensors quantised on this rank
  int64_t numel = 0;      // their elements (this rank's shards)
  int64_t nf4_bytes = 0;  // their NF4 storage (Nf4Weight::stored_bytes)
  double bits_per_weight() const { return numel > 0 ? 8.0 * nf4_bytes / numel : 0.0; }
};

// Quantises base's block linear weights (cfg.lora.double_quant chooses the
// absmax format) and frees their f32 values. Collective over tp (one gather
// per sharded weight, in parameter order). Deterministic: the same values
// give the same bytes, so a resume that rebuilds the base requantises it
// exactly. Throws naming the weight when a shard cuts a block.
QloraBase quantize_base_nf4(ParameterSet& base, const ModelConfig& cfg, const TpGroup& tp,
                            Allocator& alloc);

}  // namespace parallm
