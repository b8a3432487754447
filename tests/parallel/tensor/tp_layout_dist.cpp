// Layout invariance of tensor parallelism (DESIGN principle 1): every layout
// tp x dp equal to the world size (tp in {1, 2, 4}, dp in {1, 2}, sequence
// parallel on and off) follows the one-process trajectory for 20 steps with
// gradient accumulation and active clipping: per-step losses and gradient
// norms, and every parameter assembled from its shards, within the bounds
// docs/testing.md derives, for GPT-2 (tied embedding, learned positions, biases) and LLaMA
// (grouped-query heads, SwiGLU, untied head), with an odd vocabulary (1003)
// that tp 2 and 4 pad. Communication counters must be zero without tp and
// show sp traffic exactly when sequence parallelism is on. With dropout on
// (0.1 on attention probabilities and hidden outputs) the masks are keyed by
// global sample, head, position and channel, so the same holds. Every
// layout (and ZeRO with tp) also runs under plain SGD, which a gradient
// shard off by a constant factor moves (Adam would not notice). Qwen2
// (LLaMA with q/k/v biases) runs too, also with one replicated kv head.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "common/trajectory_match.h"
#include "tp_env.h"

namespace parallm::tp_test {
namespace {

ModelConfig family_model(const std::string& family, bool dropout) {
  ModelConfig m = family == "gpt2" ? tp_gpt2() : tp_llama();
  // Fewer key/value groups than tp ranks: "llama-kv2" replicates each group
  // over 2 ranks at tp 4, "llama-kv1" (multi-query) over every tp rank.
  if (family == "llama-kv2") m.n_kv_heads = 2;
  if (family == "llama-kv1" || family == "qwen2-kv1") m.n_kv_heads = 1;
  if (family.starts_with("qwen2")) m.qkv_bias = true;  // q/k/v biases, split like their outputs
  if (dropout) m.attn_dropout = m.hidden_dropout = 0.1;
  return m;
}

// SGD (lr 0.1, tp_dist_main.cpp) runs 8 steps: a wrong gradient scale shows
// from the first update on, and the suite stays short.
int steps_for(const std::string& optimizer) { return optimizer == "sgd" ? 8 : 20; }

const TpRunResult& reference(const std::string& family, bool dropout,
                             const std::string& optimizer) {
  static std::map<std::string, TpRunResult> cache;
  const std::string key = family + (dropout ? "+dropout" : "") + "+" + optimizer;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  return cache[key] = tp_train_run(family_model(family, dropout), TpLayout{.optimizer = optimizer},
                                   steps_for(optimizer));
}

void expect_same_trajectory(const std::string& family, const TpLayout& l, bool dropout = false) {
  const TpRunResult& ref = reference(family, dropout, l.optimizer);
  TpRunResult got = tp_train_run(family_model(family, dropout), l, steps_for(l.optimizer));
  if (env().world->rank() >= l.tp * l.dp) return;  // not in this layout
  const std::string what = family + (dropout ? " dropout " : " ") + l.name();
  ASSERT_EQ(got.losses.size(), ref.losses.size()) << what;
  for (size_t s = 0; s < ref.losses.size(); ++s) {
    if (l.tp > 1) {
      EXPECT_GT(got.tp_bytes[s], 0) << what;
      EXPECT_EQ(got.sp_bytes[s] > 0, l.sp) << what;
      EXPECT_GT(got.tp_comm_ms[s], 0.0) << what;  // the collectives are timed
    } else {
      EXPECT_EQ(got.tp_bytes[s] + got.sp_bytes[s], 0) << what;
      EXPECT_EQ(got.tp_comm_ms[s], 0.0) << what;
    }
  }
  // Padded vocabulary rows are not compared.
  const testing::Trajectory r = testing::trajectory_of(ref);
  testing::expect_same_trajectory(testing::run_arithmetic(ref.config, family_model(family, dropout),
                                                          r, testing::element_count(r.params)),
                                  r, testing::trajectory_of(got), what);
}

std::vector<TpLayout> layouts_for(int world) {
  std::vector<TpLayout> out;
  for (int tp : {1, 2, 4})
    for (int dp : {1, 2})
      if (tp * dp == world)
        for (bool sp : {false, true})
          if (tp > 1 || !sp) out.push_back(TpLayout{.tp = tp, .dp = dp, .sp = sp});
  return out;
}

TEST(TensorParallelLayout, Gpt2MatchesOneProcess) {
  for (const TpLayout& l : layouts_for(env().world->size())) expect_same_trajectory("gpt2", l);
}

TEST(TensorParallelLayout, LlamaMatchesOneProcess) {
  for (const TpLayout& l : layouts_for(env().world->size())) expect_same_trajectory("llama", l);
}

TEST(TensorParallelLayout, SgdMatchesOneProcess) {
  for (const char* family : {"gpt2", "llama"})
    for (TpLayout l : layouts_for(env().world->size())) {
      l.optimizer = "sgd";
      expect_same_trajectory(family, l);
    }
}

TEST(TensorParallelLayout, ReplicatedKeyValueHeadsMatchOneProcess) {
  for (const char* family : {"llama-kv2", "llama-kv1"})
    for (const TpLayout& l : layouts_for(env().world->size()))
      if (l.tp > 1) expect_same_trajectory(family, l);
}

// Qwen2's q/k/v biases: split with the heads, and with one key/value head
// replicated over the tp ranks (its bias gradient summed over them).
TEST(TensorParallelLayout, QkvBiasMatchesOneProcess) {
  for (const char* family : {"qwen2", "qwen2-kv1"})
    for (const TpLayout& l : layouts_for(env().world->size()))
      if (l.tp > 1 || family == std::string("qwen2")) expect_same_trajectory(family, l);
}

TEST(TensorParallelLayout, DropoutMatchesOneProcess) {
  for (const char* family : {"gpt2", "llama"})
    for (const TpLayout& l : layouts_for(env().world->size()))
      expect_same_trajectory(family, l, /*dropout=*/true);
}

}  // namespace
}  // namespace parallm::tp_test

