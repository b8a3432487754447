#include "model/config.h"

#include "model/lora/lora_model.h"

#include "base/error.h"

namespace parallm {

std::string arch_name(Arch a) { return a == Arch::GPT2 ? "gpt2" : "llama"; }

std::string rope_scaling_name(RopeScalingType t) {
  switch (t) {
    case RopeScalingType::None:
      return "none";
    case RopeScalingType::Linear:
      return "linear";
    case RopeScalingType::Dynamic:
      return "dynamic";
    case RopeScalingType::Llama3:
      return "llama3";
  }
  return "?";
}

RopeScalingType rope_scaling_from_name(const std::string& s) {
  for (RopeScalingType t : {RopeScalingType::None, RopeScalingType::Linear,
                            RopeScalingType::Dynamic, RopeScalingType::Llama3})
    if (rope_scaling_name(t) == s) return t;
  PX_FAIL("unknown rope_scaling '{}' (expected none, linear, dynamic or llama3)", s);
}

Arch arch_from_name(const std::string& s) {
  if (s == "gpt2") return Arch::GPT2;
  if (s == "llama") return Arch::LLaMA;
  PX_FAIL("unknown model arch '{}' (expected 'gpt2' or 'llama')", s);
}

void ModelConfig::validate() const {
  PX_CHECK(vocab_size > 0 && hidden > 0 && n_layers > 0 && n_heads > 0 && n_kv_heads > 0 &&
               head_dim > 0 && intermediate > 0 && max_positions > 0,
           "model sizes must be positive (vocab_size {}, hidden {}, n_layers {}, n_heads {}, "
           "n_kv_heads {}, head_dim {}, intermediate {}, max_positions {})",
           vocab_size, hidden, n_layers, n_heads, n_kv_heads, head_dim, intermediate,
           max_positions);
  PX_CHECK(
      attn_dropout >= 0.0 && attn_dropout < 1.0 && hidden_dropout >= 0.0 && hidden_dropout < 1.0,
      "dropout probabilities must be in [0, 1) (attention {}, hidden {})", attn_dropout,
      hidden_dropout);
  PX_CHECK(n_heads % n_kv_heads == 0,
           "num_attention_heads ({}) is not divisible by num_key_value_heads ({})", n_heads,
           n_kv_heads);
  if (arch == Arch::GPT2) {
    PX_CHECK(n_kv_heads == n_heads,
             "gpt2 has no grouped-query attention (n_heads {}, n_kv_heads {})", n_heads,
             n_kv_heads);
    PX_CHECK(q_dim() == hidden, "gpt2 needs n_heads * head_dim ({} * {}) == hidden ({})", n_heads,
             head_dim, hidden);
  } else {
    PX_CHECK(head_dim % 2 == 0, "rotary embeddings need an even head_dim, got {}", head_dim);
  }
  PX_CHECK(norm_eps > 0, "norm_eps must be positive, got {}", norm_eps);
  validate_family_traits();
  moe.validate();
  PX_CHECK(moe.layer_pattern.empty() || static_cast<int64_t>(moe.layer_pattern.size()) == n_layers,
           "the moe layer pattern has {} entries for {} layers", moe.layer_pattern.size(),
           n_layers);
  check_lora_targets(*this);
}

std::string ModelConfig::hf_model_type() const {
  // Experts added to a llama by flags are written as Mixtral, to a Qwen2 as Qwen2-MoE.
  if (moe.enabled() && (hf_type == "qwen2" || (hf_type.empty() && qkv_bias))) return "qwen2_moe";
  if (moe.enabled() && (hf_type.empty() || hf_type == "llama")) return "mixtral";
  if (!hf_type.empty()) return hf_type;
  if (qkv_bias) return "qwen2";
  if (sliding_window > 0) return "mistral";
  return "llama";
}

void ModelConfig::validate_family_traits() const {
  const bool llama = arch == Arch::LLaMA;
  PX_CHECK(llama || (rope_scaling.type == RopeScalingType::None && !qkv_bias &&
                     sliding_window == 0 && hf_type.empty()),
           "rope_scaling, q/k/v bias, sliding windows and hf_type '{}' belong to the llama family, "
           "not {}",
           hf_type, arch_name(arch));
  PX_CHECK(hf_type.empty() || hf_type == "llama" || hf_type == "mistral" || hf_type == "qwen2" ||
               hf_type == "gemma" || hf_type == "mixtral" || hf_type == "qwen2_moe",
           "hf_type '{}' is not one of llama, mistral, qwen2, gemma, mixtral, qwen2_moe", hf_type);
  PX_CHECK(sliding_window >= 0, "sliding_window must be >= 0 (0: off), got {}", sliding_window);
  if (llama) {
    // Each Hugging Face family can say only some of the traits.
    const std::string t = hf_model_type();
    const bool qwen = t == "qwen2" || t == "qwen2_moe";
    PX_CHECK(!qkv_bias || qwen, "q/k/v biases are written as qwen2 or qwen2_moe, not {}", t);
    PX_CHECK(!qwen || qkv_bias, "{} always has q/k/v biases", t);
    PX_CHECK(sliding_window == 0 || t == "mistral" || t == "mixtral",
             "a sliding window is written as mistral or mixtral, not {}", t);
    PX_CHECK(rope_scaling.type == RopeScalingType::None || t == "llama",
             "rope_scaling is written as llama, not {}", t);
    // Gemma's MLP (GeGLU) is not in the experts' kernels.
    PX_CHECK(!gemma() || !moe.enabled(), "Gemma with experts ({} of them) is not supported",
             moe.num_experts);
    PX_CHECK(!moe.enabled() || t == "mixtral" || t == "qwen2_moe",
             "experts are written as mixtral or qwen2_moe, not {}", t);
  }
  const RopeScaling& r = rope_scaling;
  if (r.type != RopeScalingType::None)
    PX_CHECK(r.factor >= 1.0, "rope_scaling factor must be >= 1, got {}", r.factor);
  if (r.type == RopeScalingType::Llama3)
    PX_CHECK(r.original_max_positions > 0 && r.high_freq_factor > r.low_freq_factor,
             "llama3 rope_scaling needs original_max_position_embeddings > 0 ({}) and "
             "high_freq_factor ({}) > low_freq_factor ({})",
             r.original_max_positions, r.high_freq_factor, r.low_freq_factor);
}

int64_t ModelConfig::num_parameters() const {
  int64_t C = hidden, I = intermediate;
  auto mlp_of = [&](int64_t width) {  // one MLP of `width` features
    return (uses_swiglu() ? 3 * C * width : 2 * C * width) + (uses_bias() ? width + C : 0);
  };
  int64_t n = vocab_size * C;  // token embedding
  if (uses_learned_positions()) n += max_positions * C;
  int64_t per = C * q_dim() + 2 * C * kv_dim() + q_dim() * C;  // q, k, v, o
  const int64_t mlp = mlp_of(I);
  // An MoE layer: router, E routed experts, the shared expert and its gate.
  const int64_t moe_layer = moe.num_experts * C +
                            moe.num_experts * mlp_of(moe.expert_intermediate(I)) +
                            (moe.shared_intermediate > 0 ? mlp_of(moe.shared_intermediate) : 0) +
                            (moe.shared_expert_gate ? C : 0);
  int64_t norms = uses_layernorm() ? 2 * C : C;
  per += 2 * norms;
  if (uses_bias()) per += q_dim() + 2 * kv_dim() + C;
  if (qkv_bias) per += q_dim() + 2 * kv_dim();
  n += n_layers * per + norms;
  for (int64_t l = 0; l < n_layers; ++l) n += moe.is_moe_layer(l) ? moe_layer : mlp;
  if (!tie_embeddings) n += vocab_size * C;
  return n;
}

}  // namespace parallm
