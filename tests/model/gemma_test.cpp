// Gemma's traits on the whole model (ModelConfig::gemma: GeGLU MLP,
// sqrt(hidden) embedding scale, (1 + w) RMSNorm, head_dim apart from
// hidden / heads, tied head): a fresh model's norms start at w = 0; the
// backward is the gradient of the forward, checked per parameter along its
// own gradient; the KV-cached decode equals the full forward; LoRA on the
// GeGLU MLP equals the merged weights; experts are refused; the catalog's
// gemma-2b has the published parameter count.
#include <gtest/gtest.h>

#include <cmath>

#include "base/rng.h"
#include "common/cached_decode.h"
#include "common/random_tokens.h"
#include "common/test_models.h"
#include "model/lora/lora_merge.h"
#include "model/lora/lora_model.h"
#include "model/model_catalog.h"
#include "model/kv_cache/paged_kv_cache.h"
#include "model/transformer.h"

namespace parallm {
namespace {

using testing::random_tokens;

ModelConfig tiny_gemma() {
  ModelConfig c = testing::tiny_llama();
  c.hf_type = "gemma";
  c.tie_embeddings = true;
  c.head_dim = 16;  // q width 96 against hidden 72
  c.init_std = 0.2;
  return c;
}

bool is_norm(const std::string& name) { return name.find("norm") != std::string::npos; }

// Norm weights away from their zero start, so (1 + w) differs from w and 1.
void randomise_norms(const ParameterSet& ps) {
  for (int i = 0; i < ps.size(); ++i) {
    if (!is_norm(ps.spec(i).name)) continue;
    float* v = ps.value(ParamRef{i});
    const uint64_t key = stream_key(21, ps.spec(i).name);
    for (int64_t j = 0; j < ps.numel(i); ++j) v[j] = static_cast<float>(0.3 * normal_at(key, j));
  }
}

TEST(Gemma, FreshNormsStartAtZero) {
  Allocator a;
  Transformer m(tiny_gemma(), a);
  m.params().init_random(1);
  int norms = 0;
  for (int i = 0; i < m.params().size(); ++i) {
    if (!is_norm(m.params().spec(i).name)) continue;
    ++norms;
    const float* v = m.params().value(ParamRef{i});
    for (int64_t j = 0; j < m.params().numel(i); ++j)
      ASSERT_EQ(v[j], 0.0f) << m.params().spec(i).name;
  }
  EXPECT_EQ(norms, 2 * 2 + 1);                       // two per block and the final norm
  EXPECT_EQ(m.params().find("lm_head.weight"), -1);  // tied
}

// For each parameter p alone, along u = g_p / |g_p|: (L(p + h u) - L(p - h u))
// / 2h = |g_p|. The embedding's covers the sqrt(hidden) scale (and the tied
// head), the norms' the (1 + w) gain, gate / up the GeGLU.
TEST(Gemma, BackwardIsGradientOfForwardPerParameter) {
  Allocator a;
  Transformer m(tiny_gemma(), a);
  m.params().init_random(3);
  randomise_norms(m.params());
  const int64_t B = 2, T = 7;
  const auto in = random_tokens(B * T, m.config().vocab_size, 1);
  const auto tg = random_tokens(B * T, m.config().vocab_size, 2);
  m.params().zero_grads();
  m.forward_backward(in.data(), tg.data(), B, T, 1.0);
  const ParameterSet& ps = m.params();
  for (const char* name :
       {"embed.weight", "layers.0.norm1.weight", "layers.1.norm2.weight", "final_norm.weight",
        "layers.0.mlp.gate.weight", "layers.1.mlp.up.weight", "layers.1.attn.q.weight"}) {
    const int idx = ps.find(name);
    ASSERT_GE(idx, 0) << name;
    const int64_t n = ps.numel(idx);
    const std::vector<float> g(ps.grad(ParamRef{idx}), ps.grad(ParamRef{idx}) + n);
    float* w = ps.value(ParamRef{idx});
    const std::vector<float> w0(w, w + n);
    double norm = 0;
    for (float x : g) norm += double(x) * x;
    norm = std::sqrt(norm);
    ASSERT_GT(norm, 0.0) << name;
    auto loss_at = [&](double h) {
      for (int64_t i = 0; i < n; ++i) w[i] = static_cast<float>(w0[i] + h * g[i] / norm);
      return m.forward_loss(in.data(), tg.data(), B, T).sum;
    };
    const double h = 1e-2;
    const double fd = (loss_at(h) - loss_at(-h)) / (2 * h);
    std::copy(w0.begin(), w0.end(), w);
    EXPECT_NEAR(fd, norm, 0.01 * norm) << name;
  }
}

TEST(Gemma, CachedDecodeEqualsFullForward) {
  Allocator a;
  Transformer m(tiny_gemma(), a);
  m.params().init_random(11);
  randomise_norms(m.params());
  const int64_t V = m.config().vocab_size;
  std::vector<int32_t> seq = random_tokens(5, V, 1);
  PagedKvCache cache(m.config(), m.tp(), 8, 4, a);
  const std::vector<int32_t> table = {3, 0, 6, 1, 7, 2};
  testing::expect_cached_decode_matches_full(m, seq, cache, table, 8);
}

// Adapters on every linear, GeGLU's gate and up included: the logits are the
// merged model's (W + scale B A).
TEST(Gemma, LoraEqualsMergedWeights) {
  ModelConfig c = tiny_gemma();
  c.lora.rank = 4;
  c.lora.alpha = 8.0;
  c.lora.targets = {"all-linear"};
  Allocator a1, a2;
  Transformer m(c, a1), merged(tiny_gemma(), a2);
  m.base_params().init_random(5);
  randomise_norms(m.base_params());
  m.params().init_random(6);
  for (int i = 0; i < m.params().size(); ++i) {  // non-zero B: the adapters matter
    const std::string& name = m.params().spec(i).name;
    if (name.back() != 'B') continue;
    float* v = m.params().value(ParamRef{i});
    const uint64_t key = stream_key(12, name);
    for (int64_t j = 0; j < m.params().numel(i); ++j)
      v[j] = static_cast<float>(0.05 * normal_at(key, j));
  }
  merged.params().init_random(5);
  randomise_norms(merged.params());
  EXPECT_EQ(merge_lora(m.params(), merged.params(), c.lora.scale()),
            static_cast<int>(c.n_layers * lora_linears(c).size()));
  const int64_t B = 2, T = 6;
  const auto in = random_tokens(B * T, c.vocab_size, 3);
  const Tensor l1 = m.logits(in.data(), B, T), l2 = merged.logits(in.data(), B, T);
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < l1.numel(); ++i) {
    diff = std::max(diff, std::abs(double(l1.data<float>()[i]) - l2.data<float>()[i]));
    scale = std::max(scale, std::abs(double(l2.data<float>()[i])));
  }
  EXPECT_LT(diff, 1e-5 * scale);
}

TEST(Gemma, ExpertsAreRefused) {
  ModelConfig c = tiny_gemma();
  c.moe.num_experts = 4;
  try {
    c.validate();
    FAIL() << "Gemma with experts validated";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Gemma with experts (4 of them)"), std::string::npos)
        << e.what();
  }
}

TEST(Gemma, Catalog2bHasThePublishedParameterCount) {
  const ModelConfig c = catalog_model("gemma-2b");
  c.validate();
  EXPECT_TRUE(c.gemma());
  EXPECT_EQ(c.q_dim(), 2048);
  EXPECT_EQ(c.num_parameters(), 2506172416);  // google/gemma-2b, tied head
}

}  // namespace
}  // namespace parallm
