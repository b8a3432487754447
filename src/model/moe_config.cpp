// MoeConfig checks, presets and names (see moe_config.h).
#include "model/moe_config.h"

#include <cmath>

#include "base/error.h"

namespace parallm {

int64_t MoeConfig::capacity(int64_t T) const {
  if (!capacity_factor) return T;
  const double c = std::ceil(static_cast<double>(T) * topk * *capacity_factor /
                             static_cast<double>(num_experts));
  return static_cast<int64_t>(c);
}

void MoeConfig::validate() const {
  if (!enabled()) return;
  PX_CHECK(num_experts >= 1, "num_experts must be positive, got {}", num_experts);
  PX_CHECK(topk >= 1 && topk <= num_experts,
           "moe router topk ({}) must be between 1 and num_experts ({})", topk, num_experts);
  PX_CHECK(layer_freq >= 1, "moe layer frequency must be at least 1, got {}", layer_freq);
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

}  // namespace parallm
