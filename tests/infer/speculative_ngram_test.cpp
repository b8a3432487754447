// Speculative decoding with prompt-lookup drafts (infer/ngram_draft.h,
// GenerateOptions::ngram_draft_tokens): the drafts a context gives, and
// greedy generation with drafts verified in one forward equal to plain
// decoding token for token, in a batch (sequences ending at EOS mid-step
// among them) and alone, for GPT-2, LLaMA and a sliding-window LLaMA.
#include <gtest/gtest.h>

#include <cstdio>

#include "base/error.h"
#include "common/random_tokens.h"
#include "common/test_models.h"
#include "infer/generator.h"
#include "infer/ngram_draft.h"
#include "model/transformer.h"

namespace parallm {
namespace {

using testing::random_tokens;

TEST(NgramDraft, TheLatestEarlierMatchOfTheLongestSuffix) {
  const std::vector<int32_t> c = {1, 2, 3, 4, 1, 2};
  // {4, 1, 2} never came before; {1, 2} did, at 0: what followed it.
  EXPECT_EQ(ngram_draft(c, 3), (std::vector<int32_t>{3, 4, 1}));
  EXPECT_EQ(ngram_draft(c, 1), (std::vector<int32_t>{3}));
  // The latest occurrence wins: 5 came after 9 last.
  EXPECT_EQ(ngram_draft(std::vector<int32_t>{9, 6, 9, 5, 7, 9}, 2),
            (std::vector<int32_t>{5, 7}));
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
  ModelConfig cfg() const {
    ModelConfig c = GetParam() > 0 ? testing::tiny_llama() : testing::tiny_gpt2();
    if (GetParam() == 2) c.sliding_window = 5;
    c.init_std = 0.2;  // logits far apart, so greedy choices are not near ties
    return c;
  }
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
  const std::vector<std::vector<int32_t>> prompts = {
      repeated(random_tokens(4, V, 2), 3), random_tokens(9, V, 3), random_tokens(1, V, 4),
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

INSTANTIATE_TEST_SUITE_P(Arch, SpeculativeBoth, ::testing::Values(0, 1, 2),
                         [](const auto& info) {
                           return std::string(info.param == 0   ? "gpt2"
                                              : info.param == 1 ? "llama"
                                                                : "mistral");
                         });

TEST(SpeculativeNgram, SampledDecodingIsRefusedByName) {
  Allocator a;
  Transformer m(testing::tiny_gpt2(), a);
  m.params().init_random(5);
  GenerateOptions o;
  o.sampling.temperature = 0.8;
  o.ngram_draft_tokens = 3;
  try {
    generate(m, {{1, 2, 3}}, o);
    FAIL() << "sampled speculative decoding ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("greedy"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace parallm
