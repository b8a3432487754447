// The linears LoRA can target in each model family, with their shapes, and
// the trainable-parameter count that follows from a LoraConfig (docs/lora.md):
// sum over layers and targeted linears of rank * (in + out). The count comes
// from the config alone, so it holds for shapes too big to allocate here.
#pragma once
#include <string>
#include <vector>

#include "model/config.h"

namespace parallm {

struct LoraLinear {
  std::string kind;  // "q", ..., as LoraConfig targets name it
  int64_t in = 0, out = 0;
};

// Every linear of one block of this family (LLaMA: q k v o gate up down;
// GPT-2: q k v o fc proj), the LM head excluded as PEFT's all-linear does.
std::vector<LoraLinear> lora_linears(const ModelConfig& cfg);
// Throws naming the target and the family's linears when a target is not a
// linear of this model (e.g. "gate" on GPT-2), or LoRA meets an MoE model.
void check_lora_targets(const ModelConfig& cfg);
// Adapter parameters of the whole model (0 with LoRA off).
int64_t lora_trainable_params(const ModelConfig& cfg);

}  // namespace parallm
