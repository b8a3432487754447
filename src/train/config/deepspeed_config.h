// `--deepspeed ds_config.json`: DeepSpeed's JSON config mapped onto a
// RunConfig. Keys with a parallm meaning set it (batch sizes, clipping, ZeRO
// stage, fp16 / bf16 and the loss-scale keys, optimizer, WarmupLR /
// WarmupDecayLR, TensorBoard, steps_per_print); keys that only tune
// DeepSpeed's own runtime (bucket counts, prefetching, profilers) are
// collected for one warning; any other key is an error that names it, so a
// setting is never silently dropped. Applied after the TOML file and before
// the flags, so an explicit flag still wins.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/config/train_config.h"

namespace parallm {

// DeepSpeed's batch triple: train_batch_size = micro x accumulation x dp.
// It is resolved when the layout is final (the dp flag comes later).
struct DeepSpeedBatch {
  std::optional<int64_t> train_batch, micro, accum;
};

struct DeepSpeedResult {
  DeepSpeedBatch batch;
  std::vector<std::string> runtime_only;  // keys accepted and ignored, for one warning
  std::vector<std::string> notes;         // mappings worth saying (offload on a CPU run)
};

// Reads and applies the file; throws Error naming the key for anything
// unsupported or malformed. `source` names the file in messages.
DeepSpeedResult apply_deepspeed_config(const std::string& path, RunConfig& rc);
// The same from an already parsed JSON text (tests).
DeepSpeedResult apply_deepspeed_json(const std::string& text, const std::string& source,
                                     RunConfig& rc);

// Sets micro_batch_size and global_batch_size from the triple with DeepSpeed's
// rules (any two give the third; all three must agree), unless a flag set
// them (flag_micro / flag_global).
void resolve_deepspeed_batch(const DeepSpeedBatch& b, int dp, bool flag_micro, bool flag_global,
                             TrainingConfig& t);

}  // namespace parallm
