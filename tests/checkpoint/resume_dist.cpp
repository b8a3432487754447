// Resume is bit-exact: 20 steps uninterrupted against 10 steps with
// --steps 20 --exit-interval 10 and a --resume to 20, in the same layout:
// every per-step loss and the final values and optimizer state (AdamW
// moments; momentum buffers of SGD with momentum and Muon) are identical
// (fp32, dropout on, gradient accumulation on), pipeline stages included.
#include <gtest/gtest.h>

#include "ckpt_env.h"
#include "io/checkpoint/checkpoint_dir.h"
#include "checkpoint/checkpoint_load.h"

namespace parallm::ckpt_test {
namespace {

class Resume : public ::testing::TestWithParam<Layout> {};

TEST_P(Resume, IsBitExact) {
  const Layout l = GetParam();
  const Reference& ref = reference(l);
  const std::string dir = env().scratch + "/resume_" + l.name();
  TrainJobOptions first = job(l, dir, dir + "_a.jsonl");
  first.run.train.checkpoint.exit_interval = 10;
  run_job(first, l);
  TrainJobOptions second = job(l, dir, dir + "_b.jsonl");
  second.run.train.checkpoint.resume = true;
  run_job(second, l);
  if (env().world->rank() != 0) return;

  auto a = read_losses(dir + "_a.jsonl"), b = read_losses(dir + "_b.jsonl");
  ASSERT_EQ(ref.losses.size(), 20u);
  ASSERT_EQ(a.size(), 10u) << "the exit interval must stop the run after step 10";
  ASSERT_EQ(b.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(a[i], ref.losses[i]) << "step " << i;
    EXPECT_EQ(b[i], ref.losses[10 + i]) << "step " << 10 + i;
  }
  // The optimizer's state tensors by torch's names (Muon: momentum for the
  // block matrices, Adam moments for the rest).
  std::vector<std::string> kinds = {"param"};
  if (l.optimizer == "momentum" || l.optimizer == "muon") kinds.push_back("momentum_buffer");
  if (l.optimizer != "momentum") kinds.insert(kinds.end(), {"exp_avg", "exp_avg_sq"});
  for (const std::string& kind : kinds) {
    auto want = consolidate(ref.checkpoint, kind.c_str());
    auto got = consolidate(dir + "/" + step_dir_name(20), kind.c_str());
    ASSERT_EQ(want.size(), got.size()) << kind;
    ASSERT_GT(want.size(), 0u) << kind;
    // GPT-2: 2 embeddings, 16 per block, final norm 2; LLaMA: embedding,
    // 9 per block, final norm, head.
    if (kind == "param" || l.optimizer == "adamw") {
      ASSERT_EQ(want.size(), l.llama ? 1u + 9u * l.layers + 2u : 2u + 16u * l.layers + 2u)
          << kind << ": every tensor of the model";
    }
    for (const auto& [name, values] : want) {
      ASSERT_TRUE(got.count(name)) << kind << " " << name;
      EXPECT_EQ(values, got[name]) << kind << " " << name << " differs after resume";
    }
  }
  OpenedCheckpoint ck = open_checkpoint(dir, nullptr);
  OpenedCheckpoint want = open_checkpoint(ref.checkpoint, nullptr);
  EXPECT_EQ(ck.state.step, 20);
  EXPECT_EQ(ck.state.consumed_samples, 20 * 8);
  // fp16 skips steps: fewer updates than steps, the same as uninterrupted.
  EXPECT_EQ(ck.state.optimizer_step, want.state.optimizer_step);
  EXPECT_EQ(ck.state.updates, want.state.updates);
  EXPECT_EQ(ck.state.loss_scale.scale, want.state.loss_scale.scale);
  EXPECT_EQ(ck.state.loss_scale.growth_tracker, want.state.loss_scale.growth_tracker);
  if (!l.fp16) {
    EXPECT_EQ(want.state.updates, 20);
  } else {
    EXPECT_LT(want.state.updates, 20) << "the planted overflow must skip steps";
    EXPECT_GT(want.state.updates, 10) << "and the scale must come down to let most through";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, Resume,
    ::testing::Values(Layout{}, Layout{.dp = 2}, Layout{.dp = 2, .zero = 1},
                      Layout{.dp = 2, .zero = 3}, Layout{.dp = 4, .zero = 2}, Layout{.tp = 2},
                      Layout{.dp = 2, .tp = 2, .zero = 3, .sp = true}, Layout{.dp = 2, .ps = true},
                      Layout{.dp = 2, .tp = 2, .zero = 1, .llama = true},
                      Layout{.tp = 4, .llama = true},
                      Layout{.dp = 2, .zero = 1, .optimizer = "momentum"},
                      Layout{.dp = 2, .tp = 2, .zero = 1, .llama = true, .optimizer = "muon"},
                      // Pipeline stages (GPT-2's tied table on the first and last)
                      Layout{.dp = 2, .zero = 1, .pp = 2},
                      Layout{.tp = 2, .pp = 2, .schedule = "zb"},
                      // fp16 with skipped steps: the loss scaler resumes mid-window
                      Layout{.dp = 2, .zero = 1, .fp16 = true}),
    [](const auto& info) { return info.param.name(); });

}  // namespace
}  // namespace parallm::ckpt_test
