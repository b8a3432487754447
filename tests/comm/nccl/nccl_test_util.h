// Shared pieces of the NCCL gpu tests: a fixture with a one-rank NCCL group
// on device 0 (skipping, saying so, with no device), and typed test values
// as raw bytes, small integers that every dtype holds exactly, so that a
// one-rank reduction, which is a copy, can be compared bit for bit.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "comm/nccl/nccl_world.h"
#include "common/gpu_test.h"
#include "tensor/dtype.h"
#include "tensor/half.h"

namespace parallm::testing {

inline const std::vector<DType> kAllDTypes = {DType::F32, DType::F64, DType::BF16, DType::F16,
                                              DType::I32, DType::I64, DType::U8,   DType::I8};
inline const std::vector<DType> kReducible = {DType::F32, DType::F64, DType::BF16,
                                              DType::F16, DType::I32, DType::I64};

// n values of dtype t as bytes: (i*7 + seed) % 23 - 11 (+11 for U8).
inline std::vector<uint8_t> test_values(DType t, size_t n, int seed) {
  const size_t es = dtype_size(t);
  std::vector<uint8_t> out(n * es);
  for (size_t i = 0; i < n; ++i) {
    const int v = static_cast<int>((i * 7 + static_cast<size_t>(seed)) % 23) - 11;
    uint8_t* p = out.data() + i * es;
    auto put = [&](auto x) { std::memcpy(p, &x, sizeof(x)); };
    switch (t) {
      case DType::F32:
        put(static_cast<float>(v));
        break;
      case DType::F64:
        put(static_cast<double>(v));
        break;
      case DType::BF16:
        put(f32_to_bf16(static_cast<float>(v)));
        break;
      case DType::F16:
        put(f32_to_f16(static_cast<float>(v)));
        break;
      case DType::I32:
        put(static_cast<int32_t>(v));
        break;
      case DType::I64:
        put(static_cast<int64_t>(v));
        break;
      case DType::U8:
        put(static_cast<uint8_t>(v + 11));
        break;
      case DType::I8:
        put(static_cast<int8_t>(v));
        break;
      default:
        ADD_FAILURE() << "no test values for " << dtype_name(t);
    }
  }
  return out;
}

class NcclSingleTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    comm::CommOptions opts;
    opts.timeout = std::chrono::seconds(60);
    comm_ = comm::make_nccl_single(0, opts);
  }
  std::unique_ptr<comm::NcclCommunicator> comm_;
};

}  // namespace parallm::testing
