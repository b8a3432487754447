// Cross-entropy on the GPU against the CPU pieces: row max, sum of
// exponentials, target logit and in-place softmax gradient on a vocab shard
// (targets inside, outside and negative), and the fused loss-and-gradient
// against the CPU pieces composed, fp32 and bf16, V = 7 and GPT-2's 50257
// (rows not 16-byte aligned) and 50304 (aligned), with the logits also placed
// off 16-byte boundaries so that rows start and end with scalar elements.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/gpu_compare.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cuda/cross_entropy.h"

namespace parallm {
namespace {

using testing::DeviceBuffer;
using testing::download;
using testing::expect_close;
using testing::random_normal;
using testing::rel_tol;
using testing::round_to;
using testing::to_storage;
using testing::upload;
using CrossEntropyGpu = testing::GpuTest;

// Row i's target: cycles through in-shard, out-of-shard and ignored (-1).
std::vector<int32_t> make_targets(int64_t n, int64_t V, int64_t vocab_begin) {
  std::vector<int32_t> t(n);
  for (int64_t i = 0; i < n; ++i) {
    switch (i % 4) {
      case 0:
        t[i] = static_cast<int32_t>(vocab_begin + (i * 7919) % V);
        break;
      case 1:
        t[i] = static_cast<int32_t>(vocab_begin + V - 1);
        break;
      case 2:
        t[i] = static_cast<int32_t>(vocab_begin + V + 3);
        break;  // another shard
      default:
        t[i] = -1;
    }
  }
  return t;
}

// The gradient check: relative everywhere, except that a target entry
// (p - 1) * scale carries the rounding of p near 1, i.e. rtol * |scale| absolute.
void expect_grad_close(const std::vector<float>& got, const std::vector<float>& ref,
                       const std::vector<int32_t>& targets, const std::vector<float>& scale,
                       int64_t V, int64_t vocab_begin, float rtol, const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  const int64_t n = static_cast<int64_t>(targets.size());
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < V; ++j) {
      const size_t k = static_cast<size_t>(i * V + j);
      const bool target = targets[i] >= 0 && targets[i] - vocab_begin == j;
      const float tol = rtol * std::fabs(ref[k]) + (target ? rtol * std::fabs(scale[i]) : 1e-12f);
      if (std::fabs(got[k] - ref[k]) > tol && bad++ == 0)
        ADD_FAILURE() << what << ": row " << i << " column " << j << (target ? " (target)" : "")
                      << ": got " << got[k] << ", want " << ref[k];
    }
  EXPECT_EQ(bad, 0) << what << ": elements off";
}

template <class T>
void check_pieces(int64_t n, int64_t V, int64_t vocab_begin) {
  const std::string tag = " n=" + std::to_string(n) + " V=" + std::to_string(V);
  const float tol = rel_tol<T>();
  const auto logits = round_to<T>(random_normal(n * V, static_cast<uint32_t>(V), 0.f, 3.f));
  const auto targets = make_targets(n, V, vocab_begin);
  const auto scale = random_normal(n, 5, 1.f, 0.3f);
  std::vector<float> mx(n), se(n), tl(n), lse(n);
  cpu::ce_row_max<float>(mx.data(), logits.data(), n, V);
  cpu::ce_row_sumexp<float>(se.data(), logits.data(), mx.data(), n, V);
  cpu::ce_target_logit<float>(tl.data(), logits.data(), targets.data(), n, V, vocab_begin);
  for (int64_t i = 0; i < n; ++i) lse[i] = mx[i] + std::log(se[i]);
  std::vector<float> grad = logits;
  cpu::ce_softmax_grad_inplace<float>(grad.data(), lse.data(), targets.data(), scale.data(), n, V,
                                      vocab_begin);

  auto gl = upload<T>(logits);
  DeviceBuffer<int32_t> gt(targets);
  DeviceBuffer<float> gmx(n), gse(n), gtl(n), glse(lse), gscale(scale);
  cuda::ce_row_max<T>(gmx.get(), gl.get(), n, V, nullptr);
  cuda::ce_row_sumexp<T>(gse.get(), gl.get(), gmx.get(), n, V, nullptr);
  cuda::ce_target_logit<T>(gtl.get(), gl.get(), gt.get(), n, V, vocab_begin, nullptr);
  expect_close(gmx.to_host(), mx, 0.f, 0.f, "ce_row_max" + tag);  // a max is exact
  expect_close(gse.to_host(), se, 1e-5f, 0.f, "ce_row_sumexp" + tag);
  expect_close(gtl.to_host(), tl, 0.f, 0.f, "ce_target_logit" + tag);
  cuda::ce_softmax_grad_inplace<T>(gl.get(), glse.get(), gt.get(), gscale.get(), n, V, vocab_begin,
                                   nullptr);
  expect_grad_close(download(gl), grad, targets, scale, V, vocab_begin, tol,
                    "ce_softmax_grad_inplace" + tag);

  auto gl2 = upload<T>(logits);
  std::vector<float> grad1 = logits;
  cpu::ce_softmax_grad_inplace<float>(grad1.data(), lse.data(), targets.data(), nullptr, n, V,
                                      vocab_begin);
  cuda::ce_softmax_grad_inplace<T>(gl2.get(), glse.get(), gt.get(), nullptr, n, V, vocab_begin,
                                   nullptr);
  expect_grad_close(download(gl2), grad1, targets, std::vector<float>(n, 1.f), V, vocab_begin, tol,
                    "ce_softmax_grad_inplace, no scale" + tag);
}

// The fused kernel on logits placed `offset` elements into their buffer.
template <class T>
void check_fused(int64_t n, int64_t V, int64_t offset = 0) {
  const std::string tag =
      " n=" + std::to_string(n) + " V=" + std::to_string(V) + " offset=" + std::to_string(offset);
  const float tol = rel_tol<T>(), row_scale = 1.f / 3.f;
  const auto logits = round_to<T>(random_normal(n * V, static_cast<uint32_t>(V + 1), 1.f, 2.5f));
  auto targets = make_targets(n, V, 0);
  for (auto& t : targets)
    if (t >= V) t = 0;  // the fused kernel sees the whole vocabulary
  std::vector<float> mx(n), se(n), tl(n), lse(n), loss(n), scale(n, row_scale);
  cpu::ce_row_max<float>(mx.data(), logits.data(), n, V);
  cpu::ce_row_sumexp<float>(se.data(), logits.data(), mx.data(), n, V);
  cpu::ce_target_logit<float>(tl.data(), logits.data(), targets.data(), n, V, 0);
  for (int64_t i = 0; i < n; ++i) {
    lse[i] = mx[i] + std::log(se[i]);
    loss[i] = targets[i] < 0 ? 0.f : lse[i] - tl[i];
  }
  std::vector<float> grad = logits;
  cpu::ce_softmax_grad_inplace<float>(grad.data(), lse.data(), targets.data(), scale.data(), n, V,
                                      0);
  // Sentinels (7) before and after the rows must stay untouched.
  const int64_t kAfter = 16;
  std::vector<float> padded(static_cast<size_t>(offset), 7.f);
  padded.insert(padded.end(), logits.begin(), logits.end());
  padded.insert(padded.end(), kAfter, 7.f);
  DeviceBuffer<T> gpad(to_storage<T>(padded));
  DeviceBuffer<int32_t> gt(targets);
  DeviceBuffer<float> gloss(n);
  cuda::ce_loss_grad_inplace<T>(gpad.get() + offset, gloss.get(), gt.get(), row_scale, n, V,
                                nullptr);
  const auto all = download(gpad);
  for (int64_t k = 0; k < offset; ++k) EXPECT_EQ(all[k], 7.f) << "sentinel " << k << tag;
  for (int64_t k = offset + n * V; k < offset + n * V + kAfter; ++k)
    EXPECT_EQ(all[k], 7.f) << "sentinel " << k << tag;
  const std::vector<float> got(all.begin() + offset, all.begin() + offset + n * V);
  // Loss = lse - logit: its error is that of lse, so relative to lse's size.
  float lse_scale = 0.f;
  for (float v : lse) lse_scale = std::max(lse_scale, std::fabs(v));
  expect_close(gloss.to_host(), loss, 1e-5f, 1e-5f * lse_scale, "ce_loss_grad_inplace loss" + tag);
  expect_grad_close(got, grad, targets, scale, V, 0, tol, "ce_loss_grad_inplace grad" + tag);
}

TEST_F(CrossEntropyGpu, PiecesMatchCpuFloat) {
  check_pieces<float>(5, 7, 0);
  check_pieces<float>(8, 7, 100);
  check_pieces<float>(4, 50257, 50257);
}

TEST_F(CrossEntropyGpu, PiecesMatchCpuBf16) {
  check_pieces<__nv_bfloat16>(5, 7, 0);
  check_pieces<__nv_bfloat16>(4, 50257, 1000);
}

TEST_F(CrossEntropyGpu, FusedMatchesCpuPiecesFloat) {
  check_fused<float>(1, 7);
  check_fused<float>(9, 1000);
  check_fused<float>(6, 50257);
  check_fused<float>(3, 50304);
}

TEST_F(CrossEntropyGpu, FusedMatchesCpuPiecesBf16) {
  check_fused<__nv_bfloat16>(1, 7);
  check_fused<__nv_bfloat16>(6, 50257);
}

TEST_F(CrossEntropyGpu, FusedMatchesCpuPiecesOffAlignment) {
  // Offsets 1 and 3 put every row's start (and end) off a 16-byte boundary.
  for (int64_t offset : {int64_t{1}, int64_t{3}}) {
    check_fused<float>(5, 7, offset);
    check_fused<float>(4, 1000, offset);
    check_fused<float>(3, 50304, offset);
    check_fused<__nv_bfloat16>(5, 7, offset);
    check_fused<__nv_bfloat16>(4, 1003, offset);
    check_fused<__nv_bfloat16>(3, 50257, offset);
    check_fused<__nv_bfloat16>(3, 50304, offset);
  }
  check_fused<__nv_bfloat16>(4, 50304);
  check_fused<float>(2, 1);
  check_fused<__nv_bfloat16>(2, 1, 1);
}

TEST_F(CrossEntropyGpu, FusedHandlesMinusInfinityLogits) {
  // A row whose first logits are -inf (masked vocabulary) still sums correctly.
  const int64_t V = 1030;
  auto logits = random_normal(V, 77);
  for (int64_t j = 0; j < 600; ++j) logits[j] = -INFINITY;
  const std::vector<int32_t> targets = {700};
  double s = 0;
  for (int64_t j = 600; j < V; ++j) s += std::exp(static_cast<double>(logits[j]));
  const float lse = static_cast<float>(std::log(s));
  DeviceBuffer<float> gl(logits), gloss(1);
  DeviceBuffer<int32_t> gt(targets);
  cuda::ce_loss_grad_inplace<float>(gl.get(), gloss.get(), gt.get(), 1.f, 1, V, nullptr);
  expect_close(gloss.to_host(), {lse - logits[700]}, 1e-5f, 1e-5f, "loss with -inf logits");
  const auto g = gl.to_host();
  for (int64_t j = 0; j < 600; ++j) ASSERT_EQ(g[j], 0.f) << j;
  for (int64_t j = 600; j < V; ++j) ASSERT_TRUE(std::isfinite(g[j])) << j;
}

TEST_F(CrossEntropyGpu, FusedPropagatesNaN) {
  // A NaN logit must surface in the loss (the Inf/NaN check reads it), wherever it sits.
  const int64_t V = 700;
  for (int64_t at : {int64_t{0}, int64_t{5}, V - 1}) {
    auto logits = random_normal(V, 78);
    logits[at] = std::numeric_limits<float>::quiet_NaN();
    DeviceBuffer<float> gl(logits), gloss(1);
    DeviceBuffer<int32_t> gt(std::vector<int32_t>{3});
    cuda::ce_loss_grad_inplace<float>(gl.get(), gloss.get(), gt.get(), 1.f, 1, V, nullptr);
    EXPECT_TRUE(std::isnan(gloss.to_host()[0])) << "NaN at " << at;
  }
  // The same in bf16 with the row off alignment (NaNs in the scalar head and
  // tail and in packs), and beside logits that are all -inf.
  for (bool rest_minus_inf : {false, true})
    for (int64_t at : {int64_t{0}, int64_t{2}, int64_t{40}, V - 1}) {
      auto logits = random_normal(V + 1, 79);
      if (rest_minus_inf) std::fill(logits.begin(), logits.end(), -INFINITY);
      logits[1 + at] = std::numeric_limits<float>::quiet_NaN();
      auto gl = upload<__nv_bfloat16>(logits);
      DeviceBuffer<float> gloss(1);
      DeviceBuffer<int32_t> gt(std::vector<int32_t>{3});
      cuda::ce_loss_grad_inplace<__nv_bfloat16>(gl.get() + 1, gloss.get(), gt.get(), 1.f, 1, V,
                                                nullptr);
      EXPECT_TRUE(std::isnan(gloss.to_host()[0]))
          << "bf16 NaN at " << at << (rest_minus_inf ? " among -inf" : "");
    }
}

}  // namespace
}  // namespace parallm
