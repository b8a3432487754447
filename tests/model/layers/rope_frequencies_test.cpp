// RopeFrequencies against the published formulas, each computed here in
// another form than the implementation's (rotations per original context
// for llama3, the NTK stretch as a second power for dynamic), at several
// head dims; and against tables transformers 4.44 printed (float32, so to
// float32 rounding). Plus the context limit each scaling allows.
#include "model/layers/rope_frequencies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "base/error.h"

namespace parallm {
namespace {

ModelConfig rope_model(int64_t D, double theta, int64_t max_positions, RopeScaling r) {
  ModelConfig c;
  c.arch = Arch::LLaMA;
  c.n_heads = c.n_kv_heads = 2;
  c.head_dim = D;
  c.hidden = 2 * D;
  c.max_positions = max_positions;
  c.rope_theta = theta;
  c.rope_scaling = r;
  return c;
}

double plain(double theta, int64_t i, int64_t D) {
  return 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(D));
}

void expect_rel_near(const std::vector<double>& got, const std::vector<double>& want, double rel,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * std::abs(want[i])) << what << " i=" << i;
}

TEST(RopeFrequencies, UnscaledIsThePlainTableAtEveryLength) {
  for (int64_t D : {8, 12, 64, 128}) {
    const RopeFrequencies f(rope_model(D, 5e5, 64, {}));
    EXPECT_FALSE(f.depends_on_length());
    std::vector<double> want;
    for (int64_t i = 0; i < D / 2; ++i) want.push_back(plain(5e5, i, D));
    expect_rel_near(f.at_length(1), want, 1e-14, "plain D=" + std::to_string(D));
    EXPECT_EQ(f.at_length(1), f.at_length(100000));  // no length dependence
  }
}

TEST(RopeFrequencies, LinearDividesEveryFrequencyByTheFactor) {
  for (int64_t D : {8, 16, 64}) {
    const RopeScaling r{.type = RopeScalingType::Linear, .factor = 4.0};
    const RopeFrequencies f(rope_model(D, 1e4, 64, r));
    std::vector<double> want;
    for (int64_t i = 0; i < D / 2; ++i) want.push_back(plain(1e4, i, D) / 4.0);
    expect_rel_near(f.at_length(7), want, 1e-14, "linear D=" + std::to_string(D));
    EXPECT_EQ(f.at_length(7), f.at_length(1000));
  }
  // transformers 4.44 _compute_linear_scaling_rope_parameters, D 16, factor 4.
  const RopeFrequencies f(
      rope_model(16, 1e4, 64, {.type = RopeScalingType::Linear, .factor = 4.0}));
  expect_rel_near(f.at_length(1),
                  {0.25, 0.079056941, 0.0250000004, 0.00790569466, 0.00249999994, 0.000790569466,
                   0.000250000012, 7.90569466e-05},
                  3e-6, "transformers linear");
}

