// Ranks sharing cores round robin (plan/processor_sharing.h), and the
// step-time model's use of it: an ep group on shared cores waits for its
// busiest rank while the cores serve the group round robin.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/model_catalog.h"
#include "plan/device_profile.h"
#include "plan/processor_sharing.h"
#include "plan/step_time.h"

namespace parallm {
namespace {

TEST(ProcessorSharing, RanksShareTheCoresEquallyUntilEachIsDone) {
  EXPECT_DOUBLE_EQ(processor_sharing_s({1.0, 1.0, 1.0, 1.0}, 1, 2), 2.0);  // packed: 4 / 2
  EXPECT_DOUBLE_EQ(processor_sharing_s({3.0, 1.0}, 1, 2), 3.0);  // a core each: the longest
  EXPECT_DOUBLE_EQ(processor_sharing_s({1.0, 1.0}, 2, 2), 2.0);  // 2 threads each on 2 cores
  // One busy rank of four: the light ones finish at half speed (1.2 s),
  // then it runs alone (1.2 s more): 2.4 s, where packing would take
  // max(1.8, 3.6 / 2) = 1.8 s.
  EXPECT_NEAR(processor_sharing_s({1.8, 0.6, 0.6, 0.6}, 1, 2), 2.4, 1e-12);
}

TEST(StepTime, EpGroupOnSharedCoresIsServedRoundRobin) {
  DeviceProfile d;  // two cores, calibrated kernels at 1 and 2 threads
  d.name = "two cores";
  d.peak_flops = 1e10;
  d.gemm_efficiency = 1;
  d.memory_bytes = 1e10;
  d.memory_bytes_per_s = 1e10;
  d.cores = 2;
  d.precision = Precision::FP32;
  d.intra_node = d.inter_node = {.alpha_s = 2e-5, .bytes_per_s = 2e9};
  for (int threads : {1, 2}) {
    OpCosts c;
    c.threads = threads;
    c.rows = c.ins = c.outs = {32, 4096};
    for (int i = 0; i < 8; ++i)
      c.fwd_s.push_back(1e-3 / threads), c.bwd_s.push_back(2e-3 / threads);
    c.attn_seq = {128};
    c.attn_fwd_s = {1e-9}, c.attn_bwd_s = {2e-9};
    for (const char* k :
         {"rmsnorm", "swiglu", "rope", "add", "cross_entropy", "embedding", "moe_rows"})
      c.elem_fwd_s[k] = 1e-9, c.elem_bwd_s[k] = 2e-9;
    c.optimizer_s_per_param = 1e-9;
    c.copy_bytes_per_s = 5e9;
    d.ops.push_back(c);
  }
  MemoryQuery q;
  q.model = catalog_model("llama-tiny");
  q.model.moe.num_experts = 4;
  q.model.moe.topk = 2;
  q.seq_len = 128;
  q.micro_batch = 4;
  q.micro_batches = 1;
  q.dp = 4;
  q.ep = 4;  // 4 ranks on 2 cores, one thread each
  q.precision = Precision::FP32;
  q.ep_max_load = {{4, 1.8}};
  const StepTime t = predict_step_time(q, d);
  ASSERT_GT(t.ep_imbalance_s, 0.0);
  const double e = t.ep_imbalance_s / 0.8;  // a rank's mean expert work
  const double critical = t.total_s - t.core_sharing_s;
  const double busy = critical - t.ep_imbalance_s;
  // The busiest rank's 1.8 e and three of (4 - 1.8) / 3 e, round robin on
  // 2 cores, against 2 e for an even share.
  const double uneven =
      processor_sharing_s({1.8 * e, 2.2 / 3 * e, 2.2 / 3 * e, 2.2 / 3 * e}, 1, 2) - 2 * e;
  EXPECT_NEAR(uneven, (2.2 / 3 / 0.5 + (1.8 - 2.2 / 3) - 2) * e, 1e-12);
  EXPECT_NEAR(t.total_s, std::max(critical, 2 * busy + uneven), 1e-12);
  // Even loads pack: the 4 ranks' busy time over 2 cores, nothing more.
  q.ep_max_load.clear();
  const StepTime even = predict_step_time(q, d);
  EXPECT_EQ(even.ep_imbalance_s, 0.0);
  EXPECT_NEAR(even.total_s, 2 * (even.total_s - even.core_sharing_s), 1e-12);
}

}  // namespace
}  // namespace parallm
