// Optimizer kernel tests: AdamW against two steps of PyTorch's torch.optim.AdamW
// and against the update written out by hand, plus sum_squares (exact and
// thread-count independent), has_nonfinite and scale_inplace.
#include "kernels/cpu/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "finite_diff.h"

namespace parallm::cpu {
namespace {

TEST(AdamW, TwoStepsMatchPyTorch) {
  // torch.optim.AdamW([p], lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1), float32.
  std::vector<float> p = {0.5f, -1.0f, 2.0f}, m(3, 0.0f), v(3, 0.0f);
  const std::vector<float> g1 = {0.1f, -0.2f, 0.3f}, g2 = {-0.05f, 0.4f, 0.3f};
  AdamWParams h{.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};
  h.step = 1;
  adamw_step(p.data(), g1.data(), m.data(), v.data(), 3, h);
  const std::vector<double> p1 = {0.489500016, -0.989000022, 1.98800004};
  test::expect_all_near(p, p1, 1e-7, "step 1");
  h.step = 2;
  adamw_step(p.data(), g2.data(), m.data(), v.data(), 3, h);
  test::expect_all_near(p, {0.486326814, -0.9916448, 1.97601211}, 1e-7, "step 2");
  test::expect_all_near(m, {0.00400000019, 0.0219999999, 0.0570000038}, 1e-7, "exp_avg");
  test::expect_all_near(v, {0.000600000028, 0.00990000088, 0.00877500046}, 1e-7, "exp_avg_sq");
}

TEST(AdamW, MatchesHandComputedUpdate) {
  const int64_t n = 37;
  auto p0 = test::randn(n, 1, "p"), g1 = test::randn(n, 1, "g1"), g2 = test::randn(n, 1, "g2");
  const double lr = 3e-3, b1 = 0.8, b2 = 0.99, eps = 1e-6, wd = 0.05;
  std::vector<double> want(p0), m(n, 0.0), v(n, 0.0);
  for (int t = 1; t <= 2; ++t)
    for (int64_t i = 0; i < n; ++i) {
      const double g = (t == 1 ? g1 : g2)[i];
      want[i] *= 1 - lr * wd;
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const double mhat = m[i] / (1 - std::pow(b1, t)), vhat = v[i] / (1 - std::pow(b2, t));
      want[i] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
  auto p = test::cast_vec<float>(p0), fg1 = test::cast_vec<float>(g1),
       fg2 = test::cast_vec<float>(g2);
  std::vector<float> fm(n, 0.0f), fv(n, 0.0f);
  AdamWParams h{.lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .weight_decay = wd, .step = 1};
  adamw_step(p.data(), fg1.data(), fm.data(), fv.data(), n, h);
  h.step = 2;
  adamw_step(p.data(), fg2.data(), fm.data(), fv.data(), n, h);
  test::expect_all_near(p, want, 1e-6, "adamw");
}

TEST(GradArithmetic, SumSquaresScaleAndNonfinite) {
  const int64_t n = 200003;  // several chunks plus a ragged tail
  auto x = test::randn<float>(n, 2, "x");
  double want = 0;
  for (float f : x) want += double(f) * double(f);
  double a = 0, b = 0;
  test::with_threads(1, [&] { a = sum_squares(x.data(), n); });
  test::with_threads(3, [&] { b = sum_squares(x.data(), n); });
  EXPECT_NEAR(a, want, 1e-9 * want);
  EXPECT_EQ(a, b);

  std::vector<float> y(x);
  scale_inplace(y.data(), n, 0.5f);
  for (int64_t i = 0; i < n; i += 1001) EXPECT_EQ(y[i], 0.5f * x[i]);

  EXPECT_FALSE(has_nonfinite(x.data(), n));
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()})
    for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
      std::vector<float> z(x);
      z[at] = bad;
      EXPECT_TRUE(has_nonfinite(z.data(), n)) << bad << " at " << at;
    }
  EXPECT_FALSE(has_nonfinite(x.data(), 0));
  EXPECT_EQ(sum_squares(x.data(), 0), 0.0);
}

}  // namespace
}  // namespace parallm::cpu
