// The element type a paged KV cache stores its keys and values in: f32, or
// 16 bits (bf16, IEEE f16), rounded to nearest even when written and widened
// to f32 exactly when attention reads them (kernels/cpu/paged_attention.h).
// The command-line spelling is `--kv-dtype f32|bf16|f16` (fp32, fp16 too).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "nn/precision.h"
#include "ops/lowp.h"
#include "tensor/dtype.h"

namespace parallm {

enum class KvDType { F32, BF16, F16 };

KvDType kv_dtype_from_name(const std::string& s);  // throws, naming the accepted values
std::string kv_dtype_name(KvDType t);                 // "f32", "bf16", "f16"
int64_t kv_dtype_bytes(KvDType t);                    // 4 or 2
DType kv_tensor_dtype(KvDType t);
Precision kv_precision(KvDType t);                    // for the memory model (plan/)
// The 16-bit kind the kernels take; nullopt for f32.
std::optional<ops::LowpType> kv_lowp(KvDType t);

}  // namespace parallm
