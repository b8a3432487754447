// The map between parallm's internal parameters and Hugging Face tensors
// (GPT2LMHeadModel, LlamaForCausalLM). An HF tensor is one or more internal
// tensors concatenated along dim 0, optionally transposed: GPT-2's Conv1D
// weights are stored (in, out) and its c_attn fuses q, k and v. LLaMA needs
// no permutation: parallm's rotary embedding uses HF's rotate-half order.
// Qwen2ForCausalLM is the LLaMA layout plus self_attn.{q,k,v}_proj.bias.
// MixtralForCausalLM (a LLaMA with MoE layers, docs/moe.md): each HF expert
// tensor experts.{j}.w1/w2/w3 is slice j (dimension 0) of one stacked
// internal tensor (gate / down / up), the router is block_sparse_moe.gate.
// Qwen2MoeForCausalLM: Qwen2 with mlp.gate, mlp.experts.{j}.{gate,up,down}_proj
// (slices likewise), mlp.shared_expert.* and mlp.shared_expert_gate in its
// MoE layers and Qwen2's mlp.*_proj in the others.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "model/config.h"
#include "nn/parameters.h"

namespace parallm {

struct HfTensor {
  std::string name;                // HF name
  std::vector<int64_t> shape;      // HF shape
  std::vector<std::string> parts;  // internal names, concatenated along dim 0
  bool transpose = false;          // HF holds the transpose of the concatenation
  int64_t expert = -1;             // >= 0: slice `expert` of the one (stacked) part
};

// Throws for an MoE GPT-2 (no names for its experts). Every LLaMA-family
// model has a layout; check_hf_moe says whether transformers can load it.
std::vector<HfTensor> hf_layout(const ModelConfig& cfg);
// Throws, naming the feature, for experts Hugging Face's classes cannot
// express: an MoE GPT-2; for Mixtral dense layers, a router without
// renormalisation, experts wider or narrower than intermediate_size, a shared
// expert; for Qwen2-MoE an ungated shared expert or heads not hidden / n_heads.
void check_hf_moe(const ModelConfig& cfg);
// HF names that may appear in a checkpoint and carry no parameters (GPT-2's
// attention mask buffers, a tied lm_head copy).
bool hf_ignorable(const ModelConfig& cfg, const std::string& name);
// GPT-2 checkpoints exist with and without the "transformer." prefix.
std::string hf_canonical_name(const ModelConfig& cfg, const std::string& name);

// Assembles the HF tensor t from the parameter values (or gradients) into dst.
void gather_hf_tensor(const ParameterSet& ps, const HfTensor& t, bool grads, float* dst);
// Scatters HF data src into the parameter values.
void scatter_hf_tensor(const ParameterSet& ps, const HfTensor& t, const float* src);

}  // namespace parallm
