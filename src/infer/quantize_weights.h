// `--quantize q8_0|q4_0|q4_k_m`: a model loaded in f32 (a Hugging Face
// directory or a checkpoint) has its linear weights, and its LM head,
// quantised into GGUF blocks at load (io/gguf/quant_recipe.h picks each
// one's type), then their f32 values freed. Each rank quantises its own tp
// shard; a shard's blocks equal the full tensor's (columns split only on
// whole blocks: a tp size that cuts a block is refused, naming it), so
// every layout holds the same values.
#pragma once
#include <string>

#include "model/transformer.h"

namespace parallm {

struct QuantizeReport {
  int64_t tensors = 0;       // quantised parameters on this rank
  int64_t values = 0;        // their values
  int64_t bytes = 0;         // their block bytes
};

// preset: a quant_preset_from_name name. The model's base parameters are
// frozen first (inference takes no gradients).
QuantizeReport quantize_weights(Transformer& model, const std::string& preset);

}  // namespace parallm
