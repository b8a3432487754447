// The numeric modes a layer runs in, shared by the layers that obey them
// (nn/, model/) and the tools that predict their cost (plan/): the GEMM
// precision of mixed-precision training and the activation-recomputation
// mode. Names are the command-line spellings (docs/mixed_precision.md,
// docs/recompute.md).
#pragma once
#include <string>

namespace parallm {

enum class Precision { FP32, BF16, FP16 };
enum class Recompute { None, Selective, Full };

Precision precision_from_name(const std::string& s);  // fp32 | bf16 | fp16
Recompute recompute_from_name(const std::string& s);  // none | selective | full
std::string precision_name(Precision p);
std::string recompute_name(Recompute r);

}  // namespace parallm
