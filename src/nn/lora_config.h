// LoraConfig: low-rank adapters on a model's linears (docs/lora.md). Each
// targeted linear y = x W^T gains y += scale * dropout(x) A^T B^T with A
// (rank, in) and B (out, rank); the base weights are frozen. Targets are
// the model's linear kinds (q k v o, gate up down for LLaMA, fc proj for
// GPT-2) or "all-linear" (every linear but the LM head, as PEFT).
// Invariant: rank 0 means LoRA is off and nothing else is read.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace parallm {

// Every linear kind a target may name, in the model's order.
inline const std::vector<std::string>& lora_target_kinds() {
  static const std::vector<std::string> kinds = {"q",  "k",    "v",  "o",   "gate",
                                                 "up", "down", "fc", "proj"};
  return kinds;
}
inline constexpr const char* kLoraAllLinear = "all-linear";

struct LoraConfig {
  int64_t rank = 0;                  // 0: off
  double alpha = 8.0;                // PEFT's default lora_alpha
  double dropout = 0.0;              // on the adapter's input, training only
  std::vector<std::string> targets;  // kinds, or {"all-linear"}
  bool rslora = false;               // scale alpha / sqrt(rank) instead of alpha / rank
  // QLoRA (docs/qlora.md): every block linear's frozen base weight held in
  // NF4 (blocks of 64, fp32 absmax), dequantised a tile at a time inside its
  // GEMM; double_quant also quantises the absmax to 8 bits in blocks of 256.
  bool qlora = false;
  bool double_quant = false;

  bool enabled() const { return rank > 0; }
  double scale() const;
  // True when the linear of this kind (e.g. "q") carries an adapter.
  bool targets_kind(const std::string& kind) const;
  // Throws naming the value: negative rank, dropout outside [0, 1), alpha <= 0,
  // targets without a rank or a rank without targets, --qlora without a rank,
  // --double-quant without --qlora.
  void validate() const;
};

// "q,v" / "all-linear" -> the list; throws naming an unknown name and the known ones.
std::vector<std::string> parse_lora_targets(const std::string& s);

}  // namespace parallm
