// ModelConfig: the architecture of one transformer, family (GPT-2 or LLaMA)
// plus sizes (and experts, moe_config.h). Both families share one implementation, switched by the
// flags derived from the family; validate() rejects impossible shapes with values. The LLaMA
// family's Hugging Face relatives (Llama 3 rope scaling, Qwen2's q/k/v bias, Mistral's sliding
// window, Gemma) are traits on top of Arch::LLaMA, named by hf_type.
#pragma once
#include <cstdint>
#include <string>

#include "model/moe/moe_config.h"
#include "nn/lora_config.h"

namespace parallm {

enum class Arch { GPT2, LLaMA };

// How rotary frequencies are stretched for long contexts (HF config.json
// "rope_scaling"; docs/model_families.md has the formulas).
enum class RopeScalingType { None, Linear, Dynamic, Llama3 };
struct RopeScaling {
  RopeScalingType type = RopeScalingType::None;
  double factor = 1.0;
  double low_freq_factor = 1.0;        // llama3
  double high_freq_factor = 4.0;       // llama3
  int64_t original_max_positions = 0;  // llama3: the pre-training context
  bool operator==(const RopeScaling&) const = default;
};
std::string rope_scaling_name(RopeScalingType t);  // "none", "linear", "dynamic", "llama3"
RopeScalingType rope_scaling_from_name(const std::string& s);  // throws on unknown names

struct ModelConfig {
  Arch arch = Arch::GPT2;
  int64_t vocab_size = 50257;
  int64_t hidden = 768;
  int64_t n_layers = 12;
  int64_t n_heads = 12;
  int64_t n_kv_heads = 12;      // < n_heads: grouped-query attention (LLaMA)
  int64_t head_dim = 64;        // hidden / n_heads unless set explicitly
  int64_t intermediate = 3072;  // MLP width (4*hidden for GPT-2)
  int64_t max_positions = 1024;
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;  // LLaMA family
  // Qwen2: biases on the q, k and v projections (o has none). LLaMA family.
  bool qkv_bias = false;
  // Mistral: a query sees itself and the sliding_window - 1 keys before it
  // (HF masks key j for query i when j <= i - sliding_window); 0: every
  // earlier key. LLaMA family.
  int64_t sliding_window = 0;
  // The Hugging Face model_type this config reads from and writes back
  // ("llama", "mistral", "qwen2", "gemma", "mixtral", "qwen2_moe"); empty: from arch and
  // experts. "gemma" also switches Gemma's traits below.
  std::string hf_type;
  bool tie_embeddings = true;
  double init_std = 0.02;
  // Dropout probabilities (0: none, and no random numbers drawn). Attention
  // dropout acts on the softmax probabilities, hidden dropout on the outputs
  // of attention and MLP before each residual add.
  double attn_dropout = 0.0;
  double hidden_dropout = 0.0;
  // Mixture of experts (docs/moe.md): num_experts 0 keeps every MLP dense.
  MoeConfig moe;
  // Low-rank adapters for fine-tuning (docs/lora.md); rank 0: off. A training
  // choice, not part of the architecture: never read from or written to config.json.
  LoraConfig lora;

  // Family traits.
  bool uses_layernorm() const { return arch == Arch::GPT2; }  // else RMSNorm
  bool uses_bias() const { return arch == Arch::GPT2; }
  bool uses_learned_positions() const { return arch == Arch::GPT2; }  // else RoPE
  bool uses_swiglu() const { return arch == Arch::LLaMA; }            // gated, else GELU MLP
  // Gemma: the gated MLP's gate goes through tanh-GELU instead of SiLU
  // (GeGLU), the token embeddings are multiplied by sqrt(hidden), and the
  // RMSNorm multiplies by (1 + w): w is stored as transformers stores it and
  // starts at 0 in a fresh model.
  bool gemma() const { return hf_type == "gemma"; }
  bool gated_gelu() const { return gemma(); }
  bool scales_embeddings() const { return gemma(); }
  bool norm_adds_one() const { return gemma(); }
  // The Hugging Face model_type: with experts qwen2_moe for a Qwen2 (or
  // q/k/v bias), else mixtral; else hf_type, qwen2 with q/k/v bias, mistral
  // with a sliding window, llama.
  std::string hf_model_type() const;

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  void validate() const;
  int64_t num_parameters() const;

 private:
  void validate_family_traits() const;
};

std::string arch_name(Arch a);              // "gpt2" / "llama"
Arch arch_from_name(const std::string& s);  // throws on unknown names

}  // namespace parallm
