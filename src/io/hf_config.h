// Hugging Face config.json <-> ModelConfig, in the GPT2Config and LlamaConfig
// schemas and their relatives (Mistral, Qwen2, Gemma, Mixtral, Qwen2-MoE;
// field names as HF writes them). Reading refuses what the model cannot
// represent (other activations, rope scaling) with a clear message.
// Configs with experts also carry "parallm_moe", everything about them.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "model/config.h"

namespace parallm {

nlohmann::json hf_config_json(const ModelConfig& cfg, const std::string& torch_dtype);
// `source` names the file in error messages.
ModelConfig model_config_from_hf(const nlohmann::json& j, const std::string& source);
ModelConfig read_hf_config(const std::string& path);

}  // namespace parallm
