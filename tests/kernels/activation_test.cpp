// GELU / SwiGLU / GeGLU / vector-update tests: GELU against PyTorch's
// gelu(approximate='tanh') values, GeGLU against a naive formula, float
// against double, finite differences for the backward passes, and the SIMD
// float exp against libm.
#include "kernels/cpu/activation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "finite_diff.h"
#include "kernels/cpu/vec_math.h"

namespace parallm::cpu {
namespace {

using test::randn;

constexpr int64_t kN = 91;

TEST(VecMath, ExpF32MatchesLibm) {
  double worst = 0;
  for (double x = -87.0; x <= 88.0; x += 0.001) {
    const float xf = static_cast<float>(x);
    const double want = std::exp(static_cast<double>(xf));
    worst = std::max(worst, std::abs(exp_f32(xf) - want) / want);
  }
  EXPECT_LT(worst, 3e-7);
  EXPECT_EQ(exp_f32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(exp_f32(-100.0f), 0.0f);
  EXPECT_EQ(exp_f32(0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_NEAR(tanh_t<float>(0.3f), std::tanh(0.3), 2e-7);
  EXPECT_EQ(tanh_t<float>(50.0f), 1.0f);
  EXPECT_EQ(tanh_t<float>(-50.0f), -1.0f);
}

TEST(Gelu, ForwardMatchesPyTorchTanhApproximation) {
  // torch.nn.functional.gelu(x, approximate='tanh') in float64.
  const std::vector<double> x = {-3.0, -1.0, -0.5, 0.0, 0.3, 1.0, 2.5};
  const std::vector<double> want = {
      -0.00363739208177299, -0.158808009391723, -0.154285990174856, 0.0,
      0.185370923542759,    0.841191990608277,  2.48491573391};
  std::vector<double> out(x.size());
  gelu_forward(out.data(), x.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(out[i], want[i], 1e-12) << x[i];
}

TEST(Gelu, FloatMatchesDouble) {
  auto x = randn(4096, 1, "x", 4.0);
  std::vector<double> out(x.size()), dx(x.size(), 0.0), d(x.size(), 1.0);
  gelu_forward(out.data(), x.data(), static_cast<int64_t>(x.size()));
  gelu_backward(dx.data(), x.data(), d.data(), static_cast<int64_t>(x.size()));
  auto fx = test::cast_vec<float>(x);
  std::vector<float> fout(x.size()), fdx(x.size(), 0.0f), fd(x.size(), 1.0f);
  gelu_forward(fout.data(), fx.data(), static_cast<int64_t>(x.size()));
  gelu_backward(fdx.data(), fx.data(), fd.data(), static_cast<int64_t>(x.size()));
  test::expect_all_near(fout, out, 1e-5, "float gelu");
  test::expect_all_near(fdx, dx, 1e-5, "float gelu grad");
}

TEST(Gelu, BackwardMatchesFiniteDifferencesAndAccumulates) {
  auto x = randn(kN, 2, "x", 2.0), r = randn(kN, 2, "r");
  std::vector<double> out(kN);
  auto loss = [&] {
    gelu_forward(out.data(), x.data(), kN);
    return test::dot(out, r);
  };
  std::vector<double> dx(kN, 0.0), dx2(kN, 0.5);
  gelu_backward(dx.data(), x.data(), r.data(), kN);
  gelu_backward(dx2.data(), x.data(), r.data(), kN);
  test::expect_grad_matches(loss, x, dx, "gelu dinp");
  for (int64_t i = 0; i < kN; ++i) EXPECT_NEAR(dx2[i], dx[i] + 0.5, 1e-12);
}

TEST(SwiGlu, ForwardAndBackward) {
  auto g = randn(kN, 3, "g", 3.0), u = randn(kN, 3, "u"), r = randn(kN, 3, "r");
  std::vector<double> out(kN);
  auto loss = [&] {
    swiglu_forward(out.data(), g.data(), u.data(), kN);
    return test::dot(out, r);
  };
  loss();
  for (int64_t i = 0; i < kN; ++i)
    EXPECT_NEAR(out[i], g[i] / (1.0 + std::exp(-g[i])) * u[i], 1e-13);
  std::vector<double> dg(kN, 0.0), du(kN, 0.0);
  swiglu_backward(dg.data(), du.data(), r.data(), g.data(), u.data(), kN);
  test::expect_grad_matches(loss, g, dg, "dgate");
  test::expect_grad_matches(loss, u, du, "dup");

  std::vector<double> dg2(kN, 1.0), du2(kN, 2.0);
  swiglu_backward(dg2.data(), du2.data(), r.data(), g.data(), u.data(), kN);
  for (int64_t i = 0; i < kN; ++i) {
    EXPECT_NEAR(dg2[i], dg[i] + 1.0, 1e-12);
    EXPECT_NEAR(du2[i], du[i] + 2.0, 1e-12);
  }
  auto fg = test::cast_vec<float>(g), fu = test::cast_vec<float>(u);
  std::vector<float> fout(kN);
  swiglu_forward(fout.data(), fg.data(), fu.data(), kN);
  test::expect_all_near(fout, out, 1e-5, "float swiglu");
}

TEST(GeGlu, ForwardMatchesNaiveFormulaAndBackwardFiniteDifferences) {
  auto g = randn(kN, 7, "g", 3.0), u = randn(kN, 7, "u"), r = randn(kN, 7, "r");
  std::vector<double> out(kN);
  auto loss = [&] {
    geglu_forward(out.data(), g.data(), u.data(), kN);
    return test::dot(out, r);
  };
  loss();
  const double k = std::sqrt(2.0 / std::numbers::pi);
  for (int64_t i = 0; i < kN; ++i) {
    const double x = g[i];
    const double gelu = 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    EXPECT_NEAR(out[i], gelu * u[i], 1e-13) << i;
  }
  std::vector<double> dg(kN, 0.0), du(kN, 0.0);
  geglu_backward(dg.data(), du.data(), r.data(), g.data(), u.data(), kN);
  test::expect_grad_matches(loss, g, dg, "dgate");
  test::expect_grad_matches(loss, u, du, "dup");

  std::vector<double> dg2(kN, 1.0), du2(kN, 2.0);  // backward accumulates
  geglu_backward(dg2.data(), du2.data(), r.data(), g.data(), u.data(), kN);
  for (int64_t i = 0; i < kN; ++i) {
    EXPECT_NEAR(dg2[i], dg[i] + 1.0, 1e-12);
    EXPECT_NEAR(du2[i], du[i] + 2.0, 1e-12);
  }
}

TEST(GeGlu, FloatMatchesDoubleAndGeluTimesUp) {
  const int64_t n = 40000;  // the threaded path
  auto g = randn(n, 8, "g", 3.0), u = randn(n, 8, "u"), d = randn(n, 8, "d");
  std::vector<double> out(n), dg(n, 0.0), du(n, 0.0);
  geglu_forward(out.data(), g.data(), u.data(), n);
  geglu_backward(dg.data(), du.data(), d.data(), g.data(), u.data(), n);
  auto fg = test::cast_vec<float>(g), fu = test::cast_vec<float>(u), fd = test::cast_vec<float>(d);
  std::vector<float> fout(n), fdg(n, 0.0f), fdu(n, 0.0f), gelu(n);
  geglu_forward(fout.data(), fg.data(), fu.data(), n);
  geglu_backward(fdg.data(), fdu.data(), fd.data(), fg.data(), fu.data(), n);
  test::expect_all_near(fout, out, 1e-5, "float geglu");
  test::expect_all_near(fdg, dg, 1e-5, "float geglu dgate");
  test::expect_all_near(fdu, du, 1e-5, "float geglu dup");
  // The gate's GELU is GPT-2's, bit for bit.
  gelu_forward(gelu.data(), fg.data(), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(fout[i], gelu[i] * fu[i]) << i;
}

TEST(VectorOps, AddInplaceAndAxpy) {
  auto x = randn(kN, 4, "x"), y = randn(kN, 4, "y");
  std::vector<double> a(y), b(y);
  add_inplace(a.data(), x.data(), kN);
  axpy(b.data(), -2.5, x.data(), kN);
  for (int64_t i = 0; i < kN; ++i) {
    EXPECT_DOUBLE_EQ(a[i], y[i] + x[i]);
    EXPECT_DOUBLE_EQ(b[i], y[i] - 2.5 * x[i]);
  }
}

}  // namespace
}  // namespace parallm::cpu
