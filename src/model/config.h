// ModelConfig: the architecture of one transformer, family (GPT-2 or LLaMA)
// plus sizes (and experts, moe_config.h). Both families share one implementation, switched by the
// flags derived from the family; validate() rejects impossible shapes with values.
#pragma once
#include <cstdint>
#include <string>

#include "model/moe_config.h"
#include "nn/lora_config.h"

namespace parallm {

enum class Arch { GPT2, LLaMA };

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
  bool uses_swiglu() const { return arch == Arch::LLaMA; }            // else GELU MLP

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  void validate() const;
  int64_t num_parameters() const;
};

std::string arch_name(Arch a);              // "gpt2" / "llama"
Arch arch_from_name(const std::string& s);  // throws on unknown names

}  // namespace parallm
