#include "model/lora/lora_merge.h"

#include "base/error.h"
#include "ops/matmul.h"

namespace parallm {

namespace {
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

std::string lora_base_weight(const std::string& adapter_name) {
  for (const char* tail : {".lora_A", ".lora_B"})
    if (ends_with(adapter_name, tail))
      return adapter_name.substr(0, adapter_name.size() - 7) + ".weight";
  return "";
}

int merge_lora(const ParameterSet& adapters, ParameterSet& base, double scale) {
  int merged = 0;
  for (int i = 0; i < adapters.size(); ++i) {
    const std::string& name = adapters.spec(i).name;
    if (!ends_with(name, ".lora_A")) continue;
    const std::string stem = name.substr(0, name.size() - 7);
    const int b = adapters.find(stem + ".lora_B");
    const int w = base.find(stem + ".weight");
    PX_CHECK(b >= 0, "LoRA factor '{}' has no '{}.lora_B'", name, stem);
    PX_CHECK(w >= 0, "LoRA factor '{}' has no base weight '{}.weight'", name, stem);
    const auto& as = adapters.spec(i).shape;  // (r, in)
    const auto& bs = adapters.spec(b).shape;  // (out, r)
    const auto& ws = base.spec(w).shape;      // (out, in)
    PX_CHECK(as[0] == bs[1] && ws[0] == bs[0] && ws[1] == as[1],
             "LoRA shapes of '{}' do not match: A ({}, {}), B ({}, {}), weight ({}, {})", stem,
             as[0], as[1], bs[0], bs[1], ws[0], ws[1]);
    ops::gemm(base.stream(), false, false, ws[0], ws[1], as[0], static_cast<float>(scale),
              adapters.value(ParamRef{b}), as[0], adapters.value(ParamRef{i}), as[1], 1.0f,
              base.value(ParamRef{w}), ws[1]);
    ++merged;
  }
  return merged;
}

}  // namespace parallm
