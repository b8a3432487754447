// PEFT LoRA adapter directories (docs/lora.md): adapter_config.json
// (peft_type LORA, r, lora_alpha, lora_dropout, target_modules as HF module
// names, use_rslora, base_model_name_or_path) and adapter_model.safetensors
// with base_model.model.<HF module>.lora_A.weight (r, in) / .lora_B.weight
// (out, r), as peft's save_pretrained writes them. Loading reads only the
// slices of the adapters a rank holds (tp shards, pp stages), like the base.
// LLaMA only for now: GPT-2's fused c_attn has one A for q, k and v, which
// parallm's separate q, k, v adapters do not share (docs/lora.md).
#pragma once
#include <string>

#include "io/hf_layout.h"
#include "model/transformer.h"

namespace parallm {

// adapter_config.json as written, with the checks that do not depend on the
// model (peft_type LORA, integer r > 0, bias none, no DoRA, no per-module
// patterns, every layer): each failure names the file and key.
struct PeftConfigFile {
  std::string path;  // dir/adapter_config.json
  LoraConfig lora;   // rank, alpha, dropout, rslora; targets empty
  std::vector<std::string> modules;  // target_modules as written (HF module names)
};
PeftConfigFile read_peft_config_file(const std::string& dir);
// The adapter tensors of cfg (cfg.lora), HF names to internal names.
std::vector<HfTensor> peft_layout(const ModelConfig& cfg);
// The LoRA settings of dir/adapter_config.json, checked against the model
// family (target modules that are not its linears, unsupported PEFT options).
LoraConfig read_peft_config(const std::string& dir, const ModelConfig& base);
// Throws naming each value that differs between a loaded adapter and the
// run's LoRA settings (rank, alpha, targets, rslora).
void check_lora_matches(const LoraConfig& adapter, const LoraConfig& run, const std::string& dir);
// Writes dir from a whole model's adapters (one process, every adapter).
void save_peft_adapter(const std::string& dir, const Transformer& model,
                       const std::string& base_model_name);
// Loads dir's adapter values into model.params(); every expected tensor must
// be present with its shape and nothing else may be.
void load_peft_adapter(const std::string& dir, Transformer& model);
// `parallm export --merge-lora`: base HF directory + PEFT adapter -> an HF
// directory whose weights are W + scale B A (one process). Returns the
// number of merged weights.
int export_merged_lora(const std::string& base_dir, const std::string& adapter_dir,
                       const std::string& out_dir, DType dtype);

}  // namespace parallm
