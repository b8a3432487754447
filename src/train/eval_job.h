// Evaluation of a saved HF model on token shards: mean cross-entropy over the
// first `batches` micro-batches of windows in stream order (no shuffle), so
// the number is reproducible and comparable across runs.
#pragma once
#include <string>
#include <vector>

#include "nn/packed_docs.h"

namespace parallm {

struct EvalResult {
  double loss = 0.0;
  int64_t tokens = 0;
  int64_t batches = 0;
};

// lora_adapter: a PEFT LoRA adapter directory applied to the model (empty: none).
// docs: packed documents as in training (the EOD must be set and in the
// vocabulary when a flag is on).
EvalResult evaluate_hf_model(const std::string& model_dir, const std::vector<std::string>& files,
                             int64_t seq_len, int64_t micro_batch, int64_t batches, int threads,
                             const std::string& lora_adapter = "", const PackedDocs& docs = {});

}  // namespace parallm
