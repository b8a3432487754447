// Speculative decoding with a draft model (infer/draft_model.h,
// GenerateOptions::draft_model): greedy tokens equal plain decoding's,
// token for token, in a batch and alone, for GPT-2, LLaMA and a
// sliding-window LLaMA, with three drafts: the target itself (every draft
// accepted), the target cut to its first layer, and an unrelated random
// model of another depth; sampled, a draft drawn from q and accepted with
// min(1, p/q) leaves each token's law the target's.
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
#include "infer/draft_model.h"
#include "infer/generator.h"
#include "infer/sampler.h"
#include "model/transformer.h"

namespace parallm {
namespace {

using testing::chi2_bound;

using testing::random_tokens;

std::vector<int32_t> repeated(const std::vector<int32_t>& unit, int times) {
  std::vector<int32_t> out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), unit.begin(), unit.end());
  return out;
}

TEST(SpeculativeDraftModel, AVocabularyOfAnotherSizeIsRefusedNamingBoth) {
  EXPECT_NO_THROW(check_draft_vocab(1000, 1000));
  try {
    check_draft_vocab(1000, 999);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("999"), std::string::npos) << m;
    EXPECT_NE(m.find("1000"), std::string::npos) << m;
  }
  Allocator a;
  ModelConfig c = testing::tiny_gpt2();
  Transformer target(c, a);
  target.params().init_random(5);
  c.vocab_size = 1003;
  Transformer draft(c, a);
  draft.params().init_random(5);
  GenerateOptions o;
  o.draft_model = &draft;
  o.draft_model_tokens = 3;
  EXPECT_THROW(generate(target, {{1, 2, 3}}, o), Error);
}

class SpeculativeDraftBoth : public ::testing::TestWithParam<int> {
 protected:
  ModelConfig cfg() const { return testing::decoder_for_generation(GetParam()); }
};

// Each draft proposes k = 4; greedy tokens and finishes equal plain
// decoding's, in a batch (sequences ending at EOS mid-step among them) and
// each prompt alone.
TEST_P(SpeculativeDraftBoth, GreedyTokensEqualPlainDecoding) {
  Allocator a;
  Transformer target(cfg(), a);
  target.params().init_random(5);
  // The target itself; its first layer (the counter RNG gives the shared
  // parameters the target's values); a random model of another depth.
  ModelConfig one = cfg();
  one.n_layers = 1;
  Transformer first_layer(one, a);
  first_layer.params().init_random(5);
  ModelConfig three = cfg();
  three.n_layers = 3;
  Transformer unrelated(three, a);
  unrelated.params().init_random(11);
  const int64_t V = target.config().vocab_size;
  const std::vector<std::vector<int32_t>> prompts = {repeated(random_tokens(4, V, 2), 3),
                                                     random_tokens(9, V, 3), random_tokens(1, V, 4),
                                                     repeated(random_tokens(3, V, 5), 4)};
  GenerateOptions o;
  o.max_new_tokens = 24;
  o.sampling.temperature = 0.0;
  o.eos_ids = {7};
  const std::vector<Generation> plain = generate(target, prompts, o);
  struct Case {
    const char* name;
    Transformer* draft;
  };
  for (const Case& c : {Case{"itself", &target}, Case{"first layer", &first_layer},
                        Case{"unrelated", &unrelated}}) {
    GenerateOptions so = o;
    so.draft_model = c.draft;
    so.draft_model_tokens = 4;
    GenerationStats st;
    const std::vector<Generation> spec = generate(target, prompts, so, &st);
    ASSERT_EQ(spec.size(), prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(spec[i].tokens, plain[i].tokens) << c.name << ", prompt " << i;
      EXPECT_EQ(spec[i].finish, plain[i].finish) << c.name << ", prompt " << i;
      const std::vector<Generation> alone = generate(target, {prompts[i]}, so);
      EXPECT_EQ(alone[0].tokens, plain[i].tokens) << c.name << ", prompt " << i << " alone";
    }
    EXPECT_GT(st.draft_tokens, 0) << c.name;
    EXPECT_LE(st.accepted_draft_tokens, st.draft_tokens) << c.name;
    // The target drafting for itself proposes exactly what it then chooses.
    if (c.draft == &target) {
      EXPECT_EQ(st.accepted_draft_tokens, st.draft_tokens);
    }
    std::printf("%s: drafts %lld, accepted %lld\n", c.name,
                static_cast<long long>(st.draft_tokens),
                static_cast<long long>(st.accepted_draft_tokens));
  }
}

INSTANTIATE_TEST_SUITE_P(Arch, SpeculativeDraftBoth, ::testing::Values(0, 1, 2),
                         [](const auto& info) {
                           return std::string(testing::decoder_name(info.param));
                         });

// One row: d drawn from q (Sampler::draw_draft), then accepted with
// min(1, p/q) or replaced by a draw from max(0, p - q): each id comes with
// probability p, whatever q (near p, far from it, one with ids p lacks).
TEST(SpeculativeDraftModel, DraftDistributionAcceptanceKeepsTheTargetsLaw) {
  const std::vector<float> logits = {0.3f, 1.2f, -0.4f, 0.9f, 2.0f, -1.0f};
  const Sampler s({.temperature = 0.8, .seed = 3});
  const std::vector<float> p = s.probabilities(logits, {}, {});
  double sum = 0;
  for (float v : p) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-6);
  const std::vector<std::vector<float>> qs = {
      p, {0.05f, 0.05f, 0.4f, 0.05f, 0.05f, 0.4f}, {0.0f, 0.5f, 0.0f, 0.5f, 0.0f, 0.0f}};
  const int n = 40000;
  for (size_t c = 0; c < qs.size(); ++c) {
    std::vector<int> count(logits.size(), 0);
    int accepted = 0;
    for (int step = 0; step < n; ++step) {
      const int32_t d = s.draw_draft(qs[c], 0, step);
      ASSERT_GT(qs[c][static_cast<size_t>(d)], 0.0f);
      const int32_t t = s.sample(logits, {}, {}, 0, step, d, qs[c]).token;
      accepted += t == d;
      ++count[static_cast<size_t>(t)];
    }
    double chi2 = 0;
    for (size_t i = 0; i < p.size(); ++i) chi2 += std::pow(count[i] - n * p[i], 2) / (n * p[i]);
    EXPECT_LT(chi2, chi2_bound(static_cast<int>(p.size()) - 1)) << "q " << c;
    if (c == 0) {
      EXPECT_EQ(accepted, n);  // q = p: every draft is kept
    }
    std::printf("q %zu: chi2 %.2f, accepted %d of %d\n", c, chi2, accepted, n);
  }
}

// Sampled generation over many seeds with a draft model of one layer
// (another seed: its q differs from the target's p, so drafts are both
// kept and cut): tokens 1 to 5 have plain decoding's law.
TEST(SpeculativeDraftModel, SampledGenerationKeepsPlainDecodingsLaw) {
  Allocator a;
  ModelConfig c = testing::tiny_gpt2();
  c.vocab_size = 12;
  c.init_std = 0.2;
  Transformer m(c, a);
  m.params().init_random(5);
  ModelConfig dc = c;
  dc.n_layers = 1;
  Transformer draft(dc, a);
  draft.params().init_random(9);
  const std::vector<int32_t> prompt = repeated(random_tokens(8, c.vocab_size, 2), 2);
  testing::expect_drafts_keep_the_law(m, prompt, 5, [&](GenerateOptions& o) {
    o.draft_model = &draft;
    o.draft_model_tokens = 3;
  });
}

}  // namespace
}  // namespace parallm
