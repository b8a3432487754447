#include "model/model_catalog.h"

#include "base/error.h"

namespace parallm {
namespace {

ModelConfig llama(int64_t h, int64_t layers, int64_t heads, int64_t kv, int64_t inter,
                  int64_t vocab, int64_t positions, double theta) {
  ModelConfig c;
  c.arch = Arch::LLaMA;
  c.hidden = h;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv;
  c.head_dim = h / heads;
  c.intermediate = inter;
  c.vocab_size = vocab;
  c.max_positions = positions;
  c.rope_theta = theta;
  c.tie_embeddings = false;
  return c;
}

// Llama-3.2-1B (its config.json): tied embeddings, and llama3 rope scaling
// stretching the 8192-token pre-training context to 131072.
ModelConfig llama32_1b() {
  ModelConfig c = llama(2048, 16, 32, 8, 8192, 128256, 131072, 5e5);
  c.tie_embeddings = true;
  c.rope_scaling = {.type = RopeScalingType::Llama3,
                    .factor = 32.0,
                    .low_freq_factor = 1.0,
                    .high_freq_factor = 4.0,
                    .original_max_positions = 8192};
  return c;
}

ModelConfig tiny(Arch arch) {  // byte-level vocabulary, runs in seconds here
  ModelConfig c;
  c.arch = arch;
  c.vocab_size = 320;
  c.hidden = 192;
  c.n_layers = 4;
  c.n_heads = 6;
  c.n_kv_heads = arch == Arch::LLaMA ? 2 : 6;
  c.head_dim = 32;
  c.intermediate = arch == Arch::LLaMA ? 512 : 768;
  c.max_positions = 256;
  if (arch == Arch::LLaMA) {
    c.norm_eps = 1e-6;
    c.tie_embeddings = false;
  }
  return c;
}

// google/gemma-2b's config.json: one key/value head of 256, tied head.
ModelConfig gemma_2b() {
  ModelConfig c = llama(2048, 18, 8, 1, 16384, 256000, 8192, 1e4);
  c.hf_type = "gemma";
  c.head_dim = 256;
  c.norm_eps = 1e-6;
  c.tie_embeddings = true;
  return c;
}

// mistralai/Mistral-7B-v0.1's config.json: a 4096-token sliding window.
ModelConfig mistral_7b() {
  ModelConfig c = llama(4096, 32, 32, 8, 14336, 32000, 32768, 1e4);
  c.hf_type = "mistral";
  c.sliding_window = 4096;
  return c;
}

// Qwen/Qwen2.5-*'s config.json: q/k/v biases, rope theta 1e6.
ModelConfig qwen25(int64_t h, int64_t layers, int64_t heads, int64_t kv, int64_t inter,
                   int64_t vocab, bool tied) {
  ModelConfig c = llama(h, layers, heads, kv, inter, vocab, 32768, 1e6);
  c.hf_type = "qwen2";
  c.qkv_bias = true;
  c.norm_eps = 1e-6;
  c.tie_embeddings = tied;
  return c;
}

// mistralai/Mixtral-8x7B-v0.1's config.json: 8 experts, top 2 renormalised.
ModelConfig mixtral_8x7b() {
  ModelConfig c = llama(4096, 32, 32, 8, 14336, 32000, 32768, 1e6);
  c.hf_type = "mixtral";
  c.moe.num_experts = 8;
  c.moe.topk = 2;
  c.moe.order = RouterOrder::TopkSoftmax;
  return c;
}

// Qwen/Qwen1.5-MoE-A2.7B's config.json: 60 experts of 1408 features, top 4
// without renormalisation, a gated shared expert of 5632, experts in every
// layer; 14,315,784,192 parameters (transformers' num_parameters()).
ModelConfig qwen15_moe_a27b() {
  ModelConfig c = llama(2048, 24, 16, 16, 5632, 151936, 8192, 1e6);
  c.hf_type = "qwen2_moe";
  c.qkv_bias = true;
  c.norm_eps = 1e-6;
  c.moe.num_experts = 60;
  c.moe.topk = 4;
  c.moe.order = RouterOrder::SoftmaxTopk;
  c.moe.ffn_hidden_size = 1408;
  c.moe.shared_intermediate = 5632;
  c.moe.shared_expert_gate = true;
  return c;
}

ModelConfig gpt2_padded() {  // llm.c's padded vocabulary
  ModelConfig c;
  c.vocab_size = 50304;
  return c;
}

struct Entry {
  const char* name;
  ModelConfig cfg;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> kEntries = {
      {"gpt2-tiny", tiny(Arch::GPT2)},
      {"llama-tiny", tiny(Arch::LLaMA)},
      {"gpt2-124m", ModelConfig{}},
      {"gpt2-124m-padded", gpt2_padded()},
      {"gpt3-175b", gpt_shape(12288, 96, 96, 50257, 2048)},
      {"gpt2-1.5b", gpt_shape(1600, 48, 25, 50257, 1024)},
      {"llama-65b", llama(8192, 80, 64, 64, 22016, 32000, 2048, 1e4)},  // LLaMA-1, QLoRA's 65B
      {"llama2-7b", llama(4096, 32, 32, 32, 11008, 32000, 4096, 1e4)},
      {"llama2-13b", llama(5120, 40, 40, 40, 13824, 32000, 4096, 1e4)},
      {"llama2-70b", llama(8192, 80, 64, 8, 28672, 32000, 4096, 1e4)},
      {"llama3-8b", llama(4096, 32, 32, 8, 14336, 128256, 8192, 5e5)},
      {"llama3-70b", llama(8192, 80, 64, 8, 28672, 128256, 8192, 5e5)},
      {"llama3-405b", llama(16384, 126, 128, 8, 53248, 128256, 8192, 5e5)},
      {"gemma-2b", gemma_2b()},
      {"llama3.2-1b", llama32_1b()},
      {"mistral-7b", mistral_7b()},
      {"qwen2.5-0.5b", qwen25(896, 24, 14, 2, 4864, 151936, true)},
      {"qwen2.5-7b", qwen25(3584, 28, 28, 4, 18944, 152064, false)},
      {"mixtral-8x7b", mixtral_8x7b()},
      {"qwen1.5-moe-a2.7b", qwen15_moe_a27b()},
  };
  return kEntries;
}

}  // namespace

ModelConfig gpt_shape(int64_t h, int64_t layers, int64_t heads, int64_t vocab, int64_t positions) {
  ModelConfig c;
  c.hidden = h;
  c.n_layers = layers;
  c.n_heads = c.n_kv_heads = heads;
  c.head_dim = h / heads;
  c.intermediate = 4 * h;
  c.vocab_size = vocab;
  c.max_positions = positions;
  return c;
}

ModelConfig catalog_model(const std::string& name) {
  for (const auto& e : entries())
    if (name == e.name) return e.cfg;
  if (name == "mixtral-8x7b")
    PX_FAIL("mixtral-8x7b needs mixture-of-experts layers, which parallm does not model yet");
  PX_FAIL("unknown model '{}' (known: {}, or an HF config.json)", name,
          fmt::join(catalog_names(), ", "));
}

std::vector<std::string> catalog_names() {
  std::vector<std::string> out;
  for (const auto& e : entries()) out.push_back(e.name);
  return out;
}

}  // namespace parallm
