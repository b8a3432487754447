// Mixed precision under context parallelism: bf16 and fp16 GEMMs (fp32
// master weights; fp16 with dynamic loss scaling) at cp 2 {ring, a2a} and
// cp 4 {ring, a2a+ring U 2}, with and without packed documents, follow the
// one-process run of the same precision for 6 steps: losses within the tp
// precision tests' 2e-3 (the layouts sum partial products in another order,
// which moves a few 16-bit roundings of the next GEMM's inputs), and fp16
// skips the same steps with the same loss scales.
#include <gtest/gtest.h>

#include <cmath>

#include "cp_env.h"

namespace parallm::cp_test {
namespace {

constexpr int kSteps = 6;

std::vector<CpLayout> layouts(int world) {
  if (world == 2) return {{.cp = 2, .comm = "ring"}, {.cp = 2, .comm = "a2a"}};
  if (world == 4) return {{.cp = 4, .comm = "ring"}, {.cp = 4, .comm = "a2a+ring", .ulysses = 2}};
  return {};
}

void expect_follows_one_process(Precision p, bool packed) {
  CpLayout one;
  one.precision = p;
  one.packed = packed;
  const CpRunResult ref = cp_train_run(testing::tp_llama(), one, kSteps);
  for (CpLayout l : layouts(env().world->size())) {
    l.precision = p;
    l.packed = packed;
    const CpRunResult got = cp_train_run(testing::tp_llama(), l, kSteps);
    if (env().world->rank() >= l.cp) continue;
    ASSERT_EQ(got.losses.size(), ref.losses.size()) << l.name();
    for (size_t s = 0; s < ref.losses.size(); ++s) {
      EXPECT_EQ(got.skipped[s], ref.skipped[s]) << l.name() << " step " << s;
      EXPECT_EQ(got.loss_scales[s], ref.loss_scales[s]) << l.name() << " step " << s;
      EXPECT_NEAR(got.losses[s], ref.losses[s], 2e-3 * ref.losses[s]) << l.name() << " step " << s;
      EXPECT_GT(got.cp_bytes[s], 0) << l.name() << " step " << s;
    }
    EXPECT_NEAR(got.val_loss, ref.val_loss, 2e-3 * ref.val_loss) << l.name();
  }
}

TEST(ContextParallelPrecision, Bf16FollowsOneProcess) {
  for (bool packed : {false, true}) expect_follows_one_process(Precision::BF16, packed);
}

TEST(ContextParallelPrecision, Fp16FollowsOneProcess) {
  for (bool packed : {false, true}) expect_follows_one_process(Precision::FP16, packed);
}

}  // namespace
}  // namespace parallm::cp_test
