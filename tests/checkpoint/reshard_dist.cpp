// Reshard: save under one layout at step 10 (--exit-interval), resume under
// another with --load to step 20. The continued losses equal the source
// layout's uninterrupted run within 1e-5 relative (fp32 sums in another
// order), and the final checkpoint's values stay close to it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "ckpt_env.h"
#include "io/checkpoint/checkpoint_dir.h"

namespace parallm::ckpt_test {
namespace {

struct Pair {
  Layout from, to;
};

class Reshard : public ::testing::TestWithParam<Pair> {};

TEST_P(Reshard, ContinuesTheRun) {
  const Pair p = GetParam();
  const Reference& ref = reference(p.from);
  const std::string dir = env().scratch + "/reshard_" + p.from.name() + "_to_" + p.to.name();
  TrainJobOptions first = job(p.from, dir, dir + "_a.jsonl");
  first.run.train.checkpoint.exit_interval = 10;
  run_job(first, p.from);
  TrainJobOptions second = job(p.to, dir, dir + "_b.jsonl");
  second.run.train.checkpoint.load_dir = dir;
  run_job(second, p.to);
  if (env().world->rank() != 0) return;

  auto b = read_losses(dir + "_b.jsonl");
  ASSERT_EQ(b.size(), 10u);
  double worst_rel = 0;
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(b[i].first, ref.losses[10 + i].first);
    const double want = ref.losses[10 + i].second;
    EXPECT_NEAR(b[i].second, want, 1e-5 * std::abs(want)) << "step " << 10 + i;
    worst_rel = std::max(worst_rel, std::abs(b[i].second - want) / std::abs(want));
  }
  std::printf("  %s -> %s: largest relative loss difference %.2e\n", p.from.name().c_str(),
              p.to.name().c_str(), worst_rel);
  auto want = consolidate(ref.checkpoint, "param");
  auto got = consolidate(dir + "/" + step_dir_name(20), "param");
  for (const auto& [name, values] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    // Padded vocabulary tables differ in rows past the vocabulary only.
    const size_t n = std::min(values.size(), got[name].size());
    double worst = 0;
    for (size_t k = 0; k < n && k < 1001 * 32; ++k)
      worst = std::max(worst, static_cast<double>(std::abs(values[k] - got[name][k])));
    EXPECT_LT(worst, 1e-4) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, Reshard,
    ::testing::Values(Pair{{.dp = 4}, {.dp = 2, .tp = 2}}, Pair{{.tp = 2}, {.dp = 2, .zero = 2}},
                      Pair{{.dp = 2, .zero = 3}, {}},
                      Pair{{.dp = 2, .tp = 2, .zero = 1, .sp = true}, {.tp = 4}},
                      Pair{{.dp = 2, .ps = true}, {.dp = 4, .zero = 3}},
                      Pair{{}, {.dp = 2, .tp = 2, .zero = 2}},
                      Pair{{.tp = 2, .llama = true}, {.dp = 2, .zero = 3, .llama = true}},
                      // 2 key/value heads over tp 4: each kv shard held by two ranks
                      Pair{{.tp = 4, .llama = true}, {.dp = 2, .zero = 1, .llama = true}},
                      Pair{{.dp = 4, .zero = 2, .llama = true}, {.tp = 4, .llama = true}},
                      // Pipeline stages, out of and into every other layout
                      Pair{{.tp = 2, .pp = 2}, {.dp = 4, .zero = 2}},
                      Pair{{.dp = 4, .layers = 4},
                           {.dp = 2,
                            .zero = 1,
                            .pp = 2,
                            .schedule = "interleaved",
                            .virtual_stages = 2,
                            .layers = 4}},
                      Pair{{.pp = 2, .schedule = "gpipe"}, {}}),
    [](const auto& info) { return info.param.from.name() + "_to_" + info.param.to.name(); });

}  // namespace
}  // namespace parallm::ckpt_test
