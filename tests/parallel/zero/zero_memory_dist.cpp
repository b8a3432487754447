// Per-rank memory by allocator tag against the ZeRO formulas for fp32 AdamW
// (4 + 4 + 8 bytes per parameter; stage 1 divides the optimizer's 8 by dp).
// (4 + 4 + 8 bytes per parameter; stage 1 divides the optimizer's 8 by dp,
// stage 2 the gradient's 4 too, stage 3 also the parameters' 4).
// N is the padded flat parameter count; a shard is ceil(N / dp) elements.
// Stages 2 and 3 add unit buffers, tagged communication: two rotating
// buffers of the largest non-embedding unit plus a pinned embedding buffer,
// for gradients (stage 2) and for gathered values as well (stage 3).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "common/test_models.h"
#include "dp_env.h"
#include "model/transformer.h"
#include "parallel/data/data_parallel.h"

namespace parallm::dp_test {
namespace {

TEST(DataParallelMemory, TaggedBytesFollowTheZeroFormulas) {
  comm::Communicator* world = env().world;
  const int dp = world->size();
  for (int zero : {0, 1, 2, 3}) {
    for (DpMode mode : {DpMode::AllReduce, DpMode::ParameterServer}) {
      if (mode == DpMode::ParameterServer && zero > 0) continue;
      Allocator alloc;
      Transformer m(testing::tiny_llama(), alloc);
      DpOptions o;
      o.dp = dp;
      o.zero = zero;
      o.mode = mode;
      std::unique_ptr<DataParallel> d =
          make_data_parallel(m, dp > 1 ? world : nullptr, o, OptimizerConfig{}, alloc);
      const int64_t N = m.params().total_numel();
      const int64_t S = (N + dp - 1) / dp;
      const std::string what = fmt::format("dp {} {} zero {}", dp, dp_mode_name(mode), zero);
      const bool sharded = dp > 1;  // one process keeps the flat buffers
      EXPECT_EQ(alloc.current(MemTag::Parameter), zero >= 3 && sharded ? 4 * S : 4 * N) << what;
      EXPECT_EQ(alloc.current(MemTag::Gradient), zero >= 2 && sharded ? 4 * S : 4 * N) << what;
      int64_t opt = zero >= 1 ? 8 * S : 8 * N;
      if (mode == DpMode::ParameterServer && world->rank() != 0) opt = 0;
      EXPECT_EQ(alloc.current(MemTag::Optimizer), opt) << what;
      const auto& segs = m.grad_segments();
      int64_t largest = 0;
      for (size_t s = 0; s + 1 < segs.size(); ++s)
        largest = std::max(largest, segs[s].end - segs[s].begin);
      const int64_t unit = 4 * (2 * largest + (segs.back().end - segs.back().begin));
      const int64_t comm = !sharded ? 0 : zero == 2 ? unit : zero == 3 ? 2 * unit : 0;
      EXPECT_EQ(alloc.current(MemTag::Communication), comm) << what;
      EXPECT_EQ(d->unit_buffer_bytes(), comm) << what;
    }
  }
}

}  // namespace
}  // namespace parallm::dp_test
