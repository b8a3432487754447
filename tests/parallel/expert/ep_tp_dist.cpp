// MoE under tensor and sequence parallelism (docs/moe.md): experts whole on
// every tp rank (expert tp 1), the router's logits all-gathered over tp so
// capacity is still counted per whole sequence. 20 steps of the MoE cases
// (ep_cases.h) against the one-process run. Micro-batches of one sequence
// (16 tokens) split over tp 2 cut every sequence in two, so the drops of a
// sequence's experts depend on tokens held by the other tp rank.
// 2 ranks: tp 2 + sp for every case, tp 2 without sp for one.
// 4 ranks: ep 2 x tp 2 + sp for every case; tp 4 + sp (micro-batch 2: each
// rank holds half a sequence) for two; ep 2 x tp 2 + sp under ZeRO-1 for one.
// The two dropping cases have a shared expert (GPT-2 plain, LLaMA gated).
#include "ep_cases.h"

namespace parallm::ep_test {
namespace {

// Heads that tp 2 and 4 divide (LLaMA: 2 key/value heads, so tp 4
// replicates each over two ranks); the dropping cases carry a shared expert.
const auto& kCases = kFourCases;

// Cases [first, first + 2) of kCases (two tests, so each stays short).
void check_cases(size_t first) {
  const int n = env().world->size();
  auto check = [&](const Case& c, const RunResult& ref, const Layout& l) {
    expect_same_trajectory(
        c, ref, train_layout(tp_shared_model(c), l),
        fmt::format("{}, tp {}{} x ep {} (dp {}){}, micro-batch {}", c.name(), l.tp,
                    l.sp ? " + sp" : "", l.ep, n / l.tp,
                    l.zero ? fmt::format(", ZeRO-{}", l.zero) : "", l.micro ? l.micro : 2));
  };
  for (size_t i = first; i < first + 2; ++i) {
    const Case& c = kCases[i];
    const RunResult ref = train_run(tp_shared_model(c), 0);
    if (n == 2) {
      check(c, ref, Layout{.tp = 2, .sp = true, .micro = 1});
      if (i == 1) check(c, ref, Layout{.tp = 2, .sp = false, .micro = 1});
    } else {
      check(c, ref, Layout{.ep = 2, .tp = 2, .sp = true, .micro = 1});
      if (i % 2 == 1) check(c, ref, Layout{.tp = 4, .sp = true});
      if (i == 3) check(c, ref, Layout{.ep = 2, .zero = 1, .tp = 2, .sp = true, .micro = 1});
      if (i == 2) check(c, ref, Layout{.ep = 2, .zero = 2, .tp = 2, .sp = true, .micro = 1});
    }
  }
}

TEST(MoeTensorParallel, Gpt2MatchesOneProcess) { check_cases(0); }
TEST(MoeTensorParallel, LlamaMatchesOneProcess) { check_cases(2); }

}  // namespace
}  // namespace parallm::ep_test
