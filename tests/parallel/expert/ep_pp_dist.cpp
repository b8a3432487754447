// MoE under pipeline parallelism (docs/moe.md): 20 steps of 1F1B with two
// stages (one transformer layer each) against the one-process run, on 2
// ranks pp 2 alone, on 4 ranks pp 2 x dp 2 x ep 2 (each stage's experts
// split over ep) and pp 2 x dp 2 without ep, on 8 ranks pp 2 x dp 4 x ep 2
// (expert gradients summed over expert-dp 2). Losses, gradient norms, aux and z losses and every
// parameter tensor each rank's stage holds within the derived bounds (docs/testing.md),
// per-expert load and dropped fraction equal (the stats are reduced over pp); the stages of a
// pipeline together hold every parameter (ep_cases.h).
#include "ep_cases.h"

namespace parallm::ep_test {
namespace {

// GPT-2: both layers MoE (one per stage); LLaMA: stage 0's layer MoE,
// stage 1's dense. Top-1 and top-2, dropless and capacity drops by
// position and by probability.
const auto& kPpCases = kFourCases;

TEST(MoePipeline, MatchesOneProcess) {
  // 2 ranks: pp 2. 4 ranks: pp 2 x dp 2 x ep 2 (expert-dp 1), and pp 2 x
  // dp 2 without ep (the experts are then dense parameters, in the dp
  // buckets). 8 ranks: pp 2 x dp 4 x ep 2 (expert-dp 2: each stage's expert
  // gradients summed over expert-dp apart from the dense buckets), for the
  // two dropping cases (8 ranks share the cores).
  const int n = env().world->size();
  ASSERT_TRUE(n == 2 || n == 4 || n == 8) << "run at 2, 4 or 8 ranks, not " << n;
  for (size_t i = 0; i < std::size(kPpCases); ++i) {
    const Case& c = kPpCases[i];
    if (n == 8 && !c.capacity) continue;
    const RunResult ref = train_run(model(c), 0);
    if (n == 2) {
      expect_same_trajectory(c, ref, train_layout(model(c), Layout{.pp = 2}), c.name() + ", pp 2");
      continue;
    }
    for (int ep : {2, 1}) {
      if (n == 8 && ep == 1) continue;
      expect_same_trajectory(c, ref, train_layout(model(c), Layout{.ep = ep, .pp = 2}),
                             fmt::format("{}, pp 2 x dp {} x ep {}", c.name(), n / 2, ep));
    }
  }
}

}  // namespace
}  // namespace parallm::ep_test
