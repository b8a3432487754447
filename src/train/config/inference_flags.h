// The flags `parallm generate` and `parallm serve` share, declared once:
// both commands (and `parallm memory --inference`, for --kv-dtype) add them
// with these calls, and `parallm settings` lists them from the same
// declarations (docs/settings.md), so the two commands cannot drift apart.
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "model/kv_cache/kv_dtype.h"

namespace parallm {

struct InferenceFlag {
  std::string flag;   // "--kv-dtype"
  std::string value;  // what it takes, for the reference
  std::string help;   // one line, for --help and the reference
};

// Every shared flag, in the order the commands add them.
const std::vector<InferenceFlag>& inference_flags();

// --kv-dtype f32|bf16|f16 (fp32, fp16 too) into kv; its default is kv's value.
CLI::Option* add_kv_dtype_flag(CLI::App* sub, KvDType& kv);
// --quantize q8_0|q4_0|q4_k_m into preset ("" keeps the model's weights as they are).
CLI::Option* add_quantize_flag(CLI::App* sub, std::string& preset);

}  // namespace parallm
