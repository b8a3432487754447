#include "nn/precision.h"

#include "base/error.h"

namespace parallm {

Precision precision_from_name(const std::string& s) {
  if (s == "fp32") return Precision::FP32;
  if (s == "bf16") return Precision::BF16;
  if (s == "fp16") return Precision::FP16;
  PX_FAIL("unknown precision '{}' (expected fp32, bf16 or fp16)", s);
}

std::string precision_name(Precision p) {
  switch (p) {
    case Precision::FP32:
      return "fp32";
    case Precision::BF16:
      return "bf16";
    case Precision::FP16:
      return "fp16";
  }
  return "?";
}

}  // namespace parallm
