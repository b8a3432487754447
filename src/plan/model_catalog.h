// Published model shapes for planning (`parallm memory`, `parallm plan`):
// GPT-3 175B, GPT-2 124M/1.5B, LLaMA-2 7/13/70B, LLaMA-3 8/70/405B, plus the
// small presets of model/config.h. Sizes from the models' published configs.
#pragma once
#include <string>
#include <vector>

#include "model/config.h"

namespace parallm {

ModelConfig catalog_model(const std::string& name);
// A GPT-2-family shape: 4h MLP, head_dim = h / heads, tied embeddings.
ModelConfig gpt_shape(int64_t hidden, int64_t layers, int64_t heads, int64_t vocab,
                      int64_t positions);  // throws naming the known names
std::vector<std::string> catalog_names();

}  // namespace parallm
