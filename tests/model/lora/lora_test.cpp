// LoRA on the transformer (docs/lora.md): adapter counts from the config,
// the frozen base (no gradients, no optimizer state), the first step equal
// to the base model, and forward and gradients equal to the merged model's.
#include <gtest/gtest.h>

#include <cmath>

#include "base/rng.h"
#include "common/test_models.h"
#include "model/lora/lora_merge.h"
#include "model/lora/lora_model.h"
#include "model/model_catalog.h"
#include "model/transformer.h"
#include "nn/matmul_precision.h"
#include "optim/optimizer.h"

namespace parallm {
namespace {

std::vector<int32_t> tokens(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> t(n);
  const uint64_t key = stream_key(seed, "tokens");
  for (int64_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>(uniform_at(key, i) * vocab);
  return t;
}

ModelConfig with_lora(ModelConfig c, std::vector<std::string> targets, int64_t rank = 4) {
  c.lora.rank = rank;
  c.lora.alpha = 8.0;
  c.lora.targets = std::move(targets);
  return c;
}

int64_t unpadded_numel(const ParameterSet& ps) {
  int64_t n = 0;
  for (int i = 0; i < ps.size(); ++i) n += ps.numel(i);
  return n;
}

// Makes every B non-zero (a trained adapter), so the adapters matter.
void randomise_b(const ParameterSet& ps) {
  for (int i = 0; i < ps.size(); ++i) {
    if (lora_base_weight(ps.spec(i).name).empty() || ps.spec(i).name.back() != 'B') continue;
    float* v = ps.value(ParamRef{i});
    const uint64_t key = stream_key(11, ps.spec(i).name);
    for (int64_t j = 0; j < ps.numel(i); ++j) v[j] = static_cast<float>(0.05 * normal_at(key, j));
  }
}

TEST(LoraTargets, Llama2_7bRank8QvCount) {
  ModelConfig c = with_lora(catalog_model("llama2-7b"), {"q", "v"}, 8);
  c.validate();
  EXPECT_EQ(lora_trainable_params(c), 4194304);  // 32 layers x 2 x 8 x (4096 + 4096)
  c.lora.targets = {"all-linear"};
  // q, k, v, o: 8 (4096 + 4096) each; gate, up, down: 8 (4096 + 11008) each.
  EXPECT_EQ(lora_trainable_params(c), 32 * (4 * 8 * 8192 + 3 * 8 * (4096 + 11008)));
}

// GPT-2's fc / proj answer to up / down too (parallm memory's names).
TEST(LoraTargets, Gpt2UpDownAreFcProj) {
  ModelConfig a = with_lora(testing::tiny_gpt2(), {"fc", "proj"});
  ModelConfig b = with_lora(testing::tiny_gpt2(), {"up", "down"});
  b.validate();
  EXPECT_EQ(lora_trainable_params(a), lora_trainable_params(b));
  EXPECT_EQ(lora_trainable_params(b), 2 * 4 * 2 * (72 + 288));
}

TEST(LoraTargets, BadInputNamesTheValues) {
  try {
    parse_lora_targets("q,qq");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown LoRA target 'qq'"), std::string::npos);
  }
  ModelConfig g = with_lora(testing::tiny_gpt2(), {"gate"});
  try {
    g.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'gate' is not a linear of a gpt2 model"),
              std::string::npos)
        << e.what();
  }
  ModelConfig r = with_lora(testing::tiny_llama(), {"q"}, -2);
  EXPECT_THROW(r.validate(), Error);
  ModelConfig d = with_lora(testing::tiny_llama(), {"q"});
  d.lora.dropout = 1.0;
  EXPECT_THROW(d.validate(), Error);
}

class LoraBoth : public ::testing::TestWithParam<bool> {
 protected:
  ModelConfig base() const { return GetParam() ? testing::tiny_llama() : testing::tiny_gpt2(); }
};

// params() holds exactly sum r (in + out) adapter values, base_params() the
// whole model without gradients; optimizer state exists only for adapters.
TEST_P(LoraBoth, OnlyAdaptersAreTrainable) {
  for (const auto& targets : std::vector<std::vector<std::string>>{{"q", "v"}, {"all-linear"}}) {
    const ModelConfig c = with_lora(base(), targets);
    Allocator a;
    Transformer m(c, a);
    EXPECT_EQ(unpadded_numel(m.params()), lora_trainable_params(c));
    for (int i = 0; i < m.params().size(); ++i)
      EXPECT_FALSE(lora_base_weight(m.params().spec(i).name).empty()) << m.params().spec(i).name;
    Allocator plain_alloc;
    Transformer plain(base(), plain_alloc);
    ASSERT_EQ(m.base_params().size(), plain.params().size());
    EXPECT_TRUE(m.base_params().frozen());
    EXPECT_EQ(m.base_params().grad(ParamRef{0}), nullptr);
    // Gradient bytes: the adapters' flat buffer only.
    EXPECT_EQ(a.current(MemTag::Gradient),
              m.params().total_numel() * static_cast<int64_t>(sizeof(float)));
    EXPECT_EQ(a.current(MemTag::Parameter),
              (m.params().total_numel() + m.base_params().total_numel()) *
                  static_cast<int64_t>(sizeof(float)));
    OptimizerConfig oc;  // AdamW: two moments per trained value
    auto opt =
        make_optimizer(oc, m.params(), a, 0, m.params().total_numel(), m.params().total_numel());
    EXPECT_GT(a.current(MemTag::Optimizer), 0);
    EXPECT_LE(a.current(MemTag::Optimizer),
              2 * m.params().total_numel() * static_cast<int64_t>(sizeof(float)) + 4096);
  }
}

// B = 0 at the start: the first step's logits and loss are the base model's, bit for bit.
TEST_P(LoraBoth, FirstStepEqualsBase) {
  const ModelConfig c = with_lora(base(), {"all-linear"});
  Allocator a1, a2;
  Transformer m(c, a1), plain(base(), a2);
  m.base_params().init_random(5);
  m.params().init_random(5);
  plain.params().init_random(5);
  const int64_t B = 2, T = 7;
  auto in = tokens(B * T, c.vocab_size, 1), tg = tokens(B * T, c.vocab_size, 2);
  Tensor l1 = m.logits(in.data(), B, T), l2 = plain.logits(in.data(), B, T);
  for (int64_t i = 0; i < l1.numel(); ++i) ASSERT_EQ(l1.data<float>()[i], l2.data<float>()[i]) << i;
  const LossSum s1 = m.forward_backward(in.data(), tg.data(), B, T, 1.0 / (B * T));
  const LossSum s2 = plain.forward_backward(in.data(), tg.data(), B, T, 1.0 / (B * T));
  EXPECT_EQ(s1.sum, s2.sum);
  // A is Kaiming-uniform: inside +-1/sqrt(in), not all zero.
  const int a = m.params().find("layers.0.attn.q.lora_A");
  ASSERT_GE(a, 0);
  const float bound = 1.0f / std::sqrt(static_cast<float>(c.hidden));
  float amax = 0;
  for (int64_t j = 0; j < m.params().numel(a); ++j)
    amax = std::max(amax, std::abs(m.params().value(ParamRef{a})[j]));
  EXPECT_GT(amax, 0.5f * bound);
  EXPECT_LE(amax, bound);
}

// Under bf16 GEMMs (the base's 16-bit copies come from the frozen set, the
// adapter GEMMs round both operands) the first step still equals the base's,
// and training steps with non-zero B stay finite.
TEST_P(LoraBoth, Bf16FirstStepEqualsBase) {
  const ModelConfig c = with_lora(base(), {"all-linear"});
  Allocator a1, a2;
  Transformer m(c, a1), plain(base(), a2);
  m.base_params().init_random(5);
  m.params().init_random(5);
  plain.params().init_random(5);
  MatmulPrecision p1(Precision::BF16, m.base_params(), a1), p2(Precision::BF16, plain.params(), a2);
  m.set_compute(&p1, Recompute::Selective);
  plain.set_compute(&p2, Recompute::Selective);
  const int64_t B = 2, T = 7;
  auto in = tokens(B * T, c.vocab_size, 1), tg = tokens(B * T, c.vocab_size, 2);
  Tensor l1 = m.logits(in.data(), B, T), l2 = plain.logits(in.data(), B, T);
  for (int64_t i = 0; i < l1.numel(); ++i) ASSERT_EQ(l1.data<float>()[i], l2.data<float>()[i]) << i;
  randomise_b(m.params());
  const LossSum s = m.forward_backward(in.data(), tg.data(), B, T, 1.0 / (B * T));
  EXPECT_TRUE(std::isfinite(s.sum));
  double g = 0;
  for (int64_t i = 0; i < m.params().total_numel(); ++i)
    g += std::abs(m.params().flat_grads().data<float>()[i]);
  EXPECT_TRUE(std::isfinite(g));
  EXPECT_GT(g, 0.0);
}

// With trained (non-zero) adapters the model equals the base with
// W + scale B A merged in, and the adapter gradients follow from the merged
// weight's: dB = scale dW A^T, dA = scale B^T dW.
TEST_P(LoraBoth, MatchesMergedWeightsAndGradients) {
  ModelConfig c = with_lora(base(), {"all-linear"});
  c.lora.rslora = GetParam();  // LLaMA: alpha / sqrt(r)
  Allocator a1, a2;
  Transformer m(c, a1), merged(base(), a2);
  m.base_params().init_random(5);
  m.params().init_random(6);
  randomise_b(m.params());
  merged.params().init_random(5);
  EXPECT_EQ(merge_lora(m.params(), merged.params(), c.lora.scale()),
            static_cast<int>(c.n_layers * lora_linears(c).size()));
  const int64_t B = 2, T = 7;
  auto in = tokens(B * T, c.vocab_size, 1), tg = tokens(B * T, c.vocab_size, 2);
  Tensor l1 = m.logits(in.data(), B, T), l2 = merged.logits(in.data(), B, T);
  double diff = 0, base_diff = 0;
  Allocator a3;
  Transformer plain(base(), a3);
  plain.params().init_random(5);
  Tensor l3 = plain.logits(in.data(), B, T);
  for (int64_t i = 0; i < l1.numel(); ++i) {
    diff = std::max(diff, std::abs(double(l1.data<float>()[i]) - l2.data<float>()[i]));
    base_diff = std::max(base_diff, std::abs(double(l1.data<float>()[i]) - l3.data<float>()[i]));
  }
  EXPECT_LT(diff, 1e-5);
  EXPECT_GT(base_diff, 1e-3);  // the adapters do change the output

  m.forward_backward(in.data(), tg.data(), B, T, 1.0 / (B * T));
  merged.forward_backward(in.data(), tg.data(), B, T, 1.0 / (B * T));
  const ParameterSet& ad = m.params();
  const double s = c.lora.scale();
  for (int i = 0; i < ad.size(); ++i) {
    const std::string& name = ad.spec(i).name;
    if (name.back() != 'A') continue;
    const std::string stem = name.substr(0, name.size() - 7);
    const int bi = ad.find(stem + ".lora_B");
    const int wi = merged.params().find(stem + ".weight");
    const int64_t r = ad.spec(i).shape[0], in_f = ad.spec(i).shape[1];
    const int64_t out_f = ad.spec(bi).shape[0];
    const float* A = ad.value(ParamRef{i});
    const float* Bv = ad.value(ParamRef{bi});
    const float* dW = merged.params().grad(ParamRef{wi});
    double err = 0, mag = 1e-12;
    for (int64_t o = 0; o < out_f; ++o)
      for (int64_t k = 0; k < r; ++k) {
        double want = 0;
        for (int64_t j = 0; j < in_f; ++j) want += dW[o * in_f + j] * A[k * in_f + j];
        want *= s;
        err = std::max(err, std::abs(want - ad.grad(ParamRef{bi})[o * r + k]));
        mag = std::max(mag, std::abs(want));
      }
    for (int64_t k = 0; k < r; ++k)
      for (int64_t j = 0; j < in_f; ++j) {
        double want = 0;
        for (int64_t o = 0; o < out_f; ++o) want += Bv[o * r + k] * dW[o * in_f + j];
        want *= s;
        err = std::max(err, std::abs(want - ad.grad(ParamRef{i})[k * in_f + j]));
        mag = std::max(mag, std::abs(want));
      }
    EXPECT_LT(err / mag, 1e-4) << stem;
  }
}

// Adapter dropout acts in training only: evaluation equals the no-dropout model.
TEST_P(LoraBoth, DropoutOnlyInTraining) {
  ModelConfig c = with_lora(base(), {"q", "v"});
  ModelConfig cd = c;
  cd.lora.dropout = 0.3;
  Allocator a1, a2;
  Transformer m(c, a1), md(cd, a2);
  for (Transformer* t : {&m, &md}) {
    t->base_params().init_random(5);
    t->params().init_random(6);
    randomise_b(t->params());
  }
  const int64_t B = 2, T = 7;
  auto in = tokens(B * T, c.vocab_size, 1), tg = tokens(B * T, c.vocab_size, 2);
  EXPECT_EQ(m.forward_loss(in.data(), tg.data(), B, T).sum,
            md.forward_loss(in.data(), tg.data(), B, T).sum);
  const LossSum l0 = m.forward_backward(in.data(), tg.data(), B, T, 1.0, DropoutKey{7, 0});
  const LossSum l1 = md.forward_backward(in.data(), tg.data(), B, T, 1.0, DropoutKey{7, 0});
  EXPECT_NE(l0.sum, l1.sum);
}

INSTANTIATE_TEST_SUITE_P(Families, LoraBoth, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "llama" : "gpt2"; });

}  // namespace
}  // namespace parallm
