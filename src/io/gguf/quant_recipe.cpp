// quant_recipe (see quant_recipe.h).
#include "io/gguf/quant_recipe.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "base/error.h"

namespace parallm {

namespace {
bool ends_with(std::string_view s, std::string_view suf) {
  return s.size() >= suf.size() && s.substr(s.size() - suf.size()) == suf;
}

// "layers.N...." -> N, else -1.
int layer_of(const std::string& name) {
  if (name.rfind("layers.", 0) != 0) return -1;
  return std::stoi(name.substr(7));
}

// llama.cpp's use_more_bits: the first and last eighth, and every third layer between.
bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool is_linear(const std::string& n) {
  for (const char* s : {"attn.q.weight", "attn.k.weight", "attn.v.weight", "attn.o.weight",
                        "mlp.fc.weight", "mlp.proj.weight", "mlp.gate.weight", "mlp.up.weight",
                        "mlp.down.weight"})
    if (ends_with(n, s)) return true;
  return false;
}

// The type if its block divides the row, else Q8_0, else none.
std::optional<ops::QuantType> fitting(ops::QuantType t, int64_t cols) {
  if (cols % ops::quant_traits(t).block_elems == 0) return t;
  if (cols % ops::quant_traits(ops::QuantType::Q8_0).block_elems == 0) return ops::QuantType::Q8_0;
  return std::nullopt;
}
}  // namespace

QuantPreset quant_preset_from_name(const std::string& name) {
  std::string low = name;
  std::ranges::transform(low, low.begin(), [](unsigned char c) { return std::tolower(c); });
  if (low == "q8_0") return QuantPreset::Q8_0;
  if (low == "q4_0") return QuantPreset::Q4_0;
  if (low == "q4_k_m") return QuantPreset::Q4_K_M;
  PX_FAIL("unknown quantisation '{}' (have: q8_0, q4_0, q4_k_m)", name);
}

const char* quant_preset_name(QuantPreset p) {
  switch (p) {
    case QuantPreset::Q8_0: return "q8_0";
    case QuantPreset::Q4_0: return "q4_0";
    case QuantPreset::Q4_K_M: return "q4_k_m";
  }
  return "?";
}

std::optional<ops::QuantType> recipe_type(QuantPreset p, const QuantTarget& t) {
  using ops::QuantType;
  if (!t.head && !is_linear(t.name)) return std::nullopt;
  if (p == QuantPreset::Q8_0) return fitting(QuantType::Q8_0, t.cols);
  if (t.head) return fitting(QuantType::Q6_K, t.cols);
  if (p == QuantPreset::Q4_0) return fitting(QuantType::Q4_0, t.cols);
  const int layer = layer_of(t.name);
  const bool v = ends_with(t.name, "attn.v.weight") ||
                 (t.fused_qkv && (ends_with(t.name, "attn.q.weight") ||
                                  ends_with(t.name, "attn.k.weight")));
  const bool down = ends_with(t.name, "mlp.down.weight") || ends_with(t.name, "mlp.proj.weight");
  if ((v || down) && layer >= 0 && more_bits(layer, t.n_layers))
    return fitting(QuantType::Q6_K, t.cols);
  return fitting(QuantType::Q4_K, t.cols);
}

}  // namespace parallm
