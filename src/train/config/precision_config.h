// PrecisionConfig: the [precision] table: the precision of the matmuls
// (master weights stay fp32), oneDNN's bf16 kernels or their emulation,
// fp16 loss scaling, and what a NaN/Inf loss or gradient does (fp16 always
// skips an overflowing step; --on-nan decides for fp32 and bf16).
// docs/mixed_precision.md.
#pragma once
#include <string>

#include "optim/loss_scaler.h"
#include "plan/memory_model.h"  // Precision

namespace parallm {

struct PrecisionConfig {
  Precision matmul = Precision::FP32;  // --precision fp32|bf16|fp16
  bool emulate_lowp_gemm = false;      // convert + f32 GEMM even where oneDNN has bf16 kernels
  LossScalerConfig loss_scale;         // fp16 only
  bool skip_nonfinite = false;         // --on-nan skip (true) | stop (false)
  // --device cuda: fp32 GEMMs may use TF32 tensor cores (10-bit mantissa
  // inputs); off by default, so fp32 means fp32 as on the CPU.
  bool allow_tf32 = false;

  void validate() const;
};

// --on-nan: "skip" -> true, "stop" -> false; anything else throws.
bool on_nan_from_name(const std::string& s);

}  // namespace parallm
