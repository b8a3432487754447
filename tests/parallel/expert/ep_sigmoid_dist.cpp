// Layout invariance of sigmoid routing with the aux-loss-free expert bias
// (docs/moe.md "Sigmoid routing and the expert bias"): 20 steps at ep 2
// (np 2), ep 2 x expert-dp 2 and ep 4 (np 4), and pp 2 (np 2; with dp 2 x
// ep 2 at np 4) against one process: losses,
// grad norms, both balancing losses and every parameter tensor within the
// derived bounds (ep_cases.h, docs/testing.md), per-expert load and dropped
// fraction equal, and the expert biases
// bit for bit equal (they move by integer-count signs of loads summed over
// the whole global batch). The update rate is large so that the bias moves
// the choice within the run, which the test asserts.
#include "ep_cases.h"

namespace parallm::ep_test {
namespace {

ModelConfig sigmoid_model(const Case& c) {
  ModelConfig m = model(c);
  m.moe.score = ScoreFunction::Sigmoid;
  m.moe.expert_bias = true;
  m.moe.bias_update_rate = 0.01;
  return m;
}

TEST(MoeSigmoidLayout, MatchesOneProcess) {
  const int n = env().world->size();
  const Case cases[] = {{"gpt2", 2, std::nullopt}, {"llama", 1, 1.25, DropPolicy::Probs}};
  for (const Case& c : cases) {
    const ModelConfig m = sigmoid_model(c);
    const RunResult ref = train_run(m, 0);
    // The bias moved (some layer's expert left 0) and changed routing: the
    // same model without it routes differently at some step.
    ASSERT_EQ(ref.expert_bias.size(), static_cast<size_t>(m.n_layers * m.moe.num_experts));
    EXPECT_TRUE(std::ranges::any_of(ref.expert_bias, [](float b) { return b != 0.0f; }))
        << c.name() << ": the bias never moved";
    ModelConfig unbiased = m;
    unbiased.moe.expert_bias = false;
    EXPECT_NE(train_run(unbiased, 0).expert_loads, ref.expert_loads)
        << c.name() << ": the bias never changed a choice";
    for (int ep : {2, 4}) {
      if (ep > n) continue;
      const std::string what =
          fmt::format("sigmoid + expert bias, {}, ep {} of dp {}", c.name(), ep, n);
      const RunResult got = train_run(m, ep);
      expect_same_trajectory(c, ref, got, what);
      EXPECT_EQ(got.expert_bias, ref.expert_bias) << what << ": expert bias";
    }
    // Under pp each stage routes its own layers; the loads ride the step's
    // pp all-reduce, so every rank still moves every layer's bias alike.
    const Layout pp{.ep = n >= 4 ? 2 : 1, .pp = 2};
    const std::string what =
        fmt::format("sigmoid + expert bias, {}, pp 2 x dp {} x ep {}", c.name(), n / 2, pp.ep);
    const RunResult got = train_layout(m, pp);
    expect_same_trajectory(c, ref, got, what);
    EXPECT_EQ(got.expert_bias, ref.expert_bias) << what << ": expert bias";
  }
}

}  // namespace
}  // namespace parallm::ep_test
