// Expert parallelism under ZeRO-3 (docs/moe.md): parameters sharded as
// ZeRO-2 shards gradients, dense values over dp and expert values over
// expert-dp, each unit's dense pieces gathered over dp and its expert
// pieces over expert-dp (parallel/zero/zero3.h). 20 steps of every MoE case
// (GPT-2 and LLaMA, top-1 and top-2, dropping and dropless) at ep 2 (2
// ranks: expert-dp 1, experts held whole; 4 ranks: expert-dp 2, so expert
// values really split and are gathered) against the one-process run
// (ep_cases.h); on 4 ranks also tp 2 + sp x dp 2 x ep 2 for one case.
#include "ep_cases.h"

namespace parallm::ep_test {
namespace {

const auto& kCases = kFourCases;

TEST(ExpertParallelZero3, MatchesOneProcess) {
  const int n = env().world->size();
  for (const Case& c : kCases) {
    expect_same_trajectory(c, train_run(model(c), 0), train_run(model(c), 2, 20, /*zero=*/3),
                           fmt::format("{}, ZeRO-3, ep 2 of dp {}", c.name(), n));
  }
}

// On 4 ranks: tp 2 + sp x dp 2 x ep 2 under ZeRO-3 (each tp rank's dp group
// shards its tp shards; experts whole on every tp rank), LLaMA top-1 by
// probability with a gated shared expert (4 heads, 2 key/value heads).
TEST(ExpertParallelZero3, UnderTensorParallelism) {
  const int n = env().world->size();
  if (n < 4) GTEST_SKIP() << "needs tp 2 x dp 2";
  const Case& c = kCases[3];
  const ModelConfig m = tp_shared_model(c);
  const Layout l{.ep = 2, .zero = 3, .tp = 2, .sp = true, .micro = 1};
  expect_same_trajectory(
      c, train_run(m, 0), train_layout(m, l),
      fmt::format("{}, shared expert, tp 2 + sp x ep 2 (dp 2), ZeRO-3", c.name()));
}

}  // namespace
}  // namespace parallm::ep_test
