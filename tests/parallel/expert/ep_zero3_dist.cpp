// Expert parallelism under ZeRO-3 (docs/moe.md): parameters sharded as
// ZeRO-2 shards gradients, dense values over dp and expert values over
// expert-dp, each unit's dense pieces gathered over dp and its expert
// pieces over expert-dp (parallel/zero/zero3.h). 20 steps of every MoE case
// (GPT-2 and LLaMA, top-1 and top-2, dropping and dropless) at ep 2 (2
// ranks: expert-dp 1, experts held whole; 4 ranks: expert-dp 2, so expert
// values really split and are gathered) against the one-process run
// (ep_cases.h); on 4 ranks also ep 4 (expert-dp 1) for one case.
#include "ep_cases.h"

namespace parallm::ep_test {
namespace {

const Case kCases[] = {
    {"gpt2", 1, std::nullopt},
    {"gpt2", 2, 1.0},
    {"llama", 2, std::nullopt},
    {"llama", 1, 1.25, DropPolicy::Probs},
};

TEST(ExpertParallelZero3, MatchesOneProcess) {
  const int n = env().world->size();
  for (size_t i = 0; i < std::size(kCases); ++i) {
    const Case& c = kCases[i];
    const RunResult ref = train_run(model(c), 0);
    for (int ep : {2, 4}) {
      if (ep > n || (ep == 4 && i != 1)) continue;
      expect_same_trajectory(c, ref, train_run(model(c), ep, 20, /*zero=*/3),
                             fmt::format("{}, ZeRO-3, ep {} of dp {}", c.name(), ep, n));
    }
  }
}

}  // namespace
}  // namespace parallm::ep_test
