// ServedAdapter: one PEFT LoRA adapter held beside a served base model
// (docs/serving.md, "Many LoRA adapters"): its A and B factors in the
// model's memory and the per-linear table the batched forward reads
// (nn/row_lora.h), so a batch may mix it with other adapters and the base.
// Read with training's checks (io/peft_adapter.h: family, targets, every
// tensor present with its shape, nothing else), each failure naming the file
// and the key; GPT-2's Conv1D modules too (served_adapter_gpt2.cpp: c_attn's
// one A shared by q, k and v, its B cut by rows). Immutable once loaded;
// shared by the sequences that use it, so unloading while one runs frees it
// when that sequence ends.
#pragma once
#include <memory>
#include <string>

#include "model/transformer.h"
#include "nn/row_lora.h"

namespace parallm {

class ServedAdapter {
 public:
  // dir against the whole, single-process model; max_rank > 0: r above it
  // is refused (--max-lora-rank).
  static std::shared_ptr<const ServedAdapter> load(const std::string& dir, Transformer& model,
                                                   int64_t max_rank);
  const LoraFactorTable& table() const { return table_; }
  const LoraConfig& config() const { return cfg_; }
  const std::string& dir() const { return dir_; }
  int64_t bytes() const;

 private:
  ServedAdapter() = default;
  // GPT-2 (served_adapter_gpt2.cpp): c_attn, c_proj, c_fc onto q/k/v, o, fc, proj.
  static std::shared_ptr<const ServedAdapter> load_gpt2(const std::string& dir,
                                                        Transformer& model, int64_t max_rank);
  std::string dir_;
  LoraConfig cfg_;
  std::unique_ptr<ParameterSet> factors_;  // "<stem>.lora_A" / ".lora_B", whole
  LoraFactorTable table_;
};

}  // namespace parallm
