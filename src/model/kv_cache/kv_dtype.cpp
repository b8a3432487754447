// KvDType names and sizes (see kv_dtype.h).
#include "model/kv_cache/kv_dtype.h"

#include "base/error.h"

namespace parallm {

KvDType kv_dtype_from_name(const std::string& s) {
  if (s == "f32" || s == "fp32") return KvDType::F32;
  if (s == "bf16") return KvDType::BF16;
  if (s == "f16" || s == "fp16") return KvDType::F16;
  PX_FAIL("unknown KV cache dtype '{}' (expected f32, bf16 or f16)", s);
}

std::string kv_dtype_name(KvDType t) {
  switch (t) {
    case KvDType::F32: return "f32";
    case KvDType::BF16: return "bf16";
    case KvDType::F16: return "f16";
  }
  return "?";
}

int64_t kv_dtype_bytes(KvDType t) { return t == KvDType::F32 ? 4 : 2; }

DType kv_tensor_dtype(KvDType t) {
  switch (t) {
    case KvDType::F32: return DType::F32;
    case KvDType::BF16: return DType::BF16;
    case KvDType::F16: return DType::F16;
  }
  return DType::F32;
}

Precision kv_precision(KvDType t) {
  switch (t) {
    case KvDType::F32: return Precision::FP32;
    case KvDType::BF16: return Precision::BF16;
    case KvDType::F16: return Precision::FP16;
  }
  return Precision::FP32;
}

std::optional<ops::LowpType> kv_lowp(KvDType t) {
  if (t == KvDType::BF16) return ops::LowpType::BF16;
  if (t == KvDType::F16) return ops::LowpType::F16;
  return std::nullopt;
}

}  // namespace parallm