// Llama 3.1's rule in terms of r = original context / wavelength (how often
// a pair turns within the original context): r < low: divided by factor;
// r > high: kept; between: a blend weighted by (r - low) / (high - low).
std::vector<double> llama3_expected(int64_t D, double theta, const RopeScaling& s) {
  std::vector<double> out;
  for (int64_t i = 0; i < D / 2; ++i) {
    const double f = plain(theta, i, D);
    const double turns = static_cast<double>(s.original_max_positions) * f / (2 * std::numbers::pi);
    if (turns < s.low_freq_factor) {
      out.push_back(f / s.factor);
    } else if (turns > s.high_freq_factor) {
      out.push_back(f);
    } else {
      const double w = (turns - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      out.push_back(f * (w + (1 - w) / s.factor));
    }
  }
  return out;
}

TEST(RopeFrequencies, Llama3SmoothsBetweenTheWavelengthBands) {
  const RopeScaling llama31{.type = RopeScalingType::Llama3,
                            .factor = 8.0,
                            .low_freq_factor = 1.0,
                            .high_freq_factor = 4.0,
                            .original_max_positions = 8192};
  RopeScaling llama32 = llama31;
  llama32.factor = 32.0;
  for (const RopeScaling& s : {llama31, llama32})
    for (int64_t D : {8, 64, 128}) {
      const RopeFrequencies f(rope_model(D, 5e5, 131072, s));
      EXPECT_FALSE(f.depends_on_length());
      const std::vector<double> got = f.at_length(1);
      const std::string what =
          "llama3 factor " + std::to_string(s.factor) + " D=" + std::to_string(D);
      expect_rel_near(got, llama3_expected(D, 5e5, s), 1e-13, what);
      // All three bands occur at D >= 64: kept, smoothed, divided.
      if (D < 64) continue;
      int kept = 0, divided = 0, smoothed = 0;
      for (int64_t i = 0; i < D / 2; ++i) {
        const double p = plain(5e5, i, D), r = got[i] / p;
        if (std::abs(r - 1) < 1e-12)
          ++kept;
        else if (std::abs(r - 1 / s.factor) < 1e-12)
          ++divided;
        else
          ++smoothed;
      }
      EXPECT_GT(kept, 0) << what;
      EXPECT_GT(divided, 0) << what;
      EXPECT_GT(smoothed, 0) << what;
    }
  // transformers 4.44 _compute_llama3_parameters: the reference test's
  // config (D 8, theta 1e4, factor 8, original 16) and Llama-3.2-1B's (D 64).
  const RopeFrequencies small(rope_model(8, 1e4, 64,
                                         {.type = RopeScalingType::Llama3,
                                          .factor = 8.0,
                                          .low_freq_factor = 1.0,
                                          .high_freq_factor = 4.0,
                                          .original_max_positions = 16}));
  expect_rel_near(small.at_length(1), {0.576056361, 0.0125000002, 0.00124999997, 0.000125000006},
                  3e-6, "transformers llama3 D 8");
  const RopeFrequencies l32(rope_model(64, 5e5, 131072, llama32));
  expect_rel_near(l32.at_length(1),
                  {1,
                   0.663601279,
                   0.440366626,
                   0.292227834,
                   0.193922758,
                   0.128687382,
                   0.0853971019,
                   0.0566696189,
                   0.0376060307,
                   0.0249554086,
                   0.0165604409,
                   0.0109895291,
                   0.00729266508,
                   0.00483942125,
                   0.00321144611,
                   0.00129054801,
                   0.000429556705,
                   9.70828623e-05,
                   1.94616387e-05,
                   1.29147675e-05,
                   8.57025589e-06,
                   5.68723226e-06,
                   3.77405445e-06,
                   2.50446715e-06,
                   1.66196742e-06,
                   1.10288363e-06,
                   7.31874934e-07,
                   4.85673127e-07,
                   3.22293289e-07,
                   2.1387423e-07,
                   1.41927202e-07,
                   9.41830649e-08},
                  3e-6, "transformers llama3 Llama-3.2-1B");
}

TEST(RopeFrequencies, DynamicNtkStretchesTheBaseBeyondTheContext) {
  const RopeScaling r{.type = RopeScalingType::Dynamic, .factor = 2.0};
  for (int64_t D : {8, 12, 64}) {
    const RopeFrequencies f(rope_model(D, 1e4, 32, r));
    EXPECT_TRUE(f.depends_on_length());
    std::vector<double> unscaled;
    for (int64_t i = 0; i < D / 2; ++i) unscaled.push_back(plain(1e4, i, D));
    const std::string what = "dynamic D=" + std::to_string(D);
    expect_rel_near(f.at_length(1), unscaled, 1e-14, what + " short");
    expect_rel_near(f.at_length(32), unscaled, 1e-14, what + " at the context");
    for (int64_t L : {33, 50, 1000}) {
      // (theta * s^(D/(D-2)))^(-2i/D) = theta^(-2i/D) * s^(-2i/(D-2)),
      // s = factor * L / max - (factor - 1).
      const double s = 2.0 * static_cast<double>(L) / 32.0 - 1.0;
      std::vector<double> want;
      for (int64_t i = 0; i < D / 2; ++i)
        want.push_back(unscaled[i] *
                       std::pow(s, -2.0 * static_cast<double>(i) / static_cast<double>(D - 2)));
      expect_rel_near(f.at_length(L), want, 1e-13, what + " L=" + std::to_string(L));
    }
  }
  // transformers 4.44 _compute_dynamic_ntk_parameters: the reference test's
  // config (D 8, context 8, factor 2) at 16 tokens, and D 64, theta 5e5,
  // context 2048, factor 4 at 5000 tokens.
  const RopeFrequencies small(rope_model(8, 1e4, 8, r));
  expect_rel_near(small.at_length(16), {1, 0.0693361238, 0.00480749831, 0.00033333333}, 3e-6,
                  "transformers dynamic D 8");
  const RopeFrequencies big(
      rope_model(64, 5e5, 2048, {.type = RopeScalingType::Dynamic, .factor = 4.0}));
  expect_rel_near(big.at_length(5000),
                  {1,
                   0.623911619,
                   0.389265686,
                   0.24286738,
                   0.151527777,
                   0.0945399404,
                   0.0589845628,
                   0.0368011519,
                   0.0229606666,
                   0.014325426,
                   0.00893779937,
                   0.00557639683,
                   0.00347917853,
                   0.00217069988,
                   0.00135432486,
                   0.00084497896,
                   0.000527192198,
                   0.000328921335,
                   0.000205217817,
                   0.000128037791,
                   7.98842593e-05,
                   4.98407135e-05,
                   3.10962023e-05,
                   1.9401281e-05,
                   1.21046842e-05,
                   7.55225255e-06,
                   4.71193789e-06,
                   2.93983271e-06,
                   1.83419581e-06,
                   1.14437603e-06,
                   7.13989493e-07,
                   4.45466355e-07},
                  3e-6, "transformers dynamic D 64");
  // D / (D - 2) has no value at head_dim 2.
  EXPECT_THROW(RopeFrequencies(rope_model(2, 1e4, 8, r)), Error);
}

TEST(RopeFrequencies, OnlyDynamicNtkRunsBeyondMaxPositions) {
  EXPECT_EQ(rope_context_limit(rope_model(8, 1e4, 64, {})), 64);
  EXPECT_EQ(
      rope_context_limit(rope_model(8, 1e4, 64, {.type = RopeScalingType::Linear, .factor = 2.0})),
      64);
  EXPECT_EQ(
      rope_context_limit(rope_model(8, 1e4, 64, {.type = RopeScalingType::Dynamic, .factor = 2.0})),
      std::numeric_limits<int64_t>::max());
  ModelConfig gpt2;
  EXPECT_EQ(rope_context_limit(gpt2), gpt2.max_positions);
}

}  // namespace
}  // namespace parallm
