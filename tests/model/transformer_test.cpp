#include "model/transformer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/rng.h"
#include "common/test_models.h"
#include "model/model_catalog.h"

namespace parallm {
namespace {

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> t(n);
  uint64_t key = stream_key(seed, "tokens");
  for (int64_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>(uniform_at(key, i) * vocab);
  return t;
}

double max_rel_diff(const float* a, const float* b, int64_t n) {
  double num = 0, den = 1e-12;
  for (int64_t i = 0; i < n; ++i) {
    num = std::max(num, std::abs(static_cast<double>(a[i]) - b[i]));
    den = std::max(den, std::abs(static_cast<double>(b[i])));
  }
  return num / den;
}

class TransformerBoth : public ::testing::TestWithParam<bool> {
 protected:
  ModelConfig cfg() const { return GetParam() ? testing::tiny_llama() : testing::tiny_gpt2(); }
};

// Two micro-batches with the global-token scaling give the gradient of the
// whole batch: the basis of gradient accumulation and data parallelism.
TEST_P(TransformerBoth, AccumulatedMicroBatchesEqualOneBatch) {
  Allocator a;
  Transformer m(cfg(), a);
  m.params().init_random(3);
  const int64_t B = 4, T = 9;
  auto in = random_tokens(B * T, cfg().vocab_size, 1);
  auto tg = random_tokens(B * T, cfg().vocab_size, 2);
  LossSum whole = m.forward_backward(in.data(), tg.data(), B, T, 1.0 / (B * T));
  std::vector<float> g_whole(m.params().flat_grads().data<float>(),
                             m.params().flat_grads().data<float>() + m.params().total_numel());
  m.params().zero_grads();
  double sum = 0;
  for (int k = 0; k < 2; ++k)
    sum +=
        m.forward_backward(in.data() + k * 2 * T, tg.data() + k * 2 * T, 2, T, 1.0 / (B * T)).sum;
  EXPECT_NEAR(sum, whole.sum, 1e-9 * std::abs(whole.sum) + 1e-3);
  EXPECT_LT(
      max_rel_diff(m.params().flat_grads().data<float>(), g_whole.data(), m.params().total_numel()),
      1e-5);
}

// Activations are freed when backward finishes, and the fused head never
// materialises the (N, V) logits.
TEST_P(TransformerBoth, ActivationsReleasedAndNoFullLogits) {
  ModelConfig c = cfg();
  c.vocab_size = 20000;
  Allocator a;
  Transformer m(c, a);
  m.params().init_random(3);
  const int64_t B = 8, T = 64;  // full logits would be 41 MB; a chunk is at most half
  auto in = random_tokens(B * T, c.vocab_size, 1);
  a.reset_peaks();
  m.forward_backward(in.data(), in.data(), B, T, 1.0 / (B * T));
  EXPECT_EQ(a.current(MemTag::Activation), 0);
  EXPECT_EQ(a.current(MemTag::Workspace), 0);
  const int64_t full_logits = B * T * c.vocab_size * 4;
  EXPECT_LT(a.peak(MemTag::Workspace), full_logits * 3 / 4);
  EXPECT_GT(a.peak(MemTag::Activation), 0);
}

TEST_P(TransformerBoth, LossOfUniformModelIsLogVocab) {
  // With every weight zero the logits are all equal: loss = ln(V) exactly.
  Allocator a;
  Transformer m(cfg(), a);
  const int64_t B = 2, T = 5;
  auto in = random_tokens(B * T, cfg().vocab_size, 4);
  LossSum l = m.forward_loss(in.data(), in.data(), B, T);
  EXPECT_EQ(l.count, B * T);
  EXPECT_NEAR(l.sum / l.count, std::log(static_cast<double>(cfg().vocab_size)), 1e-5);
}

TEST_P(TransformerBoth, IgnoredTargetsCarryNoLoss) {
  Allocator a;
  Transformer m(cfg(), a);
  m.params().init_random(5);
  const int64_t B = 1, T = 6;
  auto in = random_tokens(B * T, cfg().vocab_size, 4);
  auto tg = in;
  LossSum all = m.forward_loss(in.data(), tg.data(), B, T);
  tg[2] = -1;
  LossSum some = m.forward_loss(in.data(), tg.data(), B, T);
  EXPECT_EQ(some.count, all.count - 1);
  EXPECT_LT(some.sum, all.sum);
}

TEST_P(TransformerBoth, RejectsOutOfVocabularyInput) {
  Allocator a;
  Transformer m(cfg(), a);
  std::vector<int32_t> in = {1, 2, static_cast<int32_t>(cfg().vocab_size)};
  try {
    m.forward_loss(in.data(), in.data(), 1, 3);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside the vocabulary (1000)"), std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Families, TransformerBoth, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "llama" : "gpt2"; });

TEST(ModelConfig, ValidationNamesTheValues) {
  ModelConfig c = testing::tiny_llama();
  c.n_kv_heads = 4;
  try {
    c.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "num_attention_heads (6) is not divisible by num_key_value_heads (4)");
  }
  ModelConfig g = testing::tiny_gpt2();
  g.head_dim = 20;
  EXPECT_THROW(g.validate(), Error);
}

TEST(ModelConfig, ParameterCountMatchesParameterSet) {
  for (ModelConfig c : {testing::tiny_gpt2(), testing::tiny_llama(), catalog_model("gpt2-tiny")}) {
    Allocator a;
    Transformer m(c, a);
    int64_t n = 0;
    for (int i = 0; i < m.params().size(); ++i) n += m.params().numel(i);
    EXPECT_EQ(n, c.num_parameters());
  }
  EXPECT_EQ(catalog_model("gpt2-124m").num_parameters(), 124439808);  // HF gpt2
}

}  // namespace
}  // namespace parallm
