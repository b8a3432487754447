// The GEMM precision of mixed-precision training, shared by the layers that
// obey it (nn/, model/) and the tools that predict its cost (plan/). Names
// are the command-line spellings (docs/mixed_precision.md). Recomputation
// has its own home, nn/recompute.h.
#pragma once
#include <string>

namespace parallm {

enum class Precision { FP32, BF16, FP16 };

Precision precision_from_name(const std::string& s);  // fp32 | bf16 | fp16
std::string precision_name(Precision p);

}  // namespace parallm
