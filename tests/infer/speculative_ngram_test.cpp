// Speculative decoding with prompt-lookup drafts (infer/ngram_draft.h,
// GenerateOptions::ngram_draft_tokens): the drafts a context gives, and
// greedy generation with drafts verified in one forward equal to plain
// decoding token for token, in a batch (sequences ending at EOS mid-step
// among them) and alone, for GPT-2, LLaMA and a sliding-window LLaMA;
// sampled, the tokens' law equal to plain decoding's.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <map>

#include "base/error.h"
#include "common/chi_square.h"
#include "common/sampled_law.h"
#include "common/random_tokens.h"
#include "common/test_models.h"
#include "infer/generator.h"
#include "infer/ngram_draft.h"
#include "infer/sampler.h"
#include "model/transformer.h"

namespace parallm {
namespace {

using testing::chi2_bound;

using testing::random_tokens;

TEST(NgramDraft, TheLatestEarlierMatchOfTheLongestSuffix) {
  const std::vector<int32_t> c = {1, 2, 3, 4, 1, 2};
  // {4, 1, 2} never came before; {1, 2} did, at 0: what followed it.
  EXPECT_EQ(ngram_draft(c, 3), (std::vector<int32_t>{3, 4, 1}));
  EXPECT_EQ(ngram_draft(c, 1), (std::vector<int32_t>{3}));
  // The latest occurrence wins: 5 came after 9 last.
  EXPECT_EQ(ngram_draft(std::vector<int32_t>{9, 6, 9, 5, 7, 9}, 2), (std::vector<int32_t>{5, 7}));
  // In a loop the latest match has one token after it: the latest with k wins.
  EXPECT_EQ(ngram_draft(std::vector<int32_t>{4, 3, 3, 3, 3, 3, 3, 3}, 3),
            (std::vector<int32_t>{3, 3, 3}));
  // A match near the end proposes only what exists.
  EXPECT_EQ(ngram_draft(std::vector<int32_t>{8, 8}, 4), (std::vector<int32_t>{8}));
  EXPECT_TRUE(ngram_draft(std::vector<int32_t>{1, 2, 3}, 4).empty());
  EXPECT_TRUE(ngram_draft(c, 0).empty());
  EXPECT_TRUE(ngram_draft(std::vector<int32_t>{5}, 3).empty());
}

class SpeculativeBoth : public ::testing::TestWithParam<int> {
 protected:
  ModelConfig cfg() const { return testing::decoder_for_generation(GetParam()); }
};

std::vector<int32_t> repeated(const std::vector<int32_t>& unit, int times) {
  std::vector<int32_t> out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), unit.begin(), unit.end());
  return out;
}

TEST_P(SpeculativeBoth, GreedyTokensEqualPlainDecoding) {
  Allocator a;
  Transformer m(cfg(), a);
  m.params().init_random(5);
  const int64_t V = m.config().vocab_size;
  const std::vector<std::vector<int32_t>> prompts = {repeated(random_tokens(4, V, 2), 3),
                                                     random_tokens(9, V, 3), random_tokens(1, V, 4),
                                                     repeated(random_tokens(3, V, 5), 4)};
  GenerateOptions o;
  o.max_new_tokens = 24;
  o.sampling.temperature = 0.0;
  o.eos_ids = {7};
  const std::vector<Generation> plain = generate(m, prompts, o);
  GenerationStats st;
  o.ngram_draft_tokens = 4;
  const std::vector<Generation> spec = generate(m, prompts, o, &st);
  ASSERT_EQ(spec.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(spec[i].tokens, plain[i].tokens) << "prompt " << i;
    EXPECT_EQ(spec[i].finish, plain[i].finish) << "prompt " << i;
    const std::vector<Generation> alone = generate(m, {prompts[i]}, o);
    EXPECT_EQ(alone[0].tokens, plain[i].tokens) << "prompt " << i << " alone";
  }
  EXPECT_GT(st.draft_tokens, 0);  // the repeated prompts give drafts
  EXPECT_LE(st.accepted_draft_tokens, st.draft_tokens);
  std::printf("drafts %lld, accepted %lld\n", static_cast<long long>(st.draft_tokens),
              static_cast<long long>(st.accepted_draft_tokens));
}

INSTANTIATE_TEST_SUITE_P(Arch, SpeculativeBoth, ::testing::Values(0, 1, 2), [](const auto& info) {
  return std::string(testing::decoder_name(info.param));
});

// Sampled: a one-point draft accepted with its probability, else a draw
// from the rest, gives each id its probability under the transforms.
TEST(SpeculativeNgram, DraftAcceptanceKeepsTheTargetsLaw) {
  const std::vector<float> logits = {0.3f, 1.2f, -0.4f, 0.9f, 2.0f, -1.0f};
  const Sampler s({.temperature = 0.8, .seed = 3});
  std::vector<double> p(logits.size());
  double z = 0;
  for (size_t i = 0; i < p.size(); ++i) z += p[i] = std::exp(logits[i] / 0.8);
  for (double& v : p) v /= z;
  const int n = 40000;
  for (int32_t draft : {1, 4, 5}) {
    std::vector<int> count(logits.size(), 0);
    for (int step = 0; step < n; ++step) ++count[s.sample(logits, {}, {}, 0, step, draft).token];
    double chi2 = 0;
    for (size_t i = 0; i < p.size(); ++i) chi2 += std::pow(count[i] - n * p[i], 2) / (n * p[i]);
    EXPECT_LT(chi2, chi2_bound(static_cast<int>(p.size()) - 1)) << "draft " << draft;
  }
  // A draft the transforms rule out (top-k 2 keeps ids 4 and 1) is never taken.
  const Sampler k2({.temperature = 0.8, .top_k = 2, .seed = 3});
  for (int step = 0; step < 2000; ++step) {
    const int32_t t = k2.sample(logits, {}, {}, 0, step, 5).token;
    ASSERT_TRUE(t == 4 || t == 1) << t;
  }
}


// Sampled generation with drafts over many seeds: the second to fifth
// tokens (drafts apply from the second; the later ones follow steps whose
// drafts were kept or cut) have plain decoding's law. A vocabulary of 12
// makes tokens recur, so most steps have drafts.
TEST(SpeculativeNgram, SampledGenerationKeepsPlainDecodingsLaw) {
  Allocator a;
  ModelConfig c = testing::tiny_gpt2();
  c.vocab_size = 12;
  c.init_std = 0.2;
  Transformer m(c, a);
  m.params().init_random(5);
  const std::vector<int32_t> prompt = repeated(random_tokens(8, c.vocab_size, 2), 2);
  testing::expect_drafts_keep_the_law(m, prompt, 4,
                                      [](GenerateOptions& o) { o.ngram_draft_tokens = 3; });
}

}  // namespace
}  // namespace parallm
