// Small integers stored as any dtype the communicators move, for the NCCL
// tests (gtest-free, so the MPI comparison program can use it too). Small
// integers are exact in every type, so sums over a few ranks compare exactly.
#pragma once
#include <cstdint>
#include <cstring>

#include "tensor/dtype.h"
#include "tensor/half.h"

namespace parallm::testing {

// Writes v as dtype t at p; false for a dtype without test values.
inline bool put_small_int(uint8_t* p, DType t, int v) {
  auto put = [&](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (t) {
    case DType::F32:
      put(static_cast<float>(v));
      return true;
    case DType::F64:
      put(static_cast<double>(v));
      return true;
    case DType::BF16:
      put(f32_to_bf16(static_cast<float>(v)));
      return true;
    case DType::F16:
      put(f32_to_f16(static_cast<float>(v)));
      return true;
    case DType::I32:
      put(static_cast<int32_t>(v));
      return true;
    case DType::I64:
      put(static_cast<int64_t>(v));
      return true;
    case DType::U8:
      put(static_cast<uint8_t>(v));
      return true;
    case DType::I8:
      put(static_cast<int8_t>(v));
      return true;
    default:
      return false;
  }
}

}  // namespace parallm::testing
