// The shared inference flags (see inference_flags.h).
#include "train/config/inference_flags.h"

#include "base/error.h"

namespace parallm {
namespace {

const InferenceFlag& kv_dtype_flag() { return inference_flags()[0]; }

}  // namespace

const std::vector<InferenceFlag>& inference_flags() {
  static const std::vector<InferenceFlag> flags = {
      {"--kv-dtype", "f32 (default), bf16 or f16",
       "KV cache storage: f32, or bf16 / f16 at half the bytes (rounded to nearest even when "
       "stored, widened to f32 exactly when attention reads them; CPU kernels only)"},
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

}  // namespace parallm
