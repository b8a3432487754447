#include "train/config/logging_config.h"

#include "base/error.h"

namespace parallm {

void LoggingConfig::validate() const {
  PX_CHECK(log_interval > 0, "log_interval must be positive, got {}", log_interval);
  PX_CHECK(peak_tflops >= 0, "peak_tflops must be >= 0 (0: measure), got {}", peak_tflops);
}

}  // namespace parallm
