#include "nn/lora_config.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace parallm {

double LoraConfig::scale() const {
  const auto r = static_cast<double>(rank);
  return rslora ? alpha / std::sqrt(r) : alpha / r;
}

bool LoraConfig::targets_kind(const std::string& kind) const {
  if (!enabled() || std::ranges::count(lora_target_kinds(), kind) == 0) return false;
  // GPT-2's fc / proj also answer to "up" / "down" (the names parallm
  // memory --lora-targets uses for them).
  const std::string alias = kind == "fc" ? "up" : kind == "proj" ? "down" : "";
  for (const std::string& t : targets)
    if (t == kind || t == kLoraAllLinear || (!alias.empty() && t == alias)) return true;
  return false;
}

void LoraConfig::validate() const {
  PX_CHECK(rank >= 0, "--lora-rank must be positive, got {}", rank);
  PX_CHECK(!double_quant || qlora,
           "--double-quant quantises QLoRA's NF4 absmax values: it needs --qlora");
  PX_CHECK(!qlora || enabled(),
           "--qlora trains LoRA adapters over an NF4 base: it needs --lora-rank > 0 (and "
           "--lora-targets), got rank {}",
           rank);
  if (!enabled()) {
    PX_CHECK(targets.empty(), "LoRA targets ({}) are given but --lora-rank is 0",
             fmt::join(targets, ","));
    return;
  }
  PX_CHECK(!targets.empty(), "--lora-rank {} needs --lora-targets (e.g. q,v or all-linear)", rank);
  PX_CHECK(alpha > 0.0, "--lora-alpha must be positive, got {}", alpha);
  PX_CHECK(dropout >= 0.0 && dropout < 1.0, "--lora-dropout must be in [0, 1), got {}", dropout);
  for (const std::string& t : targets)
    PX_CHECK(t == kLoraAllLinear || std::ranges::count(lora_target_kinds(), t) == 1,
             "unknown LoRA target '{}' (known: {}, {})", t, fmt::join(lora_target_kinds(), ", "),
             kLoraAllLinear);
}

std::vector<std::string> parse_lora_targets(const std::string& s) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= s.size()) {
    size_t e = s.find(',', p);
    if (e == std::string::npos) e = s.size();
    std::string t = s.substr(p, e - p);
    t.erase(0, t.find_first_not_of(' '));
    t.erase(t.find_last_not_of(' ') + 1);
    PX_CHECK(!t.empty(), "empty LoRA target in '{}'", s);
    PX_CHECK(t == kLoraAllLinear || std::ranges::count(lora_target_kinds(), t) == 1,
             "unknown LoRA target '{}' (known: {}, {})", t, fmt::join(lora_target_kinds(), ", "),
             kLoraAllLinear);
    if (std::ranges::count(out, t) == 0) out.push_back(t);
    p = e + 1;
  }
  return out;
}

}  // namespace parallm
