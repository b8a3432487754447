// Per-rank memory by allocator tag against the ZeRO formulas for fp32 AdamW
// (4 + 4 + 8 bytes per parameter; stage 1 divides the optimizer's 8 by dp).
// N is the padded flat parameter count; a shard is ceil(N / dp) elements.
// Stage 2 still keeps the full gradient buffer (the model writes gradients
// into one flat buffer), so its gradient bytes are asserted as 4 N for now.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../model/test_models.h"
#include "dp_env.h"
#include "parallel/data/data_parallel.h"

namespace parallm::dp_test {
namespace {

TEST(DataParallelMemory, TaggedBytesFollowTheZeroFormulas) {
  comm::Communicator* world = env().world;
  const int dp = world->size();
  for (int zero : {0, 1, 2}) {
    for (DpMode mode : {DpMode::AllReduce, DpMode::ParameterServer}) {
      if (mode == DpMode::ParameterServer && zero > 0) continue;
      Allocator alloc;
      Transformer m(testing::tiny_llama(), alloc);
      DpOptions o;
      o.dp = dp;
      o.zero = zero;
      o.mode = mode;
      DataParallel d(m, dp > 1 ? world : nullptr, o, AdamWConfig{}, alloc);
      const int64_t N = m.params().total_numel();
      const int64_t S = (N + dp - 1) / dp;
      const std::string what = fmt::format("dp {} {} zero {}", dp, dp_mode_name(mode), zero);
      EXPECT_EQ(alloc.current(MemTag::Parameter), 4 * N) << what;
      EXPECT_EQ(alloc.current(MemTag::Gradient), 4 * N) << what;
      int64_t opt = zero >= 1 ? 8 * S : 8 * N;
      if (mode == DpMode::ParameterServer && world->rank() != 0) opt = 0;
      EXPECT_EQ(alloc.current(MemTag::Optimizer), opt) << what;
      EXPECT_EQ(alloc.current(MemTag::Communication), 0) << what;
    }
  }
}

}  // namespace
}  // namespace parallm::dp_test
