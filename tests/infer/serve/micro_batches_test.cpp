// split_micro_batches: every span in exactly one group, groups in step order
// and balanced by tokens, no more groups than spans, none empty.
#include <gtest/gtest.h>

#include "infer/serve/micro_batches.h"

namespace parallm::serve {
namespace {

std::vector<PagedSpan> spans_of(const std::vector<int64_t>& counts) {
  std::vector<PagedSpan> s;
  for (int64_t c : counts) s.push_back({.pos0 = 0, .count = c, .blocks = {0}});
  return s;
}

TEST(MicroBatches, BalancesTokensAndKeepsEachGroupInStepOrder) {
  const auto g = split_micro_batches(spans_of({1, 9, 1, 4, 1, 4}), 2);
  ASSERT_EQ(g.size(), 2u);
  // Longest first, each to the lighter group (ties: the earlier): 9 | 4 4 1,
  // then 9 1 | 4 4 1 1; groups ordered by their first span.
  EXPECT_EQ(g[0].spans, (std::vector<size_t>{0, 3, 4, 5}));
  EXPECT_EQ(g[0].tokens, 10);
  EXPECT_EQ(g[1].spans, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(g[1].tokens, 10);
}

TEST(MicroBatches, DecodeRowsSplitEvenly) {
  const auto g = split_micro_batches(spans_of({1, 1, 1, 1, 1, 1, 1}), 3);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].spans, (std::vector<size_t>{0, 3, 6}));
  EXPECT_EQ(g[1].spans, (std::vector<size_t>{1, 4}));
  EXPECT_EQ(g[2].spans, (std::vector<size_t>{2, 5}));
}

TEST(MicroBatches, NoMoreGroupsThanSpansAndOneGroupIsTheStep) {
  EXPECT_EQ(split_micro_batches(spans_of({5, 2}), 4).size(), 2u);
  const auto one = split_micro_batches(spans_of({3, 1, 2}), 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].spans, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(one[0].tokens, 6);
}

TEST(MicroBatches, RefusesZeroGroupsAndEmptySpans) {
  EXPECT_THROW(split_micro_batches(spans_of({1}), 0), Error);
  EXPECT_THROW(split_micro_batches(spans_of({1, 0}), 2), Error);
}

TEST(MicroBatches, TokenFloorKeepsSmallStepsWhole) {
  // 8 decode rows with a floor of 16: one pass; 40 tokens: at most 2 groups.
  EXPECT_EQ(split_micro_batches(spans_of({1, 1, 1, 1, 1, 1, 1, 1}), 2, 16).size(), 1u);
  const auto g = split_micro_batches(spans_of({20, 4, 4, 4, 4, 4}), 4, 16);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].tokens + g[1].tokens, 40);
  EXPECT_THROW(split_micro_batches(spans_of({1}), 1, 0), Error);
}

}  // namespace
}  // namespace parallm::serve
