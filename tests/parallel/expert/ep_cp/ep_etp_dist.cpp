// Experts split over tp (--expert-tp = tp, docs/moe.md "Expert tensor
// parallelism"): each expert's fc / gate / up split column-wise and proj /
// down row-wise over tp, every tp rank fed every row of its tp group (the
// rows all-gathered under sp), partial outputs summed over tp. 20 steps of
// the MoE cases (../ep_cases.h; the dropping cases with a shared expert)
// against the one-process run: losses, grad norms, aux / z losses within
// 1e-5, per-expert load and dropped fraction equal, every parameter (the
// experts gathered over tp and ep) within 1e-5 relative.
// 2 ranks: tp 2 + sp x expert tp 2 (micro-batch 1: sp cuts every sequence in
// two) for every case; tp 2 without sp for one.
// 4 ranks: tp 2 + sp x dp 2 x ep 2 x expert tp 2 for every case, under
// ZeRO-1 for one and ZeRO-2 for another; cp 2 x tp 2 + sp x ep 2 x expert
// tp 2 for one.
#include "../ep_cases.h"
#include "ep_cp_env.h"

namespace parallm::ep_cp_test {
namespace {

using ep_test::Case;
using ep_test::expect_same_trajectory;
using ep_test::RunResult;

const auto& kCases = ep_test::kFourCases;

// Heads that tp 2 divides; the dropping cases carry a shared expert (GPT-2
// plain, LLaMA gated), tp-split like a dense MLP.
ModelConfig etp_model(const Case& c) { return ep_test::tp_shared_model(c); }

void check_cases(size_t first, size_t last) {
  const int n = env().world->size();
  for (size_t i = first; i < last; ++i) {
    const Case& c = kCases[i];
    const ModelConfig m = etp_model(c);
    const RunResult ref = train_cp_layout(m, CpMoeLayout{});
    auto check = [&](const CpMoeLayout& l) {
      expect_same_trajectory(c, ref, train_cp_layout(m, l),
                             fmt::format("{}, {}", c.name(), l.name()));
    };
    if (n == 2) {
      check({.tp = 2, .sp = true, .expert_tp = 2, .micro = 1});
      if (i == 1) check({.tp = 2, .expert_tp = 2, .micro = 1});
    } else {
      check({.ep = 2, .tp = 2, .dp = 2, .sp = true, .expert_tp = 2, .micro = 1});
      if (i == 3)
        check({.ep = 2, .tp = 2, .dp = 2, .sp = true, .expert_tp = 2, .zero = 1, .micro = 1});
      if (i == 1) check({.cp = 2, .ep = 2, .tp = 2, .sp = true, .expert_tp = 2});
      if (i == 2)
        check({.ep = 2, .tp = 2, .dp = 2, .sp = true, .expert_tp = 2, .zero = 2, .micro = 1});
    }
  }
}

TEST(MoeExpertTp, Gpt2MatchesOneProcess) { check_cases(0, 2); }
TEST(MoeExpertTp, LlamaMatchesOneProcess) { check_cases(2, 4); }

}  // namespace
}  // namespace parallm::ep_cp_test
