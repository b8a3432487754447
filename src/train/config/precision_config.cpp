#include "train/config/precision_config.h"

#include "base/error.h"

namespace parallm {

void PrecisionConfig::validate() const {
  if (matmul == Precision::FP16) loss_scale.validate();  // the scaler runs under fp16 only
}

bool on_nan_from_name(const std::string& s) {
  PX_CHECK(s == "skip" || s == "stop", "--on-nan must be skip or stop, got '{}'", s);
  return s == "skip";
}

}  // namespace parallm
