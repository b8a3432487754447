#include "train/config/training_config.h"

#include "base/error.h"

namespace parallm {

void TrainingConfig::validate() const {
  PX_CHECK(steps > 0, "steps must be positive, got {}", steps);
  PX_CHECK(micro_batch_size > 0, "micro batch size must be positive, got {}", micro_batch_size);
  PX_CHECK(global_batch_size % micro_batch_size == 0,
           "global batch size ({}) is not divisible by micro batch size ({})", global_batch_size,
           micro_batch_size);
  PX_CHECK(seq_len > 0, "seq_len must be positive, got {}", seq_len);
}

}  // namespace parallm
