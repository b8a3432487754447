// The shared inference flags (see inference_flags.h).
#include "train/config/inference_flags.h"

#include "base/error.h"
#include "io/gguf/quant_recipe.h"

namespace parallm {
namespace {

const InferenceFlag& kv_dtype_flag() { return inference_flags()[0]; }
const InferenceFlag& quantize_flag() { return inference_flags()[1]; }

}  // namespace

const std::vector<InferenceFlag>& inference_flags() {
  static const std::vector<InferenceFlag> flags = {
      {"--kv-dtype", "f32 (default), bf16 or f16",
       "KV cache storage: f32, or bf16 / f16 at half the bytes (rounded to nearest even when "
       "stored, widened to f32 exactly when attention reads them; CPU kernels only)"},
      {"--quantize", "q8_0, q4_0 or q4_k_m (default: none)",
       "quantise the linear weights and the LM head of a model directory or checkpoint into "
       "GGUF blocks at load, as llama.cpp's file types mix them (docs/quantized.md; CPU only)"},
  };
  return flags;
}

CLI::Option* add_kv_dtype_flag(CLI::App* sub, KvDType& kv) {
  const InferenceFlag& f = kv_dtype_flag();
  return sub
      ->add_option_function<std::string>(
          f.flag,
          [&kv](const std::string& v) {
            try {
              kv = kv_dtype_from_name(v);
            } catch (const Error& e) {  // a parse error: CLI11 names the flag and exits 109
              throw CLI::ValidationError(e.what());
            }
          },
          f.help)
      ->default_str(kv_dtype_name(kv))
      ->type_name("f32|bf16|f16");
}

CLI::Option* add_quantize_flag(CLI::App* sub, std::string& preset) {
  const InferenceFlag& f = quantize_flag();
  return sub
      ->add_option_function<std::string>(
          f.flag,
          [&preset](const std::string& v) {
            try {
              preset = quant_preset_name(quant_preset_from_name(v));
            } catch (const Error& e) {  // a parse error: CLI11 names the flag and exits 109
              throw CLI::ValidationError(e.what());
            }
          },
          f.help)
      ->type_name("q8_0|q4_0|q4_k_m");
}

}  // namespace parallm
