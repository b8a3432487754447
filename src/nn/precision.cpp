#include "nn/precision.h"

#include "base/error.h"

namespace parallm {

Precision precision_from_name(const std::string& s) {
  if (s == "fp32") return Precision::FP32;
  if (s == "bf16") return Precision::BF16;
  if (s == "fp16") return Precision::FP16;
  PX_FAIL("unknown precision '{}' (expected fp32, bf16 or fp16)", s);
}

Recompute recompute_from_name(const std::string& s) {
  if (s == "none") return Recompute::None;
  if (s == "selective") return Recompute::Selective;
  if (s == "full") return Recompute::Full;
  PX_FAIL("unknown recompute mode '{}' (expected none, selective or full)", s);
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

std::string recompute_name(Recompute r) {
  switch (r) {
    case Recompute::None:
      return "none";
    case Recompute::Selective:
      return "selective";
    case Recompute::Full:
      return "full";
  }
  return "?";
}

}  // namespace parallm
