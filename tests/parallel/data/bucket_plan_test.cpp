// Bucket planning: buckets tile the buffer in completion order, respect the
// budget (except that nothing smaller than a segment is ever split off
// unnecessarily) and become ready with their lowest segment.
#include "parallel/data/bucket_plan.h"

#include <gtest/gtest.h>

#include "model/transformer.h"
#include "parallel/data/dp_options.h"
#include "parallel/data/shard_layout.h"

namespace parallm {
namespace {

using Seg = GradSegment;

TEST(BucketPlan, GroupsConsecutiveSegmentsWithinTheBudget) {
  // Completion order: [90,100), [60,90), [40,60), [0,40).
  std::vector<Seg> segs = {{90, 100}, {60, 90}, {40, 60}, {0, 40}};
  auto b = plan_buckets(segs, 50);
  ASSERT_EQ(b.size(), 3u);  // 10 + 30; 20 (+ 40 would exceed 50); 40
  EXPECT_EQ(b[0].begin, 60);
  EXPECT_EQ(b[0].end, 100);
  EXPECT_EQ(b[0].ready_after, 1);
  EXPECT_EQ(b[1].begin, 40);
  EXPECT_EQ(b[1].end, 60);
  EXPECT_EQ(b[1].ready_after, 2);
  EXPECT_EQ(b[2].begin, 0);
  EXPECT_EQ(b[2].end, 40);
  EXPECT_EQ(b[2].ready_after, 3);
}

TEST(BucketPlan, SplitsOversizedSegmentsAndTilesTheBuffer) {
  std::vector<Seg> segs = {{95, 100}, {0, 95}};
  auto b = plan_buckets(segs, 40);
  int64_t expect_end = 100;
  for (const auto& x : b) {
    EXPECT_EQ(x.end, expect_end);
    EXPECT_LE(x.end - x.begin, 40);
    expect_end = x.begin;
  }
  EXPECT_EQ(expect_end, 0);
  EXPECT_EQ(b.back().ready_after, 1);
}

TEST(BucketPlan, FollowsTheModelsSegments) {
  ModelConfig c;
  c.vocab_size = 1000, c.hidden = 72, c.n_layers = 2, c.n_heads = c.n_kv_heads = 3;
  c.head_dim = 24, c.intermediate = 288, c.max_positions = 64;
  Allocator a;
  Transformer m(c, a);
  const auto& s = m.grad_segments();
  ASSERT_EQ(s.size(), 4u);  // tail, block 1, block 0, embedding
  EXPECT_EQ(s.front().end, m.params().total_numel());
  EXPECT_EQ(s.back().begin, 0);
  auto b = plan_buckets(s, DpOptions{}.bucket_elems());
  ASSERT_EQ(b.size(), 1u);  // 25 MiB holds the whole tiny model
  EXPECT_EQ(b[0].ready_after, 3);
}

TEST(ShardLayout, UnevenShardsCoverEveryElementOnce) {
  ShardLayout l{10, 4};
  EXPECT_EQ(l.shard_size(), 3);
  EXPECT_EQ(l.padded_total(), 12);
  EXPECT_EQ(l.end(2), 9);
  EXPECT_EQ(l.begin(3), 9);
  EXPECT_EQ(l.end(3), 10);
  EXPECT_FALSE(l.even());
}

TEST(DpOptions, LayoutErrorsNameTheValues) {
  DpOptions o;
  o.dp = 2;
  try {
    validate_dp_layout(o, 4, 8, 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "world size (4) is not equal to dp (2)");
  }
  try {
    validate_dp_layout(o, 2, 6, 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "global batch size (6) is not divisible by micro batch size (2) times data "
                 "parallel size (2)");
  }
}

}  // namespace
}  // namespace parallm
