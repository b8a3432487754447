// Expert parallelism under ZeRO-1 and ZeRO-2 (docs/moe.md): dense optimizer state
// sharded over dp, expert state over expert-dp (parallel/zero/
// expert_shards.h). 20 steps of every MoE case at ep 2 (2 ranks: expert-dp
// 1; 4 ranks: expert-dp 2, so expert shards really split) and, on 4 ranks,
// ep 4 for one case, against the one-process run (ep_cases.h); and the
// LLaMA model whose experts go empty in most steps, at ep 2.
#include "ep_cases.h"

namespace parallm::ep_test {
namespace {

const auto& kCases = kFourCases;

TEST(ExpertParallelZero, Zero1MatchesOneProcess) {
  const int n = env().world->size();
  auto check = [&](const Case& c, const RunResult& ref, int ep) {
    expect_same_trajectory(c, ref, train_run(model(c), ep, 20, /*zero=*/1),
                           fmt::format("{}, ZeRO-1, ep {} of dp {}", c.name(), ep, n));
  };
  for (size_t i = 0; i < std::size(kCases); ++i) {
    const Case& c = kCases[i];
    const RunResult ref = train_run(model(c), 0);
    check(c, ref, 2);
    if (n == 4 && i == 1) check(c, ref, 4);
  }
}

TEST(ExpertParallelZero, EmptyExpertsMatchOneProcess) {
  // ep 2: at 4 ranks expert-dp 2, so the expert state of empty experts is
  // sharded too.
  const int n = env().world->size();
  const Case c{"llama", 1, std::nullopt, DropPolicy::Position, /*experts=*/16};
  const RunResult ref = train_layout(model(c), empty_expert_layout(0));
  ASSERT_GE(steps_with_an_empty_expert(ref), 1) << c.name() << ": no expert ever went empty";
  // Not under ZeRO-2: it reduces every micro-batch (8 a step here), and on
  // this model one parameter then ends 1.6e-4 relative (7e-7) from one
  // process after 20 steps, with or without ep (sum order under Adam).
  const std::string what = fmt::format("{}, ZeRO-1, ep 2 of dp {}", c.name(), n);
  const RunResult got = train_layout(model(c), empty_expert_layout(2, /*zero=*/1));
  ASSERT_GE(steps_with_an_empty_expert(got), 1) << what << ": no expert ever went empty";
  expect_same_trajectory(c, ref, got, what);
}

// ZeRO-2 also keeps only the owned gradients: dense ones reduced over dp to
// their owner, expert ones over expert-dp (parallel/zero/zero2.h). A dropping
// case of each family; on 4 ranks also ep 4 (expert-dp 1: expert gradients
// stay where they are). With tp 2 + sp: ep_tp_dist.cpp.
TEST(ExpertParallelZero, Zero2MatchesOneProcess) {
  const int n = env().world->size();
  for (size_t i : {1, 3}) {
    const Case& c = kCases[i];
    const RunResult ref = train_run(model(c), 0);
    for (int ep : {2, 4}) {
      if (ep > n) continue;
      expect_same_trajectory(c, ref, train_run(model(c), ep, 20, /*zero=*/2),
                             fmt::format("{}, ZeRO-2, ep {} of dp {}", c.name(), ep, n));
    }
  }
}

}  // namespace
}  // namespace parallm::ep_test
