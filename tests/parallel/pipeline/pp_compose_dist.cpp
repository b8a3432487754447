// Pipeline parallelism composed with the other features: recomputation
// (selective, full) under every schedule that defers work (1F1B, ZB-H1's
// B/W split, interleaved) leaves every loss and parameter BIT-identical to
// the same pipeline layout without it; bf16 under pp follows the
// one-process bf16 run within the tolerance the tp precision test uses
// (GEMM inputs rounded identically; only fp32 summation order differs);
// Muon and SGD with momentum under pp follow their one-process runs (Muon
// orthogonalises whole matrices, which a stage holds whole).
#include <gtest/gtest.h>

#include <cmath>

#include "pp_env.h"

namespace parallm::pp_test {
namespace {

void expect_identical(const PpRunResult& a, const PpRunResult& b, const std::string& what) {
  ASSERT_EQ(a.losses.size(), b.losses.size()) << what;
  for (size_t s = 0; s < a.losses.size(); ++s) EXPECT_EQ(a.losses[s], b.losses[s]) << what << s;
  ASSERT_EQ(a.params.size(), b.params.size()) << what;
  for (const auto& [name, v] : a.params) EXPECT_EQ(v, b.params.at(name)) << what << ": " << name;
}

// Losses within rel of the reference at every step; this rank's parameters
// within rel of the same names there, norm-wise.
void expect_close(const PpRunResult& got, const PpRunResult& ref, double rel,
                  const std::string& what) {
  ASSERT_EQ(got.losses.size(), ref.losses.size()) << what;
  for (size_t s = 0; s < ref.losses.size(); ++s)
    EXPECT_NEAR(got.losses[s], ref.losses[s], rel * std::abs(ref.losses[s])) << what << s;
  double ss = 0.0, dd = 0.0;
  for (const auto& [name, g] : got.params) {
    const std::vector<float>& r = ref.params.at(name);
    for (size_t i = 0; i < r.size(); ++i) {
      ss += double(r[i]) * r[i];
      dd += (double(g[i]) - r[i]) * (double(g[i]) - r[i]);
    }
  }
  EXPECT_LE(std::sqrt(dd / ss), rel) << what << ": relative distance of the parameters";
}

PpLayout pipeline(int pp, const char* schedule, int m) {
  PpLayout l{.pp = pp, .schedule = schedule, .micro_batches = m};
  if (std::string(schedule) == "interleaved") l.virtual_stages = 2;
  return l;
}

TEST(PipelineCompose, RecomputeIsBitIdentical) {
  const int pp = env().world->size() >= 4 ? 4 : 2;
  if (env().world->size() < 2) GTEST_SKIP() << "needs >= 2 ranks";
  for (const char* family : {"gpt2", "llama"})
    for (const char* schedule : {"1f1b", "zb", "interleaved"}) {
      const ModelConfig model = family == std::string("gpt2") ? pp_gpt2() : pp_llama();
      PpLayout l = pipeline(pp, schedule, pp);
      const PpRunResult none = pp_train_run(model, l, 4);
      for (Recompute r : {Recompute::Selective, Recompute::Full}) {
        l.recompute = r;
        const PpRunResult got = pp_train_run(model, l, 4);
        if (!got.ran) continue;
        expect_identical(got, none, std::string(family) + " " + l.name());
        // Recomputation really ran inside the stages: full never keeps more,
        // and the first stage, which holds the most micro-batches in flight,
        // keeps less (under ZB the last stage's peak is its deferred-dW
        // copies, the same either way). Peaks are on the logging rank.
        if (r == Recompute::Full && !got.peak_activation.empty()) {
          const auto& full = got.peak_activation.back();
          const auto& base = none.peak_activation.back();
          for (size_t s = 0; s < full.size(); ++s)
            EXPECT_LE(full[s], base[s]) << family << " " << l.name() << ", stage " << s;
          EXPECT_LT(full[0], base[0]) << family << " " << l.name() << ", stage 0";
        }
      }
    }
}

TEST(PipelineCompose, Bf16FollowsOneProcessBf16) {
  if (env().world->size() < 2) GTEST_SKIP() << "needs >= 2 ranks";
  PpLayout one{.micro_batches = 2, .precision = Precision::BF16};
  const PpRunResult ref = pp_train_run(pp_llama(), one);
  PpLayout l = pipeline(2, "zb", 2);
  l.precision = Precision::BF16;
  const PpRunResult got = pp_train_run(pp_llama(), l);
  if (got.ran) expect_close(got, ref, 2e-3, l.name());
}

TEST(PipelineCompose, OptimizersFollowOneProcess) {
  if (env().world->size() < 2) GTEST_SKIP() << "needs >= 2 ranks";
  for (const char* opt : {"momentum", "muon"}) {
    PpLayout one{.micro_batches = 2, .optimizer = opt};
    const PpRunResult ref = pp_train_run(pp_gpt2(), one);
    PpLayout l = pipeline(2, "1f1b", 2);
    l.optimizer = opt;
    const PpRunResult got = pp_train_run(pp_gpt2(), l);
    if (got.ran) expect_close(got, ref, 1e-5, l.name());
  }
}

}  // namespace
}  // namespace parallm::pp_test
