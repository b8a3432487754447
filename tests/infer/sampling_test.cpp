// Each sampler step on small hand-made logits, the order of the steps, seed
// reproducibility, log-probabilities, stop-string scanning and the message
// of each bad sampling value.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/error.h"
#include "infer/sampler.h"
#include "infer/sampling_transforms.h"
#include "infer/stop_strings.h"

namespace parallm {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(SamplingTransforms, RepetitionPenaltyDividesPositiveMultipliesNegative) {
  std::vector<float> l = {2.0f, -1.0f, 3.0f, 0.5f};
  apply_repetition_penalty(l, std::vector<int32_t>{0, 1, 1, 3}, 2.0);  // repeats count once
  EXPECT_EQ(l, (std::vector<float>{1.0f, -2.0f, 3.0f, 0.25f}));
}

TEST(SamplingTransforms, PresenceAndFrequencyFollowOpenAi) {
  std::vector<float> l = {1.0f, 1.0f, 1.0f};
  apply_presence_frequency(l, std::vector<int32_t>{2, 2, 2, 0}, 0.5, 0.25);
  EXPECT_FLOAT_EQ(l[0], 1.0f - 0.25f - 0.5f);
  EXPECT_FLOAT_EQ(l[1], 1.0f);
  EXPECT_FLOAT_EQ(l[2], 1.0f - 3 * 0.25f - 0.5f);
}

TEST(SamplingTransforms, Temperature) {
  std::vector<float> l = {1.0f, -2.0f};
  apply_temperature(l, 0.5);
  EXPECT_EQ(l, (std::vector<float>{2.0f, -4.0f}));
}

TEST(SamplingTransforms, TopKKeepsTheKLargestLowerIdOnTies) {
  std::vector<float> l = {1.0f, 3.0f, 2.0f, 3.0f, 0.0f};
  mask_top_k(l, 2);
  EXPECT_EQ(l, (std::vector<float>{-kInf, 3.0f, -kInf, 3.0f, -kInf}));
  std::vector<float> all = {1.0f, 2.0f};
  mask_top_k(all, 0);
  EXPECT_EQ(all, (std::vector<float>{1.0f, 2.0f}));
}

TEST(SamplingTransforms, TopPKeepsTheSmallestSetReachingP) {
  // Probabilities 0.5, 0.25, 0.125, 0.125.
  const std::vector<float> base = {std::log(4.0f), std::log(2.0f), 0.0f, 0.0f};
  std::vector<float> l = base;
  mask_top_p(l, 0.7);  // 0.5 < 0.7 <= 0.75
  EXPECT_EQ(l[0], base[0]);
  EXPECT_EQ(l[1], base[1]);
  EXPECT_EQ(l[2], -kInf);
  EXPECT_EQ(l[3], -kInf);
  l = base;
  mask_top_p(l, 0.1);  // always at least the most likely
  EXPECT_EQ(l[0], base[0]);
  EXPECT_EQ(l[1], -kInf);
}

TEST(SamplingTransforms, MinPIsRelativeToTheLargest) {
  const std::vector<float> base = {std::log(4.0f), std::log(2.0f), 0.0f, 0.0f};
  std::vector<float> l = base;
  mask_min_p(l, 0.4);  // keep p >= 0.2: ids 0 and 1
  EXPECT_EQ(l[1], base[1]);
  EXPECT_EQ(l[2], -kInf);
  EXPECT_EQ(l[3], -kInf);
}

TEST(SamplingTransforms, InverseCdfAndArgmax) {
  const std::vector<float> l = {0.0f, -kInf, 0.0f};  // 0.5, 0, 0.5
  EXPECT_EQ(sample_inverse_cdf(l, 0.25), 0);
  EXPECT_EQ(sample_inverse_cdf(l, 0.75), 2);
  EXPECT_EQ(argmax(std::vector<float>{1.0f, 5.0f, 5.0f}), 1);
  const std::vector<double> lp = log_softmax(std::vector<float>{0.0f, 0.0f});
  EXPECT_NEAR(lp[0], std::log(0.5), 1e-12);
}

std::vector<float> ramp(int n) {
  std::vector<float> l(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) l[static_cast<size_t>(i)] = 0.1f * static_cast<float>(i % 7);
  return l;
}

TEST(Sampler, GreedyAtTemperatureZero) {
  const Sampler s({.temperature = 0.0});
  const std::vector<float> l = {0.1f, 2.0f, 1.0f};
  EXPECT_EQ(s.sample(l, {}, {}, 0, 0).token, 1);
  // The penalty is applied before the argmax: 2 / 4 < 1.
  const Sampler p({.temperature = 0.0, .repetition_penalty = 4.0});
  EXPECT_EQ(p.sample(l, std::vector<int32_t>{1}, {}, 0, 0).token, 2);
}

TEST(Sampler, SeedReproducesDraws) {
  const std::vector<float> l = ramp(50);
  const SamplingParams sp{.temperature = 1.0, .top_p = 0.9, .seed = 42};
  const Sampler a(sp), b(sp);
  std::vector<int32_t> x, y, z;
  for (int step = 0; step < 64; ++step) {
    x.push_back(a.sample(l, {}, {}, 3, step).token);
    y.push_back(b.sample(l, {}, {}, 3, step).token);
    z.push_back(
        Sampler({.temperature = 1.0, .top_p = 0.9, .seed = 43}).sample(l, {}, {}, 3, step).token);
  }
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
}

TEST(Sampler, TopKOneIsGreedy) {
  const std::vector<float> l = ramp(20);
  const Sampler s({.temperature = 1.5, .top_k = 1, .seed = 9});
  for (int step = 0; step < 16; ++step) EXPECT_EQ(s.sample(l, {}, {}, 0, step).token, argmax(l));
}

TEST(Sampler, LogprobsOfTheRawDistribution) {
  const std::vector<float> l = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  const Sampler s({.temperature = 0.0, .logprobs = 2});
  const SampledToken t = s.sample(l, {}, {}, 0, 0);
  EXPECT_EQ(t.token, 0);
  EXPECT_NEAR(t.logprob, std::log(0.5), 1e-6);
  ASSERT_EQ(t.top.size(), 2u);
  EXPECT_EQ(t.top[1].token, 1);
  EXPECT_NEAR(t.top[1].logprob, std::log(0.3), 1e-6);
}

TEST(Sampler, TokenLogprobOnlyWhenWanted) {
  const std::vector<float> l = {std::log(0.2f), std::log(0.5f), std::log(0.3f)};
  const SampledToken off =
      Sampler({.temperature = 0.0, .token_logprob = false}).sample(l, {}, {}, 0, 0);
  EXPECT_EQ(off.token, 1);
  EXPECT_TRUE(std::isnan(off.logprob));
  EXPECT_TRUE(off.top.empty());
  // Alternatives asked for: the chosen token's value comes with them.
  const SampledToken top =
      Sampler({.temperature = 0.0, .logprobs = 1, .token_logprob = false}).sample(l, {}, {}, 0, 0);
  EXPECT_NEAR(top.logprob, std::log(0.5), 1e-6);
  EXPECT_NEAR(Sampler({.temperature = 0.0}).sample(l, {}, {}, 0, 0).logprob, std::log(0.5), 1e-6);
}

std::string error_of(const SamplingParams& p) {
  try {
    p.validate();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(SamplingParams, EachBadValueIsNamed) {
  EXPECT_EQ(error_of({.temperature = -0.5}), "temperature must be >= 0 (0: greedy), got -0.5");
  EXPECT_EQ(error_of({.top_k = -1}), "top_k must be >= 0 (0: off), got -1");
  EXPECT_EQ(error_of({.top_p = 0.0}), "top_p must be in (0, 1] (1: off), got 0");
  EXPECT_EQ(error_of({.top_p = 1.5}), "top_p must be in (0, 1] (1: off), got 1.5");
  EXPECT_EQ(error_of({.min_p = -0.1}), "min_p must be in [0, 1] (0: off), got -0.1");
  EXPECT_EQ(error_of({.repetition_penalty = 0.0}),
            "repetition_penalty must be > 0 (1: off), got 0");
  EXPECT_EQ(error_of({.presence_penalty = 3.0}),
            "presence_penalty must be in [-2, 2] (0: off), got 3");
  EXPECT_EQ(error_of({.frequency_penalty = -2.5}),
            "frequency_penalty must be in [-2, 2] (0: off), got -2.5");
  EXPECT_EQ(error_of({.logprobs = 21}), "logprobs must be in [0, 20], got 21");
  EXPECT_EQ(error_of({}), "no error");
}

TEST(StopStrings, FindsTheFirstAndHoldsBackPrefixes) {
  const StopStrings s({"END", "\n\n"});
  EXPECT_TRUE(s.scan("abc\n\nxEND").stopped);
  EXPECT_EQ(s.scan("abc\n\nxEND").end, 3u);
  const StopStrings::Scan partial = s.scan("hello EN");
  EXPECT_FALSE(partial.stopped);
  EXPECT_EQ(partial.end, 6u);  // "EN" may become "END"
  EXPECT_EQ(s.scan("hello").end, 5u);
}

}  // namespace
}  // namespace parallm
