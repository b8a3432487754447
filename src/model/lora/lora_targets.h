// Which linear layers of a block LoRA adapts: q, k, v, o (attention), gate,
// up, down (MLP; GPT-2's c_fc is "up" and its c_proj "down"), parsed from a
// comma list such as "q,v" (PEFT's q_proj/v_proj names are accepted too) or
// "all-linear" (every linear of a block, never the LM head, as PEFT's
// all-linear). A plain value shared by the training flags and
// `parallm memory`; an unknown name fails naming it and the known ones.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace parallm {

enum class LoraTarget : uint8_t { Q, K, V, O, Gate, Up, Down };
inline constexpr int kNumLoraTargets = 7;

std::string_view lora_target_name(LoraTarget t);     // "q", ..., "down"
std::string_view lora_target_hf_name(LoraTarget t);  // "q_proj", ..., "down_proj" (LLaMA)

class LoraTargets {
 public:
  LoraTargets() = default;  // none
  static LoraTargets all_linear();
  // "q,k,v,o,gate,up,down" in any order and subset, or "all-linear".
  static LoraTargets parse(std::string_view list);

  bool has(LoraTarget t) const { return (bits_ >> static_cast<int>(t)) & 1u; }
  void add(LoraTarget t) { bits_ |= static_cast<uint8_t>(1u << static_cast<int>(t)); }
  bool empty() const { return bits_ == 0; }
  // Chosen as "all-linear": a model without some linear (GPT-2 has no gate)
  // simply has fewer targets, where naming the missing one is an error.
  bool is_all_linear() const { return all_linear_; }
  std::vector<LoraTarget> list() const;  // in the order above
  std::string str() const;               // "q,v" or "all-linear"
  bool operator==(const LoraTargets&) const = default;

 private:
  uint8_t bits_ = 0;
  bool all_linear_ = false;
};

}  // namespace parallm
