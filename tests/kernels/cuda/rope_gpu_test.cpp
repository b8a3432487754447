// RoPE on the GPU against the CPU kernel: forward and backward in place,
// fp32 and bf16, head dims 2, 8 and 128, large global positions (where float
// angles would be wrong), and backward undoing forward.
#include <cuda_bf16.h>

#include <string>

#include "common/gpu_compare.h"
#include "kernels/cpu/rope.h"
#include "kernels/cuda/rope.h"

namespace parallm {
namespace {

using testing::DeviceBuffer;
using testing::download;
using testing::expect_close;
using testing::random_normal;
using testing::rel_tol;
using testing::round_to;
using testing::upload;
using RopeGpu = testing::GpuTest;

template <class T>
void check_rope(int64_t B, int64_t T_, int64_t H, int64_t D, int64_t pos0, double theta) {
  const std::string tag = " B=" + std::to_string(B) + " T=" + std::to_string(T_) +
                          " H=" + std::to_string(H) + " D=" + std::to_string(D);
  const float tol = rel_tol<T>();
  const int64_t n = B * T_ * H * D;
  std::vector<int64_t> pos(T_);
  for (int64_t t = 0; t < T_; ++t) pos[t] = pos0 + 3 * t;
  const auto x = round_to<T>(random_normal(n, static_cast<uint32_t>(D)));
  std::vector<float> fwd = x, bwd = x;
  cpu::rope_forward<float>(fwd.data(), pos.data(), B, T_, H, D, theta);
  cpu::rope_backward<float>(bwd.data(), pos.data(), B, T_, H, D, theta);
  DeviceBuffer<int64_t> gpos(pos);
  auto gf = upload<T>(x), gb = upload<T>(x);
  cuda::rope_forward<T>(gf.get(), gpos.get(), B, T_, H, D, theta, nullptr);
  cuda::rope_backward<T>(gb.get(), gpos.get(), B, T_, H, D, theta, nullptr);
  expect_close(download(gf), fwd, tol, tol, "rope forward" + tag);
  expect_close(download(gb), bwd, tol, tol, "rope backward" + tag);
  // Backward is the inverse rotation: it undoes forward (up to rounding).
  cuda::rope_backward<T>(gf.get(), gpos.get(), B, T_, H, D, theta, nullptr);
  expect_close(download(gf), x, 4 * tol, 4 * tol, "rope backward(forward(x))" + tag);
}

TEST_F(RopeGpu, FloatMatchesCpu) {
  check_rope<float>(1, 1, 1, 2, 0, 10000.0);
  check_rope<float>(2, 5, 3, 8, 7, 10000.0);
  check_rope<float>(3, 17, 4, 128, 100000, 500000.0);
}

TEST_F(RopeGpu, Bf16MatchesCpu) {
  check_rope<__nv_bfloat16>(2, 5, 3, 8, 7, 10000.0);
  check_rope<__nv_bfloat16>(3, 17, 4, 128, 100000, 500000.0);
}

}  // namespace
}  // namespace parallm
