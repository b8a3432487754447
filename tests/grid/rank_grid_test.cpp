// The rank grid: exact groups for the PTD example of seed 004 (2 nodes x 8
// devices, tp 2, pp 4, dp 2), the expert fold of dp x cp into ep x edp, and
// properties that must hold for every grid (partition, sizes, round trips).
#include "grid/rank_grid.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "base/error.h"
#include "common/test_util.h"

namespace parallm {
namespace {

using Groups = std::vector<std::vector<int>>;

TEST(RankGrid, PtdExampleGroups) {
  const RankGrid g(GridSizes{.tp = 2, .dp = 2, .pp = 4}, 16);
  EXPECT_EQ(g.groups(GroupKind::Tp),
            (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}));
  EXPECT_EQ(g.groups(GroupKind::Pp),
            (Groups{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}}));
  EXPECT_EQ(g.groups(GroupKind::Dp),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
  // The two model replicas: the left and right halves of the figure.
  EXPECT_EQ(g.groups(GroupKind::Mp),
            (Groups{{0, 1, 4, 5, 8, 9, 12, 13}, {2, 3, 6, 7, 10, 11, 14, 15}}));
  EXPECT_EQ(g.groups(GroupKind::Embedding), (Groups{{0, 12}, {1, 13}, {2, 14}, {3, 15}}));
  // Without cp, the dense gradient group is dp and tp_cp is tp.
  EXPECT_EQ(g.groups(GroupKind::DpCp), g.groups(GroupKind::Dp));
  EXPECT_EQ(g.groups(GroupKind::TpCp), g.groups(GroupKind::Tp));
  EXPECT_EQ(g.group_size(GroupKind::Cp), 1);
  // With ep = 1 the expert groups are the dense ones.
  EXPECT_EQ(g.groups(GroupKind::Edp), g.groups(GroupKind::DpCp));
  EXPECT_EQ(g.groups(GroupKind::TpEp), g.groups(GroupKind::Tp));
  EXPECT_EQ(g.groups(GroupKind::TpEpPp), g.groups(GroupKind::Mp));
}

TEST(RankGrid, PtdExampleCoordinatesAndNeighbours) {
  const RankGrid g(GridSizes{.tp = 2, .dp = 2, .pp = 4}, 16);
  EXPECT_EQ(g.coord(0), (GridCoord{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(g.coord(7), (GridCoord{.tp_rank = 1, .dp_rank = 1, .pp_rank = 1, .edp_rank = 1}));
  EXPECT_EQ(g.coord(10), (GridCoord{.tp_rank = 0, .dp_rank = 1, .pp_rank = 2, .edp_rank = 1}));
  EXPECT_EQ(g.rank_of(1, 0, 1, 3), 15);
  EXPECT_EQ(g.pp_next_rank(1), 5);
  EXPECT_EQ(g.pp_next_rank(13), 1);  // wraps from the last stage
  EXPECT_EQ(g.pp_prev_rank(2), 14);  // wraps from the first stage
  EXPECT_EQ(g.pp_prev_rank(10), 6);
  EXPECT_TRUE(g.is_first_pp_stage(3));
  EXPECT_TRUE(g.is_last_pp_stage(12));
  EXPECT_FALSE(g.is_last_pp_stage(11));
  EXPECT_EQ(g.group_index(GroupKind::Embedding, 5), kNoGroup);
  EXPECT_TRUE(g.group_members(GroupKind::Embedding, 5).empty());
  EXPECT_EQ(g.rank_in_group(GroupKind::Embedding, 14), 1);
  EXPECT_EQ(g.group_members(GroupKind::Dp, 9), (std::vector<int>{9, 11}));
  EXPECT_EQ(g.rank_in_group(GroupKind::Pp, 9), 2);
}

TEST(RankGrid, ExpertFoldEp2OverDp2Cp2) {
  // dc = cp_rank + 2 dp_rank; ep_rank = dc % 2, edp_rank = dc / 2.
  const RankGrid small(GridSizes{.cp = 2, .dp = 2, .ep = 2}, 4);
  EXPECT_EQ(small.groups(GroupKind::DpCp), (Groups{{0, 1, 2, 3}}));
  EXPECT_EQ(small.groups(GroupKind::Ep), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(small.groups(GroupKind::Edp), (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(small.coord(2), (GridCoord{.dp_rank = 1, .ep_rank = 0, .edp_rank = 1}));
  EXPECT_EQ(small.coord(3), (GridCoord{.cp_rank = 1, .dp_rank = 1, .ep_rank = 1, .edp_rank = 1}));

  const RankGrid g(GridSizes{.tp = 2, .cp = 2, .dp = 2, .pp = 2, .ep = 2}, 16);
  EXPECT_EQ(g.sizes().edp(), 2);
  EXPECT_EQ(g.groups(GroupKind::Ep),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
  EXPECT_EQ(g.groups(GroupKind::Edp),
            (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}}));
  EXPECT_EQ(g.groups(GroupKind::DpCp),
            (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
  EXPECT_EQ(g.groups(GroupKind::TpEp),
            (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}));
  EXPECT_EQ(g.groups(GroupKind::TpEpPp),
            (Groups{{0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15}}));
  EXPECT_EQ(g.expert_rank_of(1, 1, 1, 1), 15);
  EXPECT_EQ(g.expert_rank_of(0, 1, 0, 0), 2);

  // ep = dp x cp: each ep group is a whole dense gradient group, edp trivial.
  const RankGrid full(GridSizes{.tp = 2, .cp = 2, .dp = 2, .pp = 2, .ep = 4}, 16);
  EXPECT_EQ(full.groups(GroupKind::Ep), full.groups(GroupKind::DpCp));
  EXPECT_EQ(full.group_size(GroupKind::Edp), 1);

  // ep over dp only (cp = 1): ep groups are runs of adjacent dp ranks.
  const RankGrid dp4(GridSizes{.dp = 4, .ep = 2}, 4);
  EXPECT_EQ(dp4.groups(GroupKind::Ep), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(dp4.groups(GroupKind::Edp), (Groups{{0, 2}, {1, 3}}));
}

// Axes a group of each kind may vary along; all other coordinates are shared.
struct Varies {
  bool tp, cp, dp, pp, ep, edp;
};

Varies varies(GroupKind kind) {
  switch (kind) {
    case GroupKind::Tp:
      return {true, false, false, false, false, false};
    case GroupKind::Cp:
      return {false, true, false, false, true, true};
    case GroupKind::Dp:
      return {false, false, true, false, true, true};
    case GroupKind::Pp:
      return {false, false, false, true, false, false};
    case GroupKind::DpCp:
      return {false, true, true, false, true, true};
    case GroupKind::TpCp:
      return {true, true, false, false, true, true};
    case GroupKind::Mp:
      return {true, false, false, true, false, false};
    case GroupKind::Ep:
      return {false, true, true, false, true, false};
    case GroupKind::Edp:
      return {false, true, true, false, false, true};
    case GroupKind::TpEp:
      return {true, true, true, false, true, false};
    case GroupKind::TpEpPp:
      return {true, true, true, true, true, false};
    case GroupKind::Embedding:
      return {false, false, false, true, false, false};
  }
  return {};
}

void check_grid_properties(const RankGrid& g) {
  const GridSizes& s = g.sizes();
  const int world = g.world_size();
  for (int r = 0; r < world; ++r) {
    const GridCoord c = g.coord(r);
    ASSERT_EQ(g.rank_of(c.tp_rank, c.cp_rank, c.dp_rank, c.pp_rank), r);
    ASSERT_EQ(g.expert_rank_of(c.tp_rank, c.ep_rank, c.edp_rank, c.pp_rank), r);
    ASSERT_EQ(c.ep_rank + s.ep * c.edp_rank, c.cp_rank + s.cp * c.dp_rank);
    const int next = g.pp_next_rank(r);
    ASSERT_EQ(g.pp_prev_rank(next), r);
    ASSERT_EQ(g.coord(next).pp_rank, (c.pp_rank + 1) % s.pp);
    ASSERT_EQ(g.group_index(GroupKind::Pp, next), g.group_index(GroupKind::Pp, r));
  }
  for (GroupKind kind : kAllGroupKinds) {
    SCOPED_TRACE(std::string(group_kind_name(kind)));
    const auto groups = g.groups(kind);
    ASSERT_EQ(static_cast<int>(groups.size()), g.num_groups(kind));
    std::vector<int> seen(world, 0);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const auto& members = groups[gi];
      ASSERT_EQ(static_cast<int>(members.size()), g.group_size(kind));
      ASSERT_TRUE(std::is_sorted(members.begin(), members.end()));
      if (gi > 0) {
        ASSERT_LT(groups[gi - 1].front(), members.front());
      }
      const GridCoord c0 = g.coord(members.front());
      const Varies v = varies(kind);
      std::set<int> varying_positions;
      for (size_t k = 0; k < members.size(); ++k) {
        const int r = members[k];
        ++seen[r];
        ASSERT_EQ(g.group_index(kind, r), static_cast<int>(gi));
        ASSERT_EQ(g.rank_in_group(kind, r), static_cast<int>(k));
        ASSERT_EQ(g.group_members(kind, r), members);
        const GridCoord c = g.coord(r);
        if (!v.tp) {
          ASSERT_EQ(c.tp_rank, c0.tp_rank);
        }
        if (!v.cp) {
          ASSERT_EQ(c.cp_rank, c0.cp_rank);
        }
        if (!v.dp) {
          ASSERT_EQ(c.dp_rank, c0.dp_rank);
        }
        if (!v.pp) {
          ASSERT_EQ(c.pp_rank, c0.pp_rank);
        }
        if (!v.ep) {
          ASSERT_EQ(c.ep_rank, c0.ep_rank);
        }
        if (!v.edp) {
          ASSERT_EQ(c.edp_rank, c0.edp_rank);
        }
      }
    }
    if (kind == GroupKind::Embedding) {
      for (int r = 0; r < world; ++r) {
        const bool end_stage = g.is_first_pp_stage(r) || g.is_last_pp_stage(r);
        ASSERT_EQ(seen[r], end_stage ? 1 : 0);
        ASSERT_EQ(g.group_index(kind, r) == kNoGroup, !end_stage);
      }
    } else {
      ASSERT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
    }
  }
  // Group sizes are the dimension sizes.
  ASSERT_EQ(g.group_size(GroupKind::Tp), s.tp);
  ASSERT_EQ(g.group_size(GroupKind::Cp), s.cp);
  ASSERT_EQ(g.group_size(GroupKind::Dp), s.dp);
  ASSERT_EQ(g.group_size(GroupKind::Pp), s.pp);
  ASSERT_EQ(g.group_size(GroupKind::DpCp), s.dp * s.cp);
  ASSERT_EQ(g.group_size(GroupKind::TpCp), s.tp * s.cp);
  ASSERT_EQ(g.group_size(GroupKind::Mp), s.tp * s.pp);
  ASSERT_EQ(g.group_size(GroupKind::Ep), s.ep);
  ASSERT_EQ(g.group_size(GroupKind::Edp), s.edp());
  ASSERT_EQ(g.group_size(GroupKind::TpEp), s.tp * s.ep);
  ASSERT_EQ(g.group_size(GroupKind::TpEpPp), s.tp * s.ep * s.pp);
  ASSERT_EQ(g.group_size(GroupKind::Embedding), s.pp > 1 ? 2 : 1);
}

TEST(RankGrid, PropertiesOverRandomGrids) {
  std::mt19937 rng(20240523);
  std::uniform_int_distribution<int> size(1, 4);
  for (int trial = 0; trial < 300; ++trial) {
    GridSizes s{.tp = size(rng), .cp = size(rng), .dp = size(rng), .pp = size(rng)};
    std::vector<int> divisors;
    for (int e = 1; e <= s.dp * s.cp; ++e)
      if (s.dp * s.cp % e == 0) divisors.push_back(e);
    s.ep = divisors[rng() % divisors.size()];
    SCOPED_TRACE(fmt::format("tp {} cp {} dp {} pp {} ep {}", s.tp, s.cp, s.dp, s.pp, s.ep));
    const RankGrid g(s);
    ASSERT_EQ(g.world_size(), s.tp * s.cp * s.dp * s.pp);
    check_grid_properties(g);
    if (HasFatalFailure()) return;
  }
}

TEST(RankGrid, TrivialGridHasOneRank) {
  const RankGrid g(GridSizes{});
  EXPECT_EQ(g.world_size(), 1);
  for (GroupKind kind : kAllGroupKinds) EXPECT_EQ(g.groups(kind), (Groups{{0}}));
  EXPECT_EQ(g.pp_next_rank(0), 0);
  EXPECT_TRUE(g.is_first_pp_stage(0) && g.is_last_pp_stage(0));
}

using testing::error_of;

TEST(RankGrid, RejectsOutOfRangeRanksAndCoordinates) {
  const RankGrid g(GridSizes{.tp = 2, .dp = 2, .pp = 4}, 16);
  EXPECT_EQ(error_of([&] { g.coord(16); }), "rank (16) is outside the world of 16 ranks (0..15)");
  EXPECT_EQ(error_of([&] { g.group_members(GroupKind::Tp, -1); }),
            "rank (-1) is outside the world of 16 ranks (0..15)");
  EXPECT_EQ(error_of([&] { g.rank_of(2, 0, 0, 0); }),
            "coordinate (tp 2, cp 0, dp 0, pp 0) is outside the grid (tp 2, cp 1, dp 2, pp 4)");
  EXPECT_EQ(
      error_of([&] { g.expert_rank_of(0, 1, 0, 0); }),
      "expert coordinate (tp 0, ep 1, edp 0, pp 0) is outside the grid (tp 2, ep 1, edp 2, pp 4)");
}

TEST(GroupKind, NamesRoundTrip) {
  for (GroupKind kind : kAllGroupKinds)
    EXPECT_EQ(group_kind_from_name(group_kind_name(kind)), kind);
  EXPECT_EQ(error_of([] { group_kind_from_name("zp"); }),
            "unknown group kind 'zp' (known: tp, cp, dp, pp, dp_cp, tp_cp, mp, ep, edp, tp_ep, "
            "tp_ep_pp, embedding)");
}

}  // namespace
}  // namespace parallm
