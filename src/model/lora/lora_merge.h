// Folding LoRA adapters into base weights (docs/lora.md): W += scale * B A
// for every adapter pair "<linear>.lora_A" / ".lora_B" of `adapters`, into
// "<linear>.weight" of `base`. Works on any tp shard as stored: a column-
// parallel W_r takes scale * B_r A, a row-parallel W_r takes scale * B A_r,
// both local, so merged shards are the shards of the merged weight.
#pragma once
#include <string>

#include "nn/parameters.h"

namespace parallm {

// The base weight an adapter factor belongs to ("x.lora_A" -> "x.weight"; "" if not a factor).
std::string lora_base_weight(const std::string& adapter_name);
// Adds scale * B A into each adapted weight of base; returns the number of
// weights merged. Throws naming a factor without its partner or base weight.
int merge_lora(const ParameterSet& adapters, ParameterSet& base, double scale);

}  // namespace parallm
