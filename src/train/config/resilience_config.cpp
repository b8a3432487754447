#include "train/config/resilience_config.h"

#include "base/error.h"

namespace parallm {

void ResilienceConfig::validate() const {
  PX_CHECK(comm_timeout_s > 0, "comm_timeout must be positive seconds, got {}", comm_timeout_s);
  PX_CHECK(straggler_window >= 0, "straggler_window must be >= 0 (0: off), got {}",
           straggler_window);
  PX_CHECK(straggler_threshold > 1, "straggler_threshold must be above 1, got {}",
           straggler_threshold);
}

}  // namespace parallm
