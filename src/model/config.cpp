#include "model/config.h"

#include "model/lora_model.h"

#include "base/error.h"

namespace parallm {

std::string arch_name(Arch a) { return a == Arch::GPT2 ? "gpt2" : "llama"; }

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
  moe.validate();
  check_lora_targets(*this);
}

int64_t ModelConfig::num_parameters() const {
  int64_t C = hidden, I = intermediate;
  int64_t n = vocab_size * C;  // token embedding
  if (uses_learned_positions()) n += max_positions * C;
  int64_t per = C * q_dim() + 2 * C * kv_dim() + q_dim() * C;  // q, k, v, o
  const int64_t mlp = (uses_swiglu() ? 3 * C * I : 2 * C * I) + (uses_bias() ? I + C : 0);
  int64_t norms = uses_layernorm() ? 2 * C : C;
  per += 2 * norms;
  if (uses_bias()) per += q_dim() + 2 * kv_dim() + C;
  n += n_layers * per + norms;
  for (int64_t l = 0; l < n_layers; ++l)  // an MoE layer: router + E expert MLPs
    n += moe.is_moe_layer(l) ? moe.num_experts * C + moe.num_experts * mlp : mlp;
  if (!tie_embeddings) n += vocab_size * C;
  return n;
}

}  // namespace parallm
