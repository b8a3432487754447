// The LoRA-serving flags of `parallm serve` (vLLM's names), declared once:
// the serve command adds them with add_lora_serving_flags and `parallm
// settings` lists them from the same table (docs/settings.md), so the two
// cannot drift apart. What they do: docs/serving.md, "Many LoRA adapters".
// Invariant: max_loras >= 1 and max_lora_rank >= 1 once parsed.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "train/config/inference_flags.h"

namespace parallm {

struct LoraServingFlags {
  std::vector<std::string> modules;  // --lora-modules name=path ...
  bool enable = false;               // --enable-lora
  int max_loras = 8;                 // --max-loras
  int64_t max_lora_rank = 16;        // --max-lora-rank (vLLM's default)
};

// The flags, in the order the command adds them.
const std::vector<InferenceFlag>& lora_serving_flags();
void add_lora_serving_flags(CLI::App* sub, LoraServingFlags& f);

}  // namespace parallm
