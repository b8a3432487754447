// Optimizer kernels on the GPU against the CPU ones: AdamW (with its bf16
// copy), Adam, SGD (plain, momentum, Nesterov) over several steps;
// deterministic sum of squares; scaling; the Inf/NaN flag; and global-norm
// clipping against optim's clip_grad_norm.
#include <cuda_bf16.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "common/gpu_compare.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cuda/optimizer.h"
#include "optim/grad_clip.h"

namespace parallm {
namespace {

using testing::DeviceBuffer;
using testing::expect_close;
using testing::expect_same_bits;
using testing::random_normal;
using OptimizerGpu = testing::GpuTest;

constexpr int64_t kN = 100003;

TEST_F(OptimizerGpu, AdamWMatchesCpuWithBf16Copy) {
  auto p = random_normal(kN, 1), m = std::vector<float>(kN, 0.f), v = m;
  DeviceBuffer<float> gp(p), gm(m), gv(v);
  DeviceBuffer<__nv_bfloat16> gp16(kN);
  cpu::AdamWParams h;
  h.lr = 1e-3;
  h.weight_decay = 0.1;
  for (int64_t step = 1; step <= 7; ++step) {
    const auto g = random_normal(kN, static_cast<uint32_t>(10 + step));
    h.step = step;
    cpu::adamw_step(p.data(), g.data(), m.data(), v.data(), kN, h);
    DeviceBuffer<float> gg(g);
    cuda::adamw_step(gp.get(), gg.get(), gm.get(), gv.get(), kN, h, gp16.get(), nullptr);
  }
  const auto got = gp.to_host();
  expect_close(got, p, 1e-5f, 1e-7f, "adamw p");
  expect_close(gm.to_host(), m, 1e-5f, 1e-7f, "adamw m");
  expect_close(gv.to_host(), v, 1e-5f, 1e-9f, "adamw v");
  const auto copy = testing::to_floats(gp16.to_host());
  expect_same_bits(copy, testing::round_to<__nv_bfloat16>(got), "adamw bf16 copy");
}

TEST_F(OptimizerGpu, AdamMatchesCpu) {
  auto p = random_normal(kN, 2), m = std::vector<float>(kN, 0.f), v = m;
  DeviceBuffer<float> gp(p), gm(m), gv(v);
  cpu::AdamWParams h;
  h.lr = 3e-3;
  h.beta2 = 0.999;
  h.weight_decay = 0.01;
  for (int64_t step = 1; step <= 4; ++step) {
    const auto g = random_normal(kN, static_cast<uint32_t>(20 + step));
    h.step = step;
    cpu::adam_step(p.data(), g.data(), m.data(), v.data(), kN, h);
    DeviceBuffer<float> gg(g);
    cuda::adam_step(gp.get(), gg.get(), gm.get(), gv.get(), kN, h, nullptr);
  }
  expect_close(gp.to_host(), p, 1e-5f, 1e-7f, "adam p");
  expect_close(gm.to_host(), m, 1e-5f, 1e-7f, "adam m");
}

TEST_F(OptimizerGpu, SgdMatchesCpu) {
  for (int variant = 0; variant < 3; ++variant) {
    cpu::SgdParams h;
    h.lr = 0.05;
    h.weight_decay = 0.01;
    h.momentum = variant == 0 ? 0.0 : 0.9;
    h.nesterov = variant == 2;
    auto p = random_normal(kN, 3), buf = std::vector<float>(kN, 0.f);
    DeviceBuffer<float> gp(p), gbuf(buf);
    for (int step = 0; step < 3; ++step) {
      const auto g = random_normal(kN, static_cast<uint32_t>(30 + step));
      cpu::sgd_step(p.data(), g.data(), buf.data(), kN, h);
      DeviceBuffer<float> gg(g);
      cuda::sgd_step(gp.get(), gg.get(), variant == 0 ? nullptr : gbuf.get(), kN, h, nullptr);
    }
    expect_close(gp.to_host(), p, 1e-5f, 1e-7f, "sgd p, variant " + std::to_string(variant));
  }
}

TEST_F(OptimizerGpu, SumSquaresIsDeterministicAndMatchesCpu) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, kN, int64_t{20'000'001}}) {
    const auto x = random_normal(n, 4);
    DeviceBuffer<float> gx(x);
    DeviceBuffer<char> scratch(cuda::sum_squares_scratch_bytes(n));
    DeviceBuffer<double> out(std::vector<double>{-1.0});
    cuda::sum_squares(out.get(), gx.get(), n, scratch.get(), nullptr);
    const double first = out.to_host()[0];
    const double ref = cpu::sum_squares(x.data(), n);
    EXPECT_NEAR(first, ref, 1e-10 * ref) << "n=" << n;
    cuda::sum_squares(out.get(), gx.get(), n, scratch.get(), nullptr);
    const double second = out.to_host()[0];
    EXPECT_EQ(std::memcmp(&first, &second, sizeof(double)), 0) << "n=" << n;
  }
}

TEST_F(OptimizerGpu, ScaleMatchesCpu) {
  auto x = random_normal(kN, 5);
  DeviceBuffer<float> gx(x);
  cpu::scale_inplace(x.data(), kN, 0.37f);
  cuda::scale_inplace(gx.get(), kN, 0.37f, nullptr);
  expect_same_bits(gx.to_host(), x, "scale_inplace");
}

