// MoeConfig checks, presets and names (see moe_config.h).
#include "model/moe/moe_config.h"

#include <cmath>
#include <exception>

#include "base/error.h"
#include "model/moe/moe_layer_freq.h"

namespace parallm {

int64_t MoeConfig::capacity(int64_t T) const {
  if (!capacity_factor) return T;
  const double c = std::ceil(static_cast<double>(T) * topk * *capacity_factor /
                             static_cast<double>(num_experts));
  return static_cast<int64_t>(c);
}

bool MoeConfig::is_moe_layer(int64_t layer) const {
  if (!enabled()) return false;
  if (!layer_pattern.empty())
    return layer >= 0 && layer < static_cast<int64_t>(layer_pattern.size()) &&
           layer_pattern[static_cast<size_t>(layer)] != 0;
  return layer % layer_freq == 0;
}

void MoeConfig::set_layer_freq(const std::string& text) {
  if (text.find('[') != std::string::npos) {  // Megatron: a list expression
    layer_pattern = parse_moe_layer_freq_list(text);
    return;
  }
  size_t used = 0;
  int k = 0;
  try {
    k = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  while (used < text.size() && (text[used] == ' ' || text[used] == '\t')) ++used;
  PX_CHECK(used > 0 && used == text.size(),
           "moe layer frequency '{}' is neither an integer nor a list like [1,0,1,0] or "
           "([1]*3+[0])*2",
           text);
  layer_freq = k;
  layer_pattern.clear();
}

void MoeConfig::validate() const {
  if (!enabled()) return;
  PX_CHECK(num_experts >= 1, "num_experts must be positive, got {}", num_experts);
  PX_CHECK(topk >= 1 && topk <= num_experts,
           "moe router topk ({}) must be between 1 and num_experts ({})", topk, num_experts);
  PX_CHECK(layer_freq >= 1, "moe layer frequency must be at least 1, got {}", layer_freq);
  for (size_t l = 0; l < layer_pattern.size(); ++l)
    PX_CHECK(layer_pattern[l] == 0 || layer_pattern[l] == 1,
             "moe layer pattern entries must be 0 (dense) or 1 (MoE); layer {} has {}", l,
             layer_pattern[l]);
  PX_CHECK(ffn_hidden_size >= 0,
           "moe expert ffn hidden size must be positive (or 0: the model's intermediate size), "
           "got {}",
           ffn_hidden_size);
  PX_CHECK(!capacity_factor || *capacity_factor > 0.0,
           "moe capacity factor must be positive, got {} (leave it unset for dropless)",
           capacity_factor.value_or(0.0));
  PX_CHECK(shared_intermediate >= 0,
           "moe shared expert intermediate size must be non-negative, got {}", shared_intermediate);
  PX_CHECK(
      !shared_expert_gate || shared_intermediate > 0,
      "the moe shared expert gate needs a shared expert (--moe-shared-expert-intermediate-size)");
  PX_CHECK(aux_loss_coeff >= 0.0 && z_loss_coeff >= 0.0,
           "moe loss coefficients must be non-negative (aux {}, z {})", aux_loss_coeff,
           z_loss_coeff);
  PX_CHECK(bias_update_rate >= 0.0, "moe router bias update rate must be non-negative, got {}",
           bias_update_rate);
  // Megatron refuses it too: with softmax the bias would shift probabilities
  // that sum to 1 (DeepSeek-V3 defines it on independent sigmoid scores).
  PX_CHECK(num_groups >= 1, "moe router groups (--moe-router-num-groups) must be at least 1, got {}",
           num_groups);
  if (num_groups > 1) {
    PX_CHECK(score == ScoreFunction::Sigmoid,
             "group-limited routing (--moe-router-num-groups {}) needs sigmoid scores "
             "(--moe-router-score-function sigmoid, DeepSeek-V3's); the score function is {}",
             num_groups, score_function_name(score));
    PX_CHECK(num_experts % num_groups == 0,
             "moe experts ({}) are not divisible into --moe-router-num-groups ({}) groups",
             num_experts, num_groups);
    PX_CHECK(num_experts / num_groups >= 2,
             "moe router groups need at least 2 experts each (a group scores its best two): {} "
             "experts in {} groups",
             num_experts, num_groups);
    PX_CHECK(group_topk >= 1 && group_topk <= num_groups,
             "--moe-router-group-topk ({}) must be in [1, --moe-router-num-groups ({})]", group_topk,
             num_groups);
    PX_CHECK(group_topk * (num_experts / num_groups) >= topk,
             "--moe-router-group-topk ({}) groups of {} experts hold fewer than top-k ({})",
             group_topk, num_experts / num_groups, topk);
  }
  PX_CHECK(topk_scaling_factor > 0 && std::isfinite(topk_scaling_factor),
           "--moe-router-topk-scaling-factor must be positive, got {}", topk_scaling_factor);
  PX_CHECK(topk_scaling_factor == 1.0 || score == ScoreFunction::Sigmoid,
           "--moe-router-topk-scaling-factor ({}) needs sigmoid scores (DeepSeek-V3's "
           "routed_scaling_factor); the score function is {}",
           topk_scaling_factor, score_function_name(score));
  PX_CHECK(!expert_bias || score == ScoreFunction::Sigmoid,
           "the moe expert bias (--moe-router-enable-expert-bias) needs sigmoid scores "
           "(--moe-router-score-function sigmoid); the score function is {}",
           score_function_name(score));
}

void MoeConfig::apply_preset(const std::string& name) {
  if (name == "switch") {
    topk = 1, order = RouterOrder::SoftmaxTopk, renormalize = false;
  } else if (name == "gshard") {
    topk = 2, order = RouterOrder::SoftmaxTopk, renormalize = true;
  } else if (name == "mixtral") {
    topk = 2, order = RouterOrder::TopkSoftmax, renormalize = false;
  } else {
    PX_FAIL("unknown moe router preset '{}' (expected switch, gshard or mixtral)", name);
  }
}

RouterOrder router_order_from_name(const std::string& s) {
  if (s == "softmax-topk") return RouterOrder::SoftmaxTopk;
  if (s == "topk-softmax") return RouterOrder::TopkSoftmax;
  PX_FAIL("unknown moe router order '{}' (expected softmax-topk or topk-softmax)", s);
}

std::string router_order_name(RouterOrder o) {
  return o == RouterOrder::SoftmaxTopk ? "softmax-topk" : "topk-softmax";
}

DropPolicy drop_policy_from_name(const std::string& s) {
  if (s == "position") return DropPolicy::Position;
  if (s == "probs") return DropPolicy::Probs;
  PX_FAIL("unknown moe drop policy '{}' (expected position or probs)", s);
}

ScoreFunction score_function_from_name(const std::string& s) {
  if (s == "softmax") return ScoreFunction::Softmax;
  if (s == "sigmoid") return ScoreFunction::Sigmoid;
  PX_FAIL("unknown moe router score function '{}' (expected softmax or sigmoid)", s);
}

std::string score_function_name(ScoreFunction f) {
  return f == ScoreFunction::Softmax ? "softmax" : "sigmoid";
}

}  // namespace parallm
