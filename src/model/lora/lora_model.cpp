#include "model/lora/lora_model.h"

#include <algorithm>

#include "base/error.h"

namespace parallm {

std::vector<LoraLinear> lora_linears(const ModelConfig& cfg) {
  const int64_t C = cfg.hidden, I = cfg.intermediate;
  std::vector<LoraLinear> l = {
      {"q", C, cfg.q_dim()}, {"k", C, cfg.kv_dim()}, {"v", C, cfg.kv_dim()}, {"o", cfg.q_dim(), C}};
  if (cfg.uses_swiglu()) {
    l.push_back({"gate", C, I});
    l.push_back({"up", C, I});
    l.push_back({"down", I, C});
  } else {
    l.push_back({"fc", C, I});
    l.push_back({"proj", I, C});
  }
  return l;
}

void check_lora_targets(const ModelConfig& cfg) {
  const LoraConfig& lora = cfg.lora;
  lora.validate();
  if (!lora.enabled()) return;
  PX_CHECK(!cfg.moe.enabled(), "LoRA on mixture-of-experts models is not built yet ({} experts)",
           cfg.moe.num_experts);
  const std::vector<LoraLinear> linears = lora_linears(cfg);
  std::vector<std::string> kinds;
  for (const LoraLinear& l : linears) kinds.push_back(l.kind);
  if (!cfg.uses_swiglu()) {  // GPT-2's fc / proj are also "up" / "down"
    kinds.push_back("up");
    kinds.push_back("down");
  }
  for (const std::string& t : lora.targets)
    PX_CHECK(t == kLoraAllLinear || std::ranges::count(kinds, t) == 1,
             "LoRA target '{}' is not a linear of a {} model (its linears: {}, or {})", t,
             arch_name(cfg.arch), fmt::join(kinds, ", "), kLoraAllLinear);
}

int64_t lora_trainable_params(const ModelConfig& cfg) {
  if (!cfg.lora.enabled()) return 0;
  int64_t per_layer = 0;
  for (const LoraLinear& l : lora_linears(cfg))
    if (cfg.lora.targets_kind(l.kind)) per_layer += cfg.lora.rank * (l.in + l.out);
  return per_layer * cfg.n_layers;
}

}  // namespace parallm
