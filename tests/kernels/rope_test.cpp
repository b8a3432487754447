// RoPE tests: rotate-half values against an HF-style reference computed in
// PyTorch, a naive per-element formula, finite differences for the backward,
// backward(forward(x)) == x, and float against double.
#include "kernels/cpu/rope.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "finite_diff.h"

namespace parallm::cpu {
namespace {

using test::randn;

constexpr int64_t B = 2, T = 3, H = 2, D = 10;
constexpr double kTheta = 10000.0;
const std::vector<int64_t> kPos = {4, 0, 1037};

TEST(Rope, MatchesHuggingFaceRotateHalf) {
  // HF apply_rotary_pos_emb on x = 1..6 at position 5 (float64 PyTorch).
  std::vector<double> x = {1, 2, 3, 4, 5, 6};
  const std::vector<double> want = {4.11935928411578,  0.796371890233204, 2.93519415139368,
                                    0.175724467189767, 5.32595454472214,  6.03196777955787};
  const int64_t pos = 5;
  rope_forward(x.data(), &pos, 1, 1, 1, 6, kTheta);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], want[i], 1e-12) << i;
}

TEST(Rope, ForwardMatchesNaiveFormula) {
  auto x = randn(B * T * H * D, 1, "x");
  std::vector<double> y(x);
  rope_forward(y.data(), kPos.data(), B, T, H, D, kTheta);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h) {
        const int64_t base = ((b * T + t) * H + h) * D;
        for (int64_t i = 0; i < D / 2; ++i) {
          const double a = kPos[t] * std::pow(kTheta, -2.0 * i / D);
          const double lo = x[base + i], hi = x[base + i + D / 2];
          EXPECT_NEAR(y[base + i], lo * std::cos(a) - hi * std::sin(a), 1e-12);
          EXPECT_NEAR(y[base + i + D / 2], hi * std::cos(a) + lo * std::sin(a), 1e-12);
        }
      }
}

TEST(Rope, BackwardMatchesFiniteDifferencesAndInvertsForward) {
  auto x = randn(B * T * H * D, 2, "x"), r = randn(B * T * H * D, 2, "r");
  std::vector<double> y;
  auto loss = [&] {
    y = x;
    rope_forward(y.data(), kPos.data(), B, T, H, D, kTheta);
    return test::dot(y, r);
  };
  std::vector<double> dx(r);
  rope_backward(dx.data(), kPos.data(), B, T, H, D, kTheta);
  test::expect_grad_matches(loss, x, dx, "rope dx");

  loss();
  rope_backward(y.data(), kPos.data(), B, T, H, D, kTheta);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 1e-13);
}

TEST(Rope, FloatMatchesDoubleAndOddDimThrows) {
  auto x = randn(B * T * H * D, 3, "x");
  const std::vector<int64_t> pos = {100000, 7, 65535};  // large positions: angles in double
  std::vector<double> y(x);
  rope_forward(y.data(), pos.data(), B, T, H, D, kTheta);
  auto fy = test::cast_vec<float>(x);
  rope_forward(fy.data(), pos.data(), B, T, H, D, kTheta);
  test::expect_all_near(fy, y, 1e-5, "float rope");
  EXPECT_THROW(rope_forward(y.data(), pos.data(), 1, 1, 1, 5, kTheta), Error);
}

}  // namespace
}  // namespace parallm::cpu
