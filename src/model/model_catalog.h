// The one catalog of named model shapes, for training (`--preset`, TOML
// `[model] preset`) and planning (`parallm memory --model`): the small
// presets that run here (gpt2-tiny, the bundled demo; llama-tiny) and the
// published shapes GPT-2 124M/1.5B, GPT-3 175B, LLaMA-1 65B, LLaMA-2 7/13/70B, LLaMA-3
// 8/70/405B, Llama-3.2 1B, with sizes from the models' published configs.
#pragma once
#include <string>
#include <vector>

#include "model/config.h"

namespace parallm {

// Throws naming the known names.
ModelConfig catalog_model(const std::string& name);
// A GPT-2-family shape: 4h MLP, head_dim = h / heads, tied embeddings.
ModelConfig gpt_shape(int64_t hidden, int64_t layers, int64_t heads, int64_t vocab,
                      int64_t positions);
std::vector<std::string> catalog_names();

}  // namespace parallm
