// Cross-entropy piece tests: the pieces compose to the log-softmax loss, vocab
// shards combined the way the vocab-parallel loss combines them match the
// unsharded result, and the in-place gradient matches finite differences of
// sum_i row_scale[i] * loss_i (ignored targets contribute nothing).
#include "kernels/cpu/cross_entropy.h"

#include <gtest/gtest.h>

#include <cmath>

#include "finite_diff.h"

namespace parallm::cpu {
namespace {

using test::randn;

constexpr int64_t N = 7, V = 13;
const std::vector<int32_t> kTargets = {0, 12, 5, -1, 7, 3, 12};

// Per-row loss lse - logit[target] by the pieces (one shard = whole vocab).
template <class T>
std::vector<double> ce_losses(const std::vector<T>& logits) {
  std::vector<T> mx(N), se(N), tl(N);
  ce_row_max(mx.data(), logits.data(), N, V);
  ce_row_sumexp(se.data(), logits.data(), mx.data(), N, V);
  ce_target_logit(tl.data(), logits.data(), kTargets.data(), N, V, 0);
  std::vector<double> loss(N);
  for (int64_t i = 0; i < N; ++i)
    loss[i] = kTargets[i] < 0 ? 0.0 : double(mx[i]) + std::log(double(se[i])) - double(tl[i]);
  return loss;
}

TEST(CrossEntropy, PiecesComposeToLogSoftmaxLoss) {
  auto logits = randn(N * V, 1, "logits", 5.0, 40.0);  // large offset: max subtraction matters
  auto loss = ce_losses(logits);
  for (int64_t i = 0; i < N; ++i) {
    if (kTargets[i] < 0) continue;
    double s = 0;
    for (int64_t j = 0; j < V; ++j) s += std::exp(logits[i * V + j]);
    EXPECT_NEAR(loss[i], -(logits[i * V + kTargets[i]] - std::log(s)), 1e-12) << i;
  }
  auto floss = ce_losses(test::cast_vec<float>(logits));
  for (int64_t i = 0; i < N; ++i) EXPECT_NEAR(floss[i], loss[i], 1e-5 * std::max(1.0, loss[i]));
}

TEST(CrossEntropy, VocabShardsCombineToFullLoss) {
  auto logits = randn(N * V, 2, "logits", 3.0);
  auto full = ce_losses(logits);
  // Two shards [0, 5) and [5, 13), each a contiguous (N, Vs) block.
  const int64_t vb[2] = {0, 5}, vs[2] = {5, 8};
  std::vector<double> mx_s[2], se_s[2], tl_s[2];
  for (int s = 0; s < 2; ++s) {
    std::vector<double> part(N * vs[s]);
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < vs[s]; ++j) part[i * vs[s] + j] = logits[i * V + vb[s] + j];
    mx_s[s].resize(N), se_s[s].resize(N), tl_s[s].resize(N);
    ce_row_max(mx_s[s].data(), part.data(), N, vs[s]);
    ce_row_sumexp(se_s[s].data(), part.data(), mx_s[s].data(), N, vs[s]);
    ce_target_logit(tl_s[s].data(), part.data(), kTargets.data(), N, vs[s], vb[s]);
  }
  for (int64_t i = 0; i < N; ++i) {
    if (kTargets[i] < 0) continue;
    const double mx = std::max(mx_s[0][i], mx_s[1][i]);  // all-reduce max
    const double se =
        se_s[0][i] * std::exp(mx_s[0][i] - mx) + se_s[1][i] * std::exp(mx_s[1][i] - mx);
    EXPECT_NEAR(mx + std::log(se) - (tl_s[0][i] + tl_s[1][i]), full[i], 1e-12) << i;
  }
}

TEST(CrossEntropy, SoftmaxGradMatchesFiniteDifferences) {
  auto logits = randn(N * V, 3, "logits", 2.0), scale = randn(N, 3, "scale", 0.5, 1.0);
  auto loss = [&] {
    auto l = ce_losses(logits);
    double s = 0;
    for (int64_t i = 0; i < N; ++i) s += l[i] * scale[i];
    return s;
  };
  std::vector<double> mx(N), se(N), lse(N), grad(logits);
  ce_row_max(mx.data(), logits.data(), N, V);
  ce_row_sumexp(se.data(), logits.data(), mx.data(), N, V);
  for (int64_t i = 0; i < N; ++i) lse[i] = mx[i] + std::log(se[i]);
  ce_softmax_grad_inplace(grad.data(), lse.data(), kTargets.data(), scale.data(), N, V, 0);
  test::expect_grad_matches(loss, logits, grad, "dlogits");
  for (int64_t j = 0; j < V; ++j) EXPECT_EQ(grad[3 * V + j], 0.0) << "ignored row";

  // A shard [6, 13) gets exactly its slice of the full gradient.
  const int64_t vb = 6, vs = V - vb;
  std::vector<double> part(N * vs);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < vs; ++j) part[i * vs + j] = logits[i * V + vb + j];
  ce_softmax_grad_inplace(part.data(), lse.data(), kTargets.data(), scale.data(), N, vs, vb);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < vs; ++j) EXPECT_NEAR(part[i * vs + j], grad[i * V + vb + j], 1e-15);
}

TEST(CrossEntropy, FloatSoftmaxGradMatchesDouble) {
  auto logits = randn(N * V, 4, "logits", 4.0);
  std::vector<double> lse(N, 0.0), scale(N, 0.25), grad(logits);
  for (int64_t i = 0; i < N; ++i) {
    double s = 0;
    for (int64_t j = 0; j < V; ++j) s += std::exp(logits[i * V + j]);
    lse[i] = std::log(s);
  }
  ce_softmax_grad_inplace(grad.data(), lse.data(), kTargets.data(), scale.data(), N, V, 0);
  auto fg = test::cast_vec<float>(logits), flse = test::cast_vec<float>(lse),
       fscale = test::cast_vec<float>(scale);
  ce_softmax_grad_inplace(fg.data(), flse.data(), kTargets.data(), fscale.data(), N, V, 0);
  test::expect_all_near(fg, grad, 1e-5, "float softmax grad");
}

}  // namespace
}  // namespace parallm::cpu
