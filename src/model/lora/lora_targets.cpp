#include "model/lora/lora_targets.h"

#include <fmt/format.h>

#include <array>

#include "base/error.h"

namespace parallm {
namespace {

constexpr std::array<std::string_view, kNumLoraTargets> kNames = {"q",    "k",  "v",   "o",
                                                                  "gate", "up", "down"};
constexpr std::array<std::string_view, kNumLoraTargets> kHfNames = {
    "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view lora_target_name(LoraTarget t) { return kNames[static_cast<size_t>(t)]; }
std::string_view lora_target_hf_name(LoraTarget t) { return kHfNames[static_cast<size_t>(t)]; }

LoraTargets LoraTargets::all_linear() {
  LoraTargets t;
  for (int i = 0; i < kNumLoraTargets; ++i) t.add(static_cast<LoraTarget>(i));
  t.all_linear_ = true;
  return t;
}

LoraTargets LoraTargets::parse(std::string_view list) {
  if (trim(list) == "all-linear") return all_linear();
  LoraTargets out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    const std::string_view name =
        trim(list.substr(start, comma == std::string_view::npos ? list.npos : comma - start));
    bool found = false;
    for (int i = 0; i < kNumLoraTargets; ++i) {
      if (name == kNames[static_cast<size_t>(i)] || name == kHfNames[static_cast<size_t>(i)]) {
        PX_CHECK(!out.has(static_cast<LoraTarget>(i)), "LoRA target '{}' is listed twice in '{}'",
                 name, list);
        out.add(static_cast<LoraTarget>(i));
        found = true;
      }
    }
    PX_CHECK(found,
             "unknown LoRA target '{}' in '{}' (known: q, k, v, o, gate, up, down, their "
             "*_proj names, or all-linear)",
             name, list);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<LoraTarget> LoraTargets::list() const {
  std::vector<LoraTarget> out;
  for (int i = 0; i < kNumLoraTargets; ++i)
    if (has(static_cast<LoraTarget>(i))) out.push_back(static_cast<LoraTarget>(i));
  return out;
}

std::string LoraTargets::str() const {
  if (all_linear_) return "all-linear";
  std::vector<std::string_view> names;
  for (LoraTarget t : list()) names.push_back(lora_target_name(t));
  return fmt::format("{}", fmt::join(names, ","));
}

}  // namespace parallm
