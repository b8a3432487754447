// The pure parts of `parallm verify`: the layout words and the search for
// the first op where a layout's pieces leave the one-process tensor
// (sliced pieces reassembled by their boxes, missing and partial coverage).
#include <gtest/gtest.h>

#include "base/error.h"
#include "train/verify/layout_spec.h"
#include "train/verify/op_compare.h"

namespace parallm {
namespace {

TEST(VerifyLayout, WordsBecomeTrainFlags) {
  const LayoutSpec s = parse_layout("tp=2 pp=2, dp=2 zero=3 sp schedule=1f1b");
  EXPECT_EQ(s.ranks, 8);
  EXPECT_TRUE(s.sp);
  EXPECT_EQ(s.zero, 3);
  const std::vector<std::string> want = {
      "--tp",       "2",   "--pp", "2", "--dp", "2", "--zero", "3", "--sequence-parallel",
      "--schedule", "1f1b"};
  EXPECT_EQ(s.flags, want);
}

TEST(VerifyLayout, RefusesUnknownWordsAndOneProcess) {
  EXPECT_THROW(parse_layout("tp=2 xp=2"), Error);
  EXPECT_THROW(parse_layout("tp=two"), Error);
  EXPECT_THROW(parse_layout("fast"), Error);
  try {
    parse_layout("zero=1");
    FAIL() << "a one-process layout was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one process"), std::string::npos) << e.what();
  }
}

// A (4 x 6) record of layer `layer`, values v(i, j) = i * 6 + j + 1, or a
// box of it.
OpRecord record(const std::string& op, int layer, int64_t r0, int64_t rows, int64_t c0,
                int64_t cols, int rank = 0) {
  OpRecord r;
  r.op = op;
  r.layer = layer;
  r.row0 = r0, r.rows = rows, r.full_rows = 4;
  r.col0 = c0, r.cols = cols, r.full_cols = 6;
  r.rank = rank;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      r.values.push_back(static_cast<float>((r0 + i) * 6 + c0 + j + 1));
  return r;
}

TEST(VerifyOps, SlicesThatReassembleTheTensorMatch) {
  const std::vector<OpRecord> ref = {record("a", 0, 0, 4, 0, 6), record("b", 0, 0, 4, 0, 6)};
  // "a" split by columns (tp), "b" by rows (sequence parallel).
  const std::vector<OpRecord> lay = {record("a", 0, 0, 4, 0, 3, 0), record("a", 0, 0, 4, 3, 3, 1),
                                     record("b", 0, 0, 2, 0, 6, 0), record("b", 0, 2, 2, 0, 6, 1)};
  const OpDivergence d = first_divergence(ref, lay, 4, 1e-6);
  EXPECT_FALSE(d.found) << describe(d);
  EXPECT_EQ(d.compared, 2);
}

TEST(VerifyOps, NamesTheFirstDifferingOpAndItsRank) {
  const std::vector<OpRecord> ref = {record("a", 0, 0, 4, 0, 6), record("b", 1, 0, 4, 0, 6),
                                     record("c", 1, 0, 4, 0, 6)};
  std::vector<OpRecord> lay = {record("a", 0, 0, 4, 0, 6), record("b", 1, 0, 4, 0, 3, 0),
                               record("b", 1, 0, 4, 3, 3, 1), record("c", 1, 0, 4, 0, 6)};
  lay[2].values[5] += 0.24f;  // largest reference value 24: rel 1e-2
  lay[3].values[0] += 1.0f;   // a later op differs too: not the first
  const OpDivergence d = first_divergence(ref, lay, 4, 1e-5);
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.op, "b");
  EXPECT_EQ(d.layer, 1);
  EXPECT_EQ(d.rank, 1);
  EXPECT_EQ(d.problem, "differs");
  EXPECT_NEAR(d.rel, 0.01, 1e-6);
  EXPECT_NE(describe(d).find("layer 1, op b (forward)"), std::string::npos) << describe(d);
}

TEST(VerifyOps, MissingAndUncoveredRecordsAreDivergences) {
  const std::vector<OpRecord> ref = {record("a", 0, 0, 4, 0, 6), record("b", 0, 0, 4, 0, 6)};
  const OpDivergence missing = first_divergence(ref, {record("a", 0, 0, 4, 0, 6)}, 4, 1e-6);
  ASSERT_TRUE(missing.found);
  EXPECT_EQ(missing.op, "b");
  EXPECT_EQ(missing.problem, "missing");
  const OpDivergence part = first_divergence(ref, {record("a", 0, 0, 2, 0, 6)}, 4, 1e-6);
  ASSERT_TRUE(part.found);
  EXPECT_EQ(part.op, "a");
  EXPECT_EQ(part.problem, "incomplete");
}

}  // namespace
}  // namespace parallm
