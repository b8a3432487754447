// Layout invariance of expert parallelism (DESIGN principle 1): MoE models
// trained 20 steps with ep 2 and ep 4 (dp = ranks, so at 4 ranks ep 2 has
// expert-dp 2) follow the one-process trajectory: losses, gradient norms,
// the balancing losses and every parameter tensor within the bounds
// docs/testing.md derives, per-expert load and dropped fraction equal, for
// GPT-2 and LLaMA experts, top-1 and
// top-2, dropless and with capacity drops (both policies), with the aux and
// z losses on. The reference is computed on every rank. Also a model of 16
// experts, top-1, with few tokens a step, in which some expert gets no token
// in most steps (asserted in both runs): the same checks.
#include "ep_cases.h"

namespace parallm::ep_test {
namespace {

const auto& kCases = kFourCases;

TEST(ExpertParallelLayout, MatchesOneProcess) {
  // 2 ranks: ep 2 for every case; 4 ranks: ep 2 (expert-dp 2) for every
  // case, ep 4 for two of them (the suite stays short).
  const int n = env().world->size();
  auto check = [&](const Case& c, const RunResult& ref, int ep) {
    expect_same_trajectory(c, ref, train_run(model(c), ep),
                           fmt::format("{}, ep {} of dp {}", c.name(), ep, n));
  };
  for (size_t i = 0; i < std::size(kCases); ++i) {
    const Case& c = kCases[i];
    const RunResult ref = train_run(model(c), 0);
    check(c, ref, 2);
    if (n == 4 && i % 2 == 0) check(c, ref, 4);
  }
}

TEST(ExpertParallelLayout, EmptyExpertsMatchOneProcess) {
  // ep = ranks (2 or 4; at 4 ranks ep 2 is the cases above). GPT-2: both
  // layers MoE; LLaMA: layer 0 MoE, layer 1 dense.
  const int ep = env().world->size();
  for (const char* family : {"gpt2", "llama"}) {
    const Case c{family, 1, std::nullopt, DropPolicy::Position, /*experts=*/16};
    const RunResult ref = train_layout(model(c), empty_expert_layout(0));
    ASSERT_GE(steps_with_an_empty_expert(ref), 1) << c.name() << ": no expert ever went empty";
    const std::string what = fmt::format("{}, ep {} of dp {}", c.name(), ep, ep);
    const RunResult got = train_layout(model(c), empty_expert_layout(ep));
    ASSERT_GE(steps_with_an_empty_expert(got), 1) << what << ": no expert ever went empty";
    expect_same_trajectory(c, ref, got, what);
    // The metrics' ep_comm_ms: every ep step waits in its all-to-alls.
    for (size_t i = 0; i < got.ep_comm_ms.size(); ++i) {
      EXPECT_GT(got.ep_comm_ms[i], 0.0) << what << ", step " << i << ": ep_comm_ms";
      EXPECT_EQ(ref.ep_comm_ms[i], 0.0) << "one process, step " << i << ": ep_comm_ms";
    }
  }
}

}  // namespace
}  // namespace parallm::ep_test