TEST_F(OptimizerGpu, NonfiniteFlagSetsButNeverClears) {
  auto x = random_normal(kN, 6);
  DeviceBuffer<int> flag(std::vector<int>{0});
  DeviceBuffer<float> clean(x);
  cuda::has_nonfinite(flag.get(), clean.get(), kN, nullptr);
  EXPECT_EQ(flag.to_host()[0], 0);
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    auto y = x;
    y[kN - 1] = bad;
    DeviceBuffer<float> gy(y);
    DeviceBuffer<int> f(std::vector<int>{0});
    cuda::has_nonfinite(f.get(), gy.get(), kN, nullptr);
    EXPECT_EQ(f.to_host()[0], 1) << bad;
  }
  DeviceBuffer<int> set(std::vector<int>{1});
  cuda::has_nonfinite(set.get(), clean.get(), kN, nullptr);
  EXPECT_EQ(set.to_host()[0], 1);
}

TEST_F(OptimizerGpu, ClipByNormMatchesCpuClip) {
  auto g = random_normal(kN, 7);
  DeviceBuffer<float> gg(g);
  DeviceBuffer<char> scratch(cuda::sum_squares_scratch_bytes(kN));
  DeviceBuffer<double> sumsq(1);
  cuda::sum_squares(sumsq.get(), gg.get(), kN, scratch.get(), nullptr);
  const double norm = std::sqrt(sumsq.to_host()[0]);
  // Below the norm: clipped by the same factor as the CPU path.
  auto ref = g;
  clip_grad_norm(ops::Stream::host(), ref.data(), kN, norm, 1.0);
  cuda::clip_by_norm(gg.get(), kN, sumsq.get(), 1.f, nullptr);
  expect_same_bits(gg.to_host(), ref, "clip_by_norm");
  // Above the norm, or disabled: untouched.
  DeviceBuffer<float> keep(g);
  cuda::clip_by_norm(keep.get(), kN, sumsq.get(), static_cast<float>(2 * norm), nullptr);
  cuda::clip_by_norm(keep.get(), kN, sumsq.get(), 0.f, nullptr);
  expect_same_bits(keep.to_host(), g, "clip_by_norm above the norm");
}

}  // namespace
}  // namespace parallm

namespace parallm {
namespace {

// The one-launch masked Adam/AdamW against the CPU's adamw_step / adam_step
// run per parameter with its own decay (as AdamWMatchesCpuWithBf16Copy
// holds adamw_step). Measured on an H200: the result differs from per-
// parameter cuda::adamw_step launches in the last bit of a few elements
// (nvcc contracts the two kernels' multiply-adds differently), so the
// reference is the CPU, not the other GPU kernel.
using AdamMaskedGpu = testing::GpuTest;

TEST_F(AdamMaskedGpu, MatchesCpuPerParameterDecay) {
  const std::vector<std::pair<int64_t, bool>> params = {
      {16 * 7, true}, {16, false}, {16 * 300, true}, {32, false}};
  int64_t n = 0;
  std::vector<uint8_t> mask;
  for (const auto& [len, decay] : params) {
    n += len;
    mask.insert(mask.end(), static_cast<size_t>(len / 16), decay ? 1 : 0);
  }
  for (bool decoupled : {true, false}) {
    auto p = testing::random_normal(n, 3);
    std::vector<float> m(static_cast<size_t>(n), 0.f), v = m;
    DeviceBuffer<float> gp(p), gm(m), gv(v);
    DeviceBuffer<__nv_bfloat16> gp16(static_cast<size_t>(n));
    DeviceBuffer<uint8_t> dmask(mask);
    cpu::AdamWParams h;
    h.lr = 2e-3;
    h.weight_decay = 0.1;
    for (int64_t step = 1; step <= 3; ++step) {
      h.step = step;
      const auto g = testing::random_normal(n, static_cast<uint32_t>(20 + step));
      DeviceBuffer<float> gg(g);
      cuda::adam_step_masked(gp.get(), gg.get(), gm.get(), gv.get(), n, h, decoupled, dmask.get(),
                             gp16.get(), nullptr);
      int64_t off = 0;
      for (const auto& [len, decay] : params) {
        cpu::AdamWParams hp = h;
        hp.weight_decay = decay ? h.weight_decay : 0.0;
        const auto step_fn = decoupled ? cpu::adamw_step : cpu::adam_step;
        step_fn(p.data() + off, g.data() + off, m.data() + off, v.data() + off, len, hp);
        off += len;
      }
    }
    const std::string what = decoupled ? "masked adamw" : "masked adam";
    const auto got = gp.to_host();
    expect_close(got, p, 1e-5f, 1e-7f, what + " p");
    expect_close(gm.to_host(), m, 1e-5f, 1e-7f, what + " m");
    expect_close(gv.to_host(), v, 1e-5f, 1e-9f, what + " v");
    expect_same_bits(testing::to_floats(gp16.to_host()), testing::round_to<__nv_bfloat16>(got),
                     what + " bf16 copy");
  }
}

}  // namespace
}  // namespace parallm
