// The Transformer as pipeline stages, in one process: two stage models
// (layers 0-1 with the embedding; layers 2-3 with the head) chained by hand
// through chunk_forward / chunk_backward give the whole model's loss and
// gradients (the tied table's two halves summed), with parameter names and
// initial values of the whole model; the zero-bubble split (B, then W)
// adds the same gradients as the whole backward; the per-chunk state is
// released after backward.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/test_models.h"
#include "model/transformer.h"

namespace parallm {
namespace {

struct Tokens {
  std::vector<int32_t> in, tg;
};
Tokens make_tokens(int64_t n, int64_t vocab) {
  Tokens t;
  for (int64_t i = 0; i < n; ++i) {
    t.in.push_back(static_cast<int32_t>((i * 37 + 11) % vocab));
    t.tg.push_back(static_cast<int32_t>((i * 53 + 5) % vocab));
  }
  return t;
}

double max_rel(const float* a, const float* b, int64_t n) {
  double worst = 0, scale = 1e-6;
  for (int64_t i = 0; i < n; ++i) scale = std::max(scale, double(std::abs(b[i])));
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(double(a[i]) - b[i]) / scale);
  return worst;
}

void check_stages_match_whole(ModelConfig cfg, bool split_backward) {
  cfg.n_layers = 4;
  const int64_t B = 2, T = 8;
  const double scale = 1.0 / (2 * B * T);
  Allocator alloc;
  Transformer whole(cfg, alloc);
  whole.params().init_random(9);
  Transformer s0(cfg, alloc, {}, ModelStage{{{0, 2}}, true, false});
  Transformer s1(cfg, alloc, {}, ModelStage{{{2, 2}}, false, true});
  s0.params().init_random(9);
  s1.params().init_random(9);
  // Same names, same initial values.
  for (Transformer* s : {&s0, &s1})
    for (int i = 0; i < s->params().size(); ++i) {
      const int j = whole.params().find(s->params().spec(i).name);
      ASSERT_GE(j, 0) << s->params().spec(i).name;
      ASSERT_EQ(max_rel(s->params().value_tensor(i).data<float>(),
                        whole.params().value_tensor(j).data<float>(), whole.params().numel(j)),
                0.0);
    }
  LossSum whole_loss, stage_loss;
  whole.params().zero_grads();
  s0.params().zero_grads();
  s1.params().zero_grads();
  for (int m = 0; m < 2; ++m) {  // two micro-batches, forwards first (GPipe order)
    Tokens t = make_tokens(B * T, cfg.vocab_size);
    for (auto& x : t.in) x = (x + 17 * m) % static_cast<int32_t>(cfg.vocab_size);
    whole_loss.sum += whole.forward_backward(t.in.data(), t.tg.data(), B, T, scale).sum;
    Transformer::StageBatch b{t.in.data(), t.tg.data(), B, T, scale, {}};
    Tensor act = s0.chunk_forward(0, m, b, {});
    ASSERT_EQ(act.numel(), B * T * cfg.hidden);
    EXPECT_FALSE(s1.chunk_forward(0, m, b, act).defined());
    LossSum l;
    Tensor d = s1.chunk_backward(0, m, {}, split_backward, &l);
    stage_loss.sum += l.sum;
    if (split_backward) s1.chunk_backward_weights(0, m);
    EXPECT_FALSE(s0.chunk_backward(0, m, d, split_backward, nullptr).defined());
    if (split_backward) s0.chunk_backward_weights(0, m);
  }
  EXPECT_EQ(s0.chunks_in_flight(), 0);
  EXPECT_EQ(s1.chunks_in_flight(), 0);
  EXPECT_NEAR(stage_loss.sum, whole_loss.sum, 1e-6 * std::abs(whole_loss.sum));
  // Gradients by name; the tied table's halves summed as the embedding group does.
  for (int j = 0; j < whole.params().size(); ++j) {
    const std::string& name = whole.params().spec(j).name;
    const int64_t n = whole.params().numel(j);
    std::vector<float> g(static_cast<size_t>(n), 0.0f);
    int holders = 0;
    for (Transformer* s : {&s0, &s1}) {
      const int i = s->params().find(name);
      if (i < 0) continue;
      ++holders;
      const float* p = s->params().grad_tensor(i).data<float>();
      for (int64_t k = 0; k < n; ++k) g[k] += p[k];
    }
    EXPECT_EQ(holders, name == "embed.weight" && cfg.tie_embeddings ? 2 : 1) << name;
    EXPECT_LT(max_rel(g.data(), whole.params().grad_tensor(j).data<float>(), n), 1e-5) << name;
  }
}

TEST(TransformerStage, Gpt2StagesMatchWholeModel) {
  check_stages_match_whole(testing::tiny_gpt2(), false);
}
TEST(TransformerStage, LlamaStagesMatchWholeModel) {
  check_stages_match_whole(testing::tiny_llama(), false);
}
TEST(TransformerStage, ZeroBubbleSplitMatchesWholeBackward) {
  check_stages_match_whole(testing::tiny_gpt2(), true);
  check_stages_match_whole(testing::tiny_llama(), true);
}

TEST(TransformerStage, WholeOnlyCallsRejectAStage) {
  Allocator alloc;
  ModelConfig cfg = testing::tiny_gpt2();
  Transformer s0(cfg, alloc, {}, ModelStage{{{0, 1}}, true, false});
  std::vector<int32_t> t(8, 1);
  EXPECT_THROW(s0.forward_loss(t.data(), t.data(), 1, 8), Error);
  EXPECT_THROW(Transformer(cfg, alloc, {}, ModelStage{{{1, 5}}, false, true}), Error);
}

}  // namespace
}  // namespace parallm
