// `parallm grid` output: the PTD example of seed 004 (2 nodes x 8 devices,
// tp 2, pp 4, dp 2) must read like the figure: tp pairs within a node, pp
// columns down across both nodes, two dp replicas side by side.
#include "grid/grid_report.h"

#include <gtest/gtest.h>

namespace parallm {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GridReport, PtdExampleText) {
  const RankGrid g(GridSizes{.tp = 2, .dp = 2, .pp = 4}, 16);
  const std::string text = format_grid_text(g, 8);
  SCOPED_TRACE(text);
  EXPECT_TRUE(contains(text, "rank grid: world 16 = tp 2 x cp 1 x dp 2 x pp 4"));
  EXPECT_TRUE(contains(text, "nodes: 2 x 8 ranks per node\n"));
  EXPECT_TRUE(contains(text,
                       "tp groups (2 ranks, within a node): [0 1] [2 3] [4 5] [6 7] [8 9] [10 11] "
                       "[12 13] [14 15]\n"));
  EXPECT_TRUE(contains(text,
                       "dp groups (2 ranks, within a node): [0 2] [1 3] [4 6] [5 7] [8 10] [9 11] "
                       "[12 14] [13 15]\n"));
  EXPECT_TRUE(contains(
      text,
      "pp groups (4 ranks, all cross nodes): [0 4 8 12] [1 5 9 13] [2 6 10 14] [3 7 11 15]\n"));
  EXPECT_TRUE(contains(text, "dp_cp groups: same as dp\n"));
  EXPECT_TRUE(contains(text, "tp_cp groups: same as tp\n"));
  EXPECT_TRUE(contains(
      text, "mp groups (8 ranks, all cross nodes): [0 1 4 5 8 9 12 13] [2 3 6 7 10 11 14 15]\n"));
  EXPECT_TRUE(contains(
      text,
      "embedding groups (first and last stage, all cross nodes): [0 12] [1 13] [2 14] [3 15]\n"));
  EXPECT_TRUE(contains(text, "single-rank groups (nothing to communicate): cp\n"));
  EXPECT_FALSE(contains(text, "edp"));  // ep = 1: expert layers use the dense groups
  EXPECT_TRUE(contains(text,
                       "               dp0      dp1\n"
                       "  pp0  node 0  [0 1]    [2 3]\n"
                       "  pp1  node 0  [4 5]    [6 7]\n"
                       "  pp2  node 1  [8 9]    [10 11]\n"
                       "  pp3  node 1  [12 13]  [14 15]\n"));
  EXPECT_TRUE(
      contains(text, "node 1 (ranks 8-15):\n  rank  tp  cp  dp  pp\n     8   0   0   0   2\n"));
}

TEST(GridReport, ExpertAndPartialNodes) {
  // ep 2 over cp 2 x dp 2: ep_rank = cp_rank, edp_rank = dp_rank.
  const RankGrid g(GridSizes{.tp = 2, .cp = 2, .dp = 2, .ep = 2}, 8);
  const std::string text = format_grid_text(g, 3);
  SCOPED_TRACE(text);
  EXPECT_TRUE(contains(text, "expert layers: dp x cp = 4 folded into ep 2 x edp 2 (ep fastest)\n"));
  EXPECT_TRUE(contains(text, "nodes: 3 x 3 ranks per node (last node holds 2)\n"));
  EXPECT_TRUE(contains(text, "tp groups (2 ranks, 1 of 4 cross nodes): [0 1] [2 3] [4 5] [6 7]\n"));
  EXPECT_TRUE(contains(text, "cp groups (2 ranks, 3 of 4 cross nodes): [0 2] [1 3] [4 6] [5 7]\n"));
  EXPECT_TRUE(contains(text, "ep groups: same as cp\n"));
  EXPECT_TRUE(contains(text, "edp groups: same as dp\n"));
  EXPECT_TRUE(contains(text, "single-rank groups (nothing to communicate): pp\n"));
  EXPECT_TRUE(contains(text,
                       "                  dp0 cp0   dp0 cp1   dp1 cp0   dp1 cp1\n"
                       "                  ep0 edp0  ep1 edp0  ep0 edp1  ep1 edp1\n"
                       "  pp0  nodes 0-2  [0 1]     [2 3]     [4 5]     [6 7]\n"));
  EXPECT_TRUE(contains(
      text,
      "node 2 (ranks 6-7):\n  rank  tp  cp  dp  pp  ep  edp\n     6   0   1   1   0   1    1\n"));

  // ep 2 over dp 4 (cp 1): ep pairs adjacent dp ranks; the groups differ from every dense kind.
  const std::string dp4 = format_grid_text(RankGrid(GridSizes{.tp = 2, .dp = 4, .ep = 2}, 8), 8);
  SCOPED_TRACE(dp4);
  EXPECT_TRUE(contains(dp4, "ep groups (2 ranks, within a node): [0 2] [1 3] [4 6] [5 7]\n"));
  EXPECT_TRUE(contains(dp4, "edp groups (2 ranks, within a node): [0 4] [1 5] [2 6] [3 7]\n"));
  EXPECT_TRUE(contains(dp4, "tp_ep groups (4 ranks, within a node): [0 1 2 3] [4 5 6 7]\n"));
}

TEST(GridReport, LongGroupListsWrap) {
  const RankGrid g(GridSizes{.tp = 2, .dp = 64}, 128);
  const std::string text = format_grid_text(g, 8);
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    EXPECT_LE(end - start, 100u) << text.substr(start, end - start);
    start = end + 1;
  }
  EXPECT_TRUE(contains(text, "(picture omitted: 64 dp x cp columns; see the table)"));
}

TEST(GridReport, JsonHasEveryGroupAndRank) {
  const RankGrid g(GridSizes{.tp = 2, .dp = 2, .pp = 4}, 16);
  const auto j = grid_to_json(g, 8);
  EXPECT_EQ(j["world_size"], 16);
  EXPECT_EQ(j["nodes"], 2);
  EXPECT_EQ(j["sizes"]["edp"], 2);
  for (GroupKind kind : kAllGroupKinds)
    EXPECT_EQ(j["groups"][std::string(group_kind_name(kind))].get<std::vector<std::vector<int>>>(),
              g.groups(kind));
  ASSERT_EQ(j["ranks"].size(), 16u);
  EXPECT_EQ(j["ranks"][13].dump(),
            R"({"rank":13,"node":1,"local_rank":5,"tp":1,"cp":0,"dp":0,"pp":3,"ep":0,"edp":0})");
}

TEST(GridReport, JsonTextParsesBackAndKeepsGroupsOnOneLine) {
  const RankGrid g(GridSizes{.tp = 2, .dp = 2, .pp = 4}, 16);
  const std::string text = format_grid_json(g, 8);
  EXPECT_EQ(nlohmann::ordered_json::parse(text), grid_to_json(g, 8));
  EXPECT_TRUE(contains(text, "\n    \"pp\": [[0,4,8,12],[1,5,9,13],[2,6,10,14],[3,7,11,15]],\n"));
  EXPECT_TRUE(contains(text, "\n  \"world_size\": 16,\n"));
}

TEST(GridReport, GroupsFormat) {
  EXPECT_EQ(format_groups({{0, 1}, {2, 3}}), "[0 1] [2 3]");
  EXPECT_EQ(format_groups({}), "");
}

}  // namespace
}  // namespace parallm
