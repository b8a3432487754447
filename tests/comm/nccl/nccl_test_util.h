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
#include "dtype_values.h"  // tests/comm/nccl/
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
    if (!put_small_int(out.data() + i * es, t, t == DType::U8 ? v + 11 : v)) {
      ADD_FAILURE() << "no test values for " << dtype_name(t);
      break;
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
