// MoE under --precision bf16 (the experts' grouped GEMMs in bf16 as the
// dense MLP's, docs/moe.md): 10 steps at ep 2 (2 ranks: expert-dp 1; 4
// ranks: expert-dp 2) follow the one-process bf16 run within the tolerance
// of the project's other bf16 layout tests (pp_compose_dist.cpp: 10 steps,
// losses and the parameters' relative distance within 2e-3). Gradient
// norms within 1e-2: they move more than the loss (measured up to 4.8e-3 at
// ep 2, 1.6e-3 at dp 4 without ep). Layouts sum products in another order
// (ep puts two ranks' rows in one expert GEMM), which moves some bf16
// roundings of the next GEMM's inputs: close, not 1e-5. The bf16 run must
// also differ from fp32 (bf16 is in effect).
#include "ep_cases.h"

namespace parallm::ep_test {
namespace {

constexpr int kSteps = 10;

double relative_distance(const std::vector<float>& got, const std::vector<float>& ref) {
  double ss = 0.0, dd = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    ss += double(ref[i]) * ref[i];
    dd += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
  }
  return std::sqrt(dd / ss);
}

TEST(MoePrecision, Bf16FollowsOneProcessBf16) {
  const int n = env().world->size();
  // A dropping GPT-2 case and a dropless LLaMA one (ep_cases.h).
  for (const Case& c : {Case{"gpt2", 2, 1.0}, Case{"llama", 2, std::nullopt}}) {
    const RunResult fp32 = train_layout(model(c), Layout{.ep = 0}, kSteps);
    const RunResult ref =
        train_layout(model(c), Layout{.ep = 0, .precision = Precision::BF16}, kSteps);
    const RunResult got =
        train_layout(model(c), Layout{.ep = 2, .precision = Precision::BF16}, kSteps);
    const std::string what = fmt::format("{}, bf16, ep 2 of dp {}", c.name(), n);
    ASSERT_EQ(got.losses.size(), ref.losses.size()) << what;
    double worst_loss = 0.0, worst_norm = 0.0;
    for (size_t s = 0; s < ref.losses.size(); ++s) {
      EXPECT_NEAR(got.losses[s], ref.losses[s], 2e-3 * std::abs(ref.losses[s]))
          << what << ", step " << s;
      EXPECT_NEAR(got.grad_norms[s], ref.grad_norms[s], 1e-2 * std::abs(ref.grad_norms[s]))
          << what << ", step " << s << " grad norm";
      worst_loss = std::max(worst_loss, std::abs(got.losses[s] / ref.losses[s] - 1));
      worst_norm = std::max(worst_norm, std::abs(got.grad_norms[s] / ref.grad_norms[s] - 1));
    }
    const double dist = relative_distance(got.params, ref.params);
    EXPECT_LE(dist, 2e-3) << what << ": relative distance of the parameters";
    const double from_fp32 = relative_distance(ref.params, fp32.params);
    EXPECT_GT(from_fp32, 0.0) << c.name() << ": bf16 ended where fp32 did";
    if (env().world->rank() == 0)
      fmt::print(
          "{}: worst loss {:.2e}, grad norm {:.2e}, parameters {:.2e} (bf16 vs fp32 on one "
          "process: {:.2e}; loss {:.6f} vs {:.6f} at the last step)\n",
          what, worst_loss, worst_norm, dist, from_fp32, ref.losses.back(), fp32.losses.back());
  }
}

}  // namespace
}  // namespace parallm::ep_test
