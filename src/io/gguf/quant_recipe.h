// Which GGUF block type each weight takes under a quantisation preset
// (`--quantize`, `parallm export --gguf --quantize`), following llama.cpp's
// choices for its file types: q8_0 and q4_0 hold every linear weight in that
// type; q4_k_m ("Q4_K_M") holds most in Q4_K and, where error costs most, in
// Q6_K: the LM head (or the tied token table), and the value projection (a
// fused qkv, whole) and the MLP's down projection in the first and last
// eighth of the layers and every third layer between (llama.cpp's
// use_more_bits). The head under q4_0 is Q6_K too, as llama.cpp makes it.
// Embedding tables and norms stay in f32. A row length the type's block does
// not divide falls back to Q8_0 (llama.cpp would take Q5_0, which parallm
// does not have), or to f32 when 32 does not divide it either.
#pragma once
#include <optional>
#include <string>

#include "ops/quant.h"

namespace parallm {

enum class QuantPreset { Q8_0, Q4_0, Q4_K_M };

// "q8_0" | "q4_0" | "q4_k_m" (case-insensitive); throws naming the accepted ones.
QuantPreset quant_preset_from_name(const std::string& name);
const char* quant_preset_name(QuantPreset p);

// What one parameter is: its internal name ("layers.3.attn.v.weight",
// "embed.weight"), row length, and its model's layer count; fused_qkv: the
// file format holds q, k, v as one tensor (GPT-2), so all three follow v;
// head: it is the LM head or a tied token table.
struct QuantTarget {
  std::string name;
  int64_t cols = 0;
  int n_layers = 0;
  bool fused_qkv = false;
  bool head = false;
};

// The block type for the parameter, or nullopt: keep it in f32.
std::optional<ops::QuantType> recipe_type(QuantPreset p, const QuantTarget& t);

}  // namespace parallm