namespace parallm::tp_test {
namespace {

// ZeRO over the dp group of a tp x dp grid: each dp group holds one tp
// rank's shards, so the stages apply unchanged.
TEST(TensorParallelLayout, ZeroStagesWithTp) {
  if (env().world->size() != 4) GTEST_SKIP() << "runs at np 4 (tp 2 x dp 2)";
  for (int zero : {1, 2, 3})
    for (const char* family : {"gpt2", "llama"})
      for (const char* opt : {"adamw", "sgd"})
        expect_same_trajectory(
            family, TpLayout{.tp = 2, .dp = 2, .sp = true, .zero = zero, .optimizer = opt});
}

}  // namespace
}  // namespace parallm::tp_test

namespace parallm::tp_test {
namespace {

// Every optimizer under tp 2 (sp on; at np 4 with dp 2 and ZeRO-1): Muon
// sums each matrix's update over the ZeRO owners, all-gathers it over tp,
// orthogonalises it whole and keeps its slice, so it follows the
// one-process run like the element-wise optimizers. LLaMA (column- and
// row-parallel matrices, GQA).
TEST(TensorParallelLayout, OptimizersMatchOneProcess) {
  const int world = env().world->size();
  if (world != 2 && world != 4) GTEST_SKIP() << "runs at np 2 (tp 2) and np 4 (tp 2 x dp 2)";
  for (const char* opt : {"momentum", "adam", "muon"}) {  // sgd: SgdMatchesOneProcess
    TpLayout l{.tp = 2, .dp = world / 2, .sp = true, .zero = world == 4 ? 1 : 0, .optimizer = opt};
    expect_same_trajectory("llama", l, false);
  }
}

}  // namespace
}  // namespace parallm::tp_test
