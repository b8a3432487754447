// MoE layers under context parallelism (docs/moe.md, "Context
// parallelism"): every cp rank all-gathers the router logits over cp, puts
// them in sequence order and routes every sequence whole, so capacity per
// sequence, the drops and the balancing statistics are the one-process
// ones although a rank holds two non-contiguous chunks of each sequence.
// 20 steps of the MoE cases (../ep_cases.h) against the one-process run:
// losses, grad norms, aux / z losses within 1e-5, per-expert load and
// dropped fraction exactly equal, every parameter within 1e-5 relative.
// 2 ranks: cp 2 ring alone (every case); cp 2 x ep 2 (the ep group is the
// two cp ranks: they dispatch different tokens of the same sequences) with
// ring and with Ulysses (LLaMA: 6 heads, 2 key/value heads).
// 4 ranks: cp 2 x dp 2 with ep 2 (expert-dp 2, which spans dp) and ep 4
// (the ep group spans cp and dp); cp 2 x tp 2 + sp x ep 2 (logits gathered
// over tp, then over cp).
#include "../ep_cases.h"
#include "ep_cp_env.h"

namespace parallm::ep_cp_test {
namespace {

using ep_test::Case;
using ep_test::expect_same_trajectory;
using ep_test::RunResult;

const auto& kCases = ep_test::kFourCases;
using ep_test::tp_model;

void check(const Case& c, const ModelConfig& m, const RunResult& ref, const CpMoeLayout& l) {
  const RunResult got = train_cp_layout(m, l);
  expect_same_trajectory(c, ref, got, fmt::format("{}, {}", c.name(), l.name()));

  if (l.ep > 1) {
    for (size_t s = 0; s < got.ep_comm_ms.size(); ++s)
      EXPECT_GT(got.ep_comm_ms[s], 0.0) << l.name() << " step " << s << ": no ep all-to-all";
  }
}

// Cases [first, last) of kCases.
void check_cases(size_t first, size_t last) {
  const int n = env().world->size();
  for (size_t i = first; i < last; ++i) {
    const Case& c = kCases[i];
    const ModelConfig m = ep_test::model(c);
    const RunResult ref = train_cp_layout(m, CpMoeLayout{});
    const bool llama = c.family == "llama";
    if (n == 2) {
      check(c, m, ref, CpMoeLayout{.cp = 2});
      check(c, m, ref, CpMoeLayout{.cp = 2, .ep = 2, .comm = llama ? "a2a" : "ring"});
      if (c.capacity) check(c, m, ref, CpMoeLayout{.cp = 2, .ep = 2, .micro = 1});
    } else {
      check(c, m, ref, CpMoeLayout{.cp = 2, .ep = 2, .dp = 2});
      if (c.capacity)
        check(c, m, ref, CpMoeLayout{.cp = 2, .ep = 4, .dp = 2, .comm = llama ? "a2a" : "ring"});
    }
  }
}

TEST(MoeContextParallel, Gpt2MatchesOneProcess) { check_cases(0, 2); }
TEST(MoeContextParallel, LlamaMatchesOneProcess) { check_cases(2, 4); }

// cp 2 x tp 2 + sp x ep 2 (4 ranks): each rank holds half of its cp share
// of every sequence; the dropping cases.
TEST(MoeContextParallelTp, MatchesOneProcess) {
  if (env().world->size() != 4) GTEST_SKIP() << "needs 4 ranks";
  for (size_t i : {size_t{1}, size_t{3}}) {
    const Case& c = kCases[i];
    const ModelConfig m = tp_model(c);
    const RunResult ref = train_cp_layout(m, CpMoeLayout{});
    check(c, m, ref, CpMoeLayout{.cp = 2, .ep = 2, .tp = 2, .sp = true});
  }
}

}  // namespace
}  // namespace parallm::ep_cp_test
