// What the runtime measures (np 2, pp 2), from the allocator and the
// recorded timeline:
// - Peak activation bytes per stage (tag activation: saved state, received
//   activations, deferred dW inputs): under GPipe they grow with m (every
//   micro-batch is in flight before the first backward); under 1F1B stage s
//   holds at most pp - s micro-batches, so the peak does not depend on m.
// - Bubble fraction of each step (median over steps after the first) on a
//   balanced model: GPipe and 1F1B near (p-1)/(m+p-1), interleaved
//   clearly below 1F1B, ZB-H1 below it (replayed bubble, see the test).
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>

#include <cmath>
#include <filesystem>

#include "data/token_shard.h"

#include "pp_env.h"

namespace parallm::pp_test {
namespace {

int64_t peak_of(const std::string& schedule, int m, int stage) {
  PpLayout l{.pp = 2, .schedule = schedule, .micro_batches = m};
  PpRunResult r = pp_train_run(pp_llama(), l, /*steps=*/1);
  std::vector<int64_t> peaks(2, 0);
  if (!r.peak_activation.empty()) peaks = r.peak_activation[0];
  env().world->broadcast(peaks.data(), 2, DType::I64, 0);  // the logging rank's view
  return peaks[stage];
}

TEST(PipelineMeasure, ActivationPeakBoundedUnder1F1B) {
  if (env().world->size() != 2) GTEST_SKIP() << "runs at np 2";
  for (int stage : {0, 1}) {
    const int64_t g2 = peak_of("gpipe", 2, stage), g4 = peak_of("gpipe", 4, stage),
                  g8 = peak_of("gpipe", 8, stage);
    const int64_t f2 = peak_of("1f1b", 2, stage), f8 = peak_of("1f1b", 8, stage);
    const double per_mb = (g8 - g4) / 4.0;  // one micro-batch's held activations
    ASSERT_GT(per_mb, 0) << "stage " << stage;
    // GPipe: linear in m.
    EXPECT_NEAR(static_cast<double>(g4 - g2), 2 * per_mb, 0.05 * per_mb) << "stage " << stage;
    // 1F1B: at most pp - stage micro-batches, whatever m.
    const double fixed = g2 - 2 * per_mb;  // what does not scale with micro-batches
    EXPECT_LE(static_cast<double>(f8), fixed + (2 - stage) * per_mb + 0.05 * per_mb)
        << "stage " << stage << ": 1f1b m 8 " << f8 << ", one micro-batch " << per_mb;
    EXPECT_EQ(f8, f2) << "stage " << stage;
    EXPECT_GT(g8, 2 * f8) << "stage " << stage;
  }
}

// A shard over a 32-token vocabulary, so the LM head costs ~2% of a stage.
std::string small_vocab_shard() {
  static std::string path;
  if (!path.empty()) return path;
  std::vector<int32_t> tokens(20000);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<int32_t>((i * 7 + i / 13) % 32);
  path = (std::filesystem::temp_directory_path() /
          ("parallm_pp_small_" + std::to_string(getpid()) + ".bin"))
             .string();
  write_token_shard(path, tokens);
  return path;
}

struct Bubble {
  double wall = 0, replayed = 0;  // medians over the steps after the first
};

Bubble median_bubble(const std::string& schedule, int m, int v) {
  // hidden 128, seq 64, 4 sequences per micro-batch (compute ~10 ms per
  // pass, so transfers and timer resolution are small); 8 layers, 4 per
  // stage; vocabulary 32, so the embedding and head add next to nothing.
  ModelConfig c = pp_llama();
  c.vocab_size = 32;
  c.hidden = 128;
  c.n_heads = 4;
  c.head_dim = 32;
  c.intermediate = 512;
  c.n_layers = 8;
  PpLayout l{.pp = 2,
             .schedule = schedule,
             .virtual_stages = v,
             .micro_batches = m,
             .micro_batch_size = 4,
             .seq_len = 64};
  l.shard = small_vocab_shard();
  PpRunResult r = pp_train_run(c, l, /*steps=*/5);
  auto median = [](const std::vector<double>& x) {
    if (x.size() < 2) return 0.0;
    std::vector<double> b(x.begin() + 1, x.end());
    std::sort(b.begin(), b.end());
    return b[b.size() / 2];
  };
  double out[2] = {median(r.bubble), median(r.bubble_replayed)};
  env().world->broadcast(out, 2, DType::F64, 0);  // from the logging rank
  return {out[0], out[1]};
}

// The wall-clock bubble is printed; on this shared 2-core VM (load average
// often above 10) it carries OS descheduling gaps and passes that take twice
// as long when another process shares the core, so the assertions use the
// replayed bubble (pipeline_step.h): the executed schedule's dependencies
// with the median pass durations measured in the same run. For GPipe and
// 1F1B on equal stages that is the formula whatever the durations (a check
// of the replay, not of the machine), and so is interleaved's 1/9 (every
// chunk pass has the same F + B). ZB-H1's depends on the measured W share
// (which includes the deferred-input copies): (p-1)(F+B-W) against 1F1B's
// (p-1)(F+B+W), below 1F1B's whenever W > 0, but how far below moves with
// the load (0.081 on a quiet machine, 0.123 under ctest -j2 beside other
// builds), so ZB-H1 is held to the ordering and its figure printed.
TEST(PipelineMeasure, BubbleFraction) {
  if (env().world->size() != 2) GTEST_SKIP() << "runs at np 2";
  const int m = 4;
  const double theory = 1.0 / (m + 1);  // (p-1)/(m+p-1), p = 2
  const Bubble gpipe = median_bubble("gpipe", m, 1), f1b = median_bubble("1f1b", m, 1);
  const Bubble zb = median_bubble("zb", m, 1), inter = median_bubble("interleaved", m, 2);
  std::filesystem::remove(small_vocab_shard());
  std::printf(
      "bubble, pp 2, m %d (wall clock / replayed): gpipe %.3f / %.3f, 1f1b %.3f / %.3f, "
      "interleaved V 2 %.3f / %.3f, zb %.3f / %.3f; theory %.3f, %.3f, %.3f, %.3f "
      "(zb with F = B = W)\n",
      m, gpipe.wall, gpipe.replayed, f1b.wall, f1b.replayed, inter.wall, inter.replayed, zb.wall,
      zb.replayed, theory, theory, 1.0 / (2 * m + 1), 1.0 / (3 * m + 1));
  EXPECT_NEAR(gpipe.replayed, theory, 0.02);
  EXPECT_NEAR(f1b.replayed, theory, 0.02);
  EXPECT_LT(inter.replayed, f1b.replayed - 0.03);  // theory: 1/9 against 1/5
  EXPECT_LT(zb.replayed, f1b.replayed);            // theory: 1/13 with F = B = W
}

}  // namespace
}  // namespace parallm::pp_test
