// LayerNorm and RMSNorm on the GPU against the CPU kernels: forward outputs
// and saved statistics, backward input/weight/bias gradients accumulating
// into non-zero buffers, fp32 and bf16, odd shapes (N = 1, C = 7, more than
// one 64-row gradient chunk), and bitwise-repeatable weight gradients.
#include <cuda_bf16.h>

#include <cmath>
#include <string>

#include "common/gpu_compare.h"
#include "kernels/cpu/norm.h"
#include "kernels/cuda/norm.h"

namespace parallm {
namespace {

using testing::DeviceBuffer;
using testing::download;
using testing::expect_close;
using testing::expect_same_bits;
using testing::random_normal;
using testing::rel_tol;
using testing::round_to;
using testing::upload;
using NormGpu = testing::GpuTest;

std::string shape(const char* what, int64_t N, int64_t C) {
  return std::string(what) + " N=" + std::to_string(N) + " C=" + std::to_string(C);
}

template <class T>
void check_layernorm(int64_t N, int64_t C, bool with_bias) {
  const float eps = 1e-5f, tol = rel_tol<T>();
  const size_t nc = static_cast<size_t>(N * C);
  const auto x = round_to<T>(random_normal(nc, 1, 0.5f, 2.f));
  const auto w = round_to<T>(random_normal(C, 2, 1.f, 0.3f));
  const auto b = round_to<T>(random_normal(C, 3, 0.f, 0.5f));
  const auto dout = round_to<T>(random_normal(nc, 4));
  const auto dinp0 = round_to<T>(random_normal(nc, 5));
  const auto dw0 = random_normal(C, 6), db0 = random_normal(C, 7);

  std::vector<float> out(nc), mean(N), rstd(N);
  cpu::layernorm_forward<float>(out.data(), mean.data(), rstd.data(), x.data(), w.data(),
                                with_bias ? b.data() : nullptr, N, C, eps);
  auto dx = upload<T>(x), dw = upload<T>(w), dbias = upload<T>(b);
  DeviceBuffer<T> dout_gpu(nc);
  DeviceBuffer<float> dmean(N), drstd(N);
  cuda::layernorm_forward<T>(dout_gpu.get(), dmean.get(), drstd.get(), dx.get(), dw.get(),
                             with_bias ? dbias.get() : nullptr, N, C, eps, nullptr);
  expect_close(download(dout_gpu), out, tol, tol, shape("layernorm out", N, C));
  expect_close(dmean.to_host(), mean, 1e-5f, 1e-5f, shape("layernorm mean", N, C));
  expect_close(drstd.to_host(), rstd, 1e-5f, 0.f, shape("layernorm rstd", N, C));

  // Backward accumulates onto dinp0 / dw0 / db0; the reference uses the CPU's stats.
  auto dinp_ref = dinp0, dw_ref = dw0, db_ref = db0;
  cpu::layernorm_backward<float>(dinp_ref.data(), dw_ref.data(), db_ref.data(), dout.data(),
                                 x.data(), w.data(), mean.data(), rstd.data(), N, C);
  auto g_dout = upload<T>(dout), g_dinp = upload<T>(dinp0);
  DeviceBuffer<float> g_dw(dw0), g_db(db0);
  DeviceBuffer<char> scratch(cuda::layernorm_backward_scratch_bytes(N, C));
  cuda::layernorm_backward<T>(g_dinp.get(), g_dw.get(), g_db.get(), g_dout.get(), dx.get(),
                              dw.get(), dmean.get(), drstd.get(), N, C, scratch.get(), nullptr);
  expect_close(download(g_dinp), dinp_ref, tol, tol, shape("layernorm dinp", N, C));
  // Weight sums run over N rows of O(1) terms: allow an error growing like sqrt(N).
  const float atol = tol * std::sqrt(static_cast<float>(N));
  expect_close(g_dw.to_host(), dw_ref, tol, atol, shape("layernorm dweight", N, C));
  expect_close(g_db.to_host(), db_ref, tol, atol, shape("layernorm dbias", N, C));
}

template <class T>
void check_rmsnorm(int64_t N, int64_t C) {
  const float eps = 1e-6f, tol = rel_tol<T>();
  const size_t nc = static_cast<size_t>(N * C);
  const auto x = round_to<T>(random_normal(nc, 11, 0.2f, 1.5f));
  const auto w = round_to<T>(random_normal(C, 12, 1.f, 0.3f));
  const auto dout = round_to<T>(random_normal(nc, 13));
  const auto dinp0 = round_to<T>(random_normal(nc, 14));
  const auto dw0 = random_normal(C, 15);

  std::vector<float> out(nc), rstd(N);
  cpu::rmsnorm_forward<float>(out.data(), rstd.data(), x.data(), w.data(), N, C, eps);
  auto dx = upload<T>(x), dw = upload<T>(w);
  DeviceBuffer<T> g_out(nc);
  DeviceBuffer<float> g_rstd(N);
  cuda::rmsnorm_forward<T>(g_out.get(), g_rstd.get(), dx.get(), dw.get(), N, C, eps, nullptr);
  expect_close(download(g_out), out, tol, tol, shape("rmsnorm out", N, C));
  expect_close(g_rstd.to_host(), rstd, 1e-5f, 0.f, shape("rmsnorm rstd", N, C));

  auto dinp_ref = dinp0, dw_ref = dw0;
  cpu::rmsnorm_backward<float>(dinp_ref.data(), dw_ref.data(), dout.data(), x.data(), w.data(),
                               rstd.data(), N, C);
  auto g_dout = upload<T>(dout), g_dinp = upload<T>(dinp0);
  DeviceBuffer<float> g_dw(dw0);
  DeviceBuffer<char> scratch(cuda::rmsnorm_backward_scratch_bytes(N, C));
  cuda::rmsnorm_backward<T>(g_dinp.get(), g_dw.get(), g_dout.get(), dx.get(), dw.get(),
                            g_rstd.get(), N, C, scratch.get(), nullptr);
  expect_close(download(g_dinp), dinp_ref, tol, tol, shape("rmsnorm dinp", N, C));
  expect_close(g_dw.to_host(), dw_ref, tol, tol * std::sqrt(static_cast<float>(N)),
               shape("rmsnorm dweight", N, C));
}

const int64_t kShapes[][2] = {{1, 7}, {3, 768}, {5, 33}, {257, 100}, {130, 1029}};

TEST_F(NormGpu, LayerNormFloatMatchesCpu) {
  for (const auto& s : kShapes) check_layernorm<float>(s[0], s[1], true);
  check_layernorm<float>(70, 64, false);
}

TEST_F(NormGpu, LayerNormBf16MatchesCpu) {
  for (const auto& s : kShapes) check_layernorm<__nv_bfloat16>(s[0], s[1], true);
  check_layernorm<__nv_bfloat16>(70, 64, false);
}

TEST_F(NormGpu, RmsNormFloatMatchesCpu) {
  for (const auto& s : kShapes) check_rmsnorm<float>(s[0], s[1]);
}

TEST_F(NormGpu, RmsNormBf16MatchesCpu) {
  for (const auto& s : kShapes) check_rmsnorm<__nv_bfloat16>(s[0], s[1]);
}

TEST_F(NormGpu, NullGradientsAreSkipped) {
  // dweight/dbias null: only dinp changes, no scratch needed.
  const int64_t N = 9, C = 40;
  const auto x = random_normal(N * C, 21), w = random_normal(C, 22, 1.f, 0.2f);
  const auto dout = random_normal(N * C, 23);
  DeviceBuffer<float> dx(x), dw(w), g_dout(dout), dinp(N * C), mean(N), rstd(N), out(N * C);
  cuda::layernorm_forward<float>(out.get(), mean.get(), rstd.get(), dx.get(), dw.get(), nullptr, N,
                                 C, 1e-5f, nullptr);
  cuda::layernorm_backward<float>(dinp.get(), nullptr, nullptr, g_dout.get(), dx.get(), dw.get(),
                                  mean.get(), rstd.get(), N, C, nullptr, nullptr);
  std::vector<float> m(N), r(N), o(N * C), ref(N * C, 0.f);
  cpu::layernorm_forward<float>(o.data(), m.data(), r.data(), x.data(), w.data(), nullptr, N, C,
                                1e-5);
  cpu::layernorm_backward<float>(ref.data(), nullptr, nullptr, dout.data(), x.data(), w.data(),
                                 m.data(), r.data(), N, C);
  expect_close(dinp.to_host(), ref, 1e-5f, 1e-5f, "layernorm dinp only");
}

TEST_F(NormGpu, BackwardIsBitwiseRepeatable) {
  const int64_t N = 1000, C = 768;
  const auto x = random_normal(N * C, 31), w = random_normal(C, 32, 1.f, 0.2f);
  const auto b = random_normal(C, 33), dout = random_normal(N * C, 34);
  DeviceBuffer<float> dx(x), dw(w), db(b), g_dout(dout), mean(N), rstd(N), out(N * C);
  cuda::layernorm_forward<float>(out.get(), mean.get(), rstd.get(), dx.get(), dw.get(), db.get(), N,
                                 C, 1e-5f, nullptr);
  DeviceBuffer<char> scratch(cuda::layernorm_backward_scratch_bytes(N, C));
  std::vector<float> first[3];
  for (int run = 0; run < 2; ++run) {
    DeviceBuffer<float> dinp(N * C), gw(C), gb(C);
    cuda::layernorm_backward<float>(dinp.get(), gw.get(), gb.get(), g_dout.get(), dx.get(),
                                    dw.get(), mean.get(), rstd.get(), N, C, scratch.get(), nullptr);
    std::vector<float> got[3] = {dinp.to_host(), gw.to_host(), gb.to_host()};
    if (run == 0) {
      for (int k = 0; k < 3; ++k) first[k] = got[k];
    } else {
      expect_same_bits(got[0], first[0], "layernorm dinp run 2");
      expect_same_bits(got[1], first[1], "layernorm dweight run 2");
      expect_same_bits(got[2], first[2], "layernorm dbias run 2");
    }
  }
  DeviceBuffer<char> rscratch(cuda::rmsnorm_backward_scratch_bytes(N, C));
  std::vector<float> rw_first;
  for (int run = 0; run < 2; ++run) {
    DeviceBuffer<float> dinp(N * C), gw(C);
    cuda::rmsnorm_backward<float>(dinp.get(), gw.get(), g_dout.get(), dx.get(), dw.get(),
                                  rstd.get(), N, C, rscratch.get(), nullptr);
    if (run == 0)
      rw_first = gw.to_host();
    else
      expect_same_bits(gw.to_host(), rw_first, "rmsnorm dweight run 2");
  }
}

}  // namespace
}  // namespace parallm
