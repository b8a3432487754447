// The LoRA-serving flags (see lora_serving_flags.h).
#include "train/config/lora_serving_flags.h"

namespace parallm {

const std::vector<InferenceFlag>& lora_serving_flags() {
  static const std::vector<InferenceFlag> flags = {
      {"--lora-modules", "name=path ... (default: none)",
       "LoRA adapters (PEFT directories) served beside the model; a request whose model is a "
       "name uses that adapter, and requests of different adapters share a batch (one process, "
       "continuous engine; docs/serving.md)"},
      {"--enable-lora", "(a switch)",
       "allow loading LoRA adapters at run time (POST /v1/load_lora_adapter) without "
       "--lora-modules"},
      {"--max-loras", "N (default 8)", "LoRA adapters loaded at once; a load beyond is a 400"},
      {"--max-lora-rank", "R (default 16)", "largest LoRA rank r an adapter may have"},
  };
  return flags;
}

void add_lora_serving_flags(CLI::App* sub, LoraServingFlags& f) {
  const std::vector<InferenceFlag>& d = lora_serving_flags();
  sub->add_option(d[0].flag, f.modules, d[0].help);
  sub->add_flag(d[1].flag, f.enable, d[1].help);
  sub->add_option(d[2].flag, f.max_loras, d[2].help)->check(CLI::PositiveNumber);
  sub->add_option(d[3].flag, f.max_lora_rank, d[3].help)->check(CLI::PositiveNumber);
}

}  // namespace parallm
