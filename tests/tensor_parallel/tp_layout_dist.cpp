// Layout invariance of tensor parallelism (DESIGN principle 1): every layout
// tp x dp equal to the world size (tp in {1, 2, 4}, dp in {1, 2}, sequence
// parallel on and off) follows the one-process trajectory for 20 steps with
// gradient accumulation and active clipping: per-step losses and gradient
// norms, and every parameter assembled from its shards, within 1e-5
// relative, for GPT-2 (tied embedding, learned positions, biases) and LLaMA
// (grouped-query heads, SwiGLU, untied head), with an odd vocabulary (1003)
// that tp 2 and 4 pad. Communication counters must be zero without tp and
// show sp traffic exactly when sequence parallelism is on. With dropout on
// (0.1 on attention probabilities and hidden outputs) the masks are keyed by
// global sample, head, position and channel, so the same holds.
#include <gtest/gtest.h>

#include <cmath>

#include "tp_env.h"

namespace parallm::tp_test {
namespace {

ModelConfig family_model(const std::string& family, bool dropout) {
  ModelConfig m = family == "gpt2" ? tp_gpt2() : tp_llama();
  // Fewer key/value groups than tp ranks: "llama-kv2" replicates each group
  // over 2 ranks at tp 4, "llama-kv1" (multi-query) over every tp rank.
  if (family == "llama-kv2") m.n_kv_heads = 2;
  if (family == "llama-kv1") m.n_kv_heads = 1;
  if (dropout) m.attn_dropout = m.hidden_dropout = 0.1;
  return m;
}

const TpRunResult& reference(const std::string& family, bool dropout) {
  static std::map<std::string, TpRunResult> cache;
  const std::string key = family + (dropout ? "+dropout" : "");
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  return cache[key] = tp_train_run(family_model(family, dropout), TpLayout{});
}

void expect_same_trajectory(const std::string& family, const TpLayout& l, bool dropout = false) {
  const TpRunResult& ref = reference(family, dropout);
  TpRunResult got = tp_train_run(family_model(family, dropout), l);
  if (env().world->rank() >= l.tp * l.dp) return;  // not in this layout
  const std::string what = family + (dropout ? " dropout " : " ") + l.name();
  ASSERT_EQ(got.losses.size(), ref.losses.size()) << what;
  for (size_t s = 0; s < ref.losses.size(); ++s) {
    EXPECT_NEAR(got.losses[s], ref.losses[s], 1e-5 * std::abs(ref.losses[s]))
        << what << ", step " << s;
    EXPECT_NEAR(got.grad_norms[s], ref.grad_norms[s], 1e-5 * std::abs(ref.grad_norms[s]))
        << what << ", step " << s;
    if (l.tp > 1) {
      EXPECT_GT(got.tp_bytes[s], 0) << what;
      EXPECT_EQ(got.sp_bytes[s] > 0, l.sp) << what;
      EXPECT_GT(got.tp_comm_ms[s], 0.0) << what;  // the collectives are timed
    } else {
      EXPECT_EQ(got.tp_bytes[s] + got.sp_bytes[s], 0) << what;
      EXPECT_EQ(got.tp_comm_ms[s], 0.0) << what;
    }
  }
  // Norm-wise and element-wise (elements near zero: 1e-5 of the RMS), as the
  // data-parallel test does; padded vocabulary rows are not compared.
  double ss = 0.0, dd = 0.0;
  size_t count = 0;
  for (const auto& [name, r] : ref.params) {
    auto it = got.params.find(name);
    ASSERT_TRUE(it != got.params.end()) << what << ": no parameter " << name;
    ASSERT_GE(it->second.size(), r.size()) << what << ": " << name;
    for (size_t i = 0; i < r.size(); ++i) {
      ss += double(r[i]) * r[i];
      const double d = double(it->second[i]) - r[i];
      dd += d * d;
    }
    count += r.size();
  }
  EXPECT_LE(std::sqrt(dd / ss), 1e-5) << what << ": relative distance of the parameters";
  const double elem_tol = 1e-5;
  const double floor = elem_tol * std::sqrt(ss / count);
  for (const auto& [name, r] : ref.params) {
    const std::vector<float>& g = got.params.at(name);
    size_t bad = 0, worst = 0;
    double worst_ratio = 0.0;
    for (size_t i = 0; i < r.size(); ++i) {
      const double tol = std::max(elem_tol * std::abs(r[i]), floor);
      const double ratio = std::abs(double(g[i]) - r[i]) / tol;
      if (ratio > 1.0) ++bad;
      if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
    }
    EXPECT_EQ(bad, 0u) << what << ": " << name << ": " << bad << " elements differ; worst at "
                       << worst << ": " << g[worst] << " vs " << r[worst];
  }
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

TEST(TensorParallelLayout, ReplicatedKeyValueHeadsMatchOneProcess) {
  for (const char* family : {"llama-kv2", "llama-kv1"})
    for (const TpLayout& l : layouts_for(env().world->size()))
      if (l.tp > 1) expect_same_trajectory(family, l);
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
      expect_same_trajectory(family, TpLayout{.tp = 2, .dp = 2, .sp = true, .zero = zero});
}

}  // namespace
}  // namespace parallm::tp_test
