// bf16 conversion on the GPU stores the same bits as the CPU's half.h.
#include <cuda_bf16.h>

#include <cstring>
#include <random>

#include "common/gpu_test.h"
#include "kernels/cuda/convert.h"
#include "tensor/half.h"

namespace parallm {
namespace {

using testing::DeviceBuffer;
using ConvertGpu = testing::GpuTest;

TEST_F(ConvertGpu, Bf16RoundTripMatchesCpuBits) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 10.f);
  std::vector<float> x(1000 + 7);
  for (auto& v : x) v = nd(rng);
  x[0] = 0.f;
  x[1] = -0.f;
  x[2] = 1e-40f;  // subnormal
  DeviceBuffer<float> dx(x);
  DeviceBuffer<__nv_bfloat16> db(x.size());
  DeviceBuffer<float> back(x.size());
  cuda::f32_to_bf16(db.get(), dx.get(), x.size(), nullptr);
  cuda::bf16_to_f32(back.get(), db.get(), x.size(), nullptr);
  auto bits = db.to_host();
  auto got = back.to_host();
  for (size_t i = 0; i < x.size(); ++i) {
    uint16_t gpu_bits;
    std::memcpy(&gpu_bits, &bits[i], 2);
    ASSERT_EQ(gpu_bits, parallm::f32_to_bf16(x[i])) << "element " << i << " = " << x[i];
    ASSERT_EQ(got[i], parallm::bf16_to_f32(parallm::f32_to_bf16(x[i])));
  }
}

}  // namespace
}  // namespace parallm
