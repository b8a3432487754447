// LoRA and QLoRA in the memory model (MemoryQuery::lora): the base is frozen
// (its bytes only: no gradients, no optimizer state, no ZeRO sharding), in
// 16-bit (4 bytes under fp32), or with --qlora every block linear (q, k, v,
// o, gate, up, down) in NF4 with fp32 absmax per 64 weights (4.5 bits per
// weight) or double-quantised absmax (4 + 8/64 + 32/(64*256) = 4.127 bits)
// while embeddings, norms and the LM head stay 16-bit, as bitsandbytes'
// Linear4bit does. Each target linear (in -> out) adds r (in + out) adapter
// parameters; under tp a column-parallel linear's A (r, in) is replicated
// and B (out/t, r) split, a row-parallel one's A (r, in/t) split and B
// (out, r) replicated. Counts are for the first pipeline stage's rank.
#pragma once
#include <cstdint>

#include "model/config.h"
#include "model/lora/lora_targets.h"

namespace parallm {

struct MemoryQuery;
struct MemoryBreakdown;

struct LoraQuery {
  int64_t rank = 0;  // 0: full fine-tuning, no LoRA
  double alpha = 16.0;
  LoraTargets targets = LoraTargets::parse("q,v");  // PEFT's default for LLaMA
  bool qlora = false;                               // NF4 base
  bool double_quant = false;                        // NF4 absmax quantised to 8 bits (needs qlora)
  bool enabled() const { return rank > 0; }
};

struct LoraMemory {
  int64_t adapter_params = 0;    // trainable, on this rank
  int64_t frozen_params = 0;     // base parameters on this rank
  int64_t quantized_params = 0;  // of those, held in NF4
  double quantized_bytes = 0;    // their NF4 storage (absmax and offsets included)
  double frozen_bytes = 0;       // what the base occupies on this rank
  int64_t adapters_per_layer = 0;
};

// Adapter parameters of the whole model: sum over layers and targets of
// r (in + out) (LLaMA-2-7B, r 8, q and v: 4,194,304).
int64_t lora_adapter_parameters(const ModelConfig& m, int64_t rank, const LoraTargets& t);

// What q's LoRA recipe holds on the first pipeline stage's rank.
LoraMemory lora_memory(const MemoryQuery& q);

// Replaces a full fine-tuning breakdown of q (Megatron16 model) with q's
// LoRA recipe: `frozen` holds the base; parameters, gradients and optimizer
// states hold the adapters (ZeRO shards them as usual): 16-bit weights and
// gradients with an fp32 master copy plus the optimizer's states under mixed
// precision (the ZeRO paper's 16 bytes with Adam), or under --qlora the
// QLoRA paper's recipe, BF16 adapters and gradients with 32-bit optimizer
// states and no master copy (12 bytes with Adam); communication buffers
// shrink to the adapters' gradients; each target adds its (s, b, r)
// intermediate A x to the saved activations (none under full recompute
// beyond the one rebuilt layer).
void apply_lora(const MemoryQuery& q, MemoryBreakdown& r);

// Bytes of frozen NF4 storage for one tensor of n weights (blocks of 64;
// with double quantisation also its fp32 offset).
double nf4_tensor_bytes(int64_t n, bool double_quant);

}  // namespace parallm
