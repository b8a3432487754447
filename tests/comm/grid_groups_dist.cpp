// Collectives on the real groups of rank grids: for every way of writing the
// world size as tp x cp x dp x pp (and every ep dividing dp x cp), each group
// kind's communicator is split from the world by the grid's own (group index,
// rank in group) and checked against the grid: size, rank, an all-reduce and
// an all-gather of global ranks, and a broadcast from the group's last member.
// Expectations come from RankGrid's member lists, not from the backend.
#include <gtest/gtest.h>

#include <numeric>

#include "dist_env.h"
#include "grid/rank_grid.h"

namespace parallm::comm::dist {
namespace {

std::vector<GridSizes> grids_for(int world) {
  std::vector<GridSizes> out;
  for (int tp = 1; tp <= world; ++tp)
    for (int cp = 1; tp * cp <= world; ++cp)
      for (int pp = 1; tp * cp * pp <= world; ++pp) {
        if (world % (tp * cp * pp) != 0) continue;
        int dp = world / (tp * cp * pp);
        for (int ep = 1; ep <= dp * cp; ++ep)
          if ((dp * cp) % ep == 0)
            out.push_back(GridSizes{.tp = tp, .cp = cp, .dp = dp, .pp = pp, .ep = ep});
      }
  return out;
}

TEST(GridGroups, EveryGroupOfEveryGridCommunicates) {
  Communicator& world = *dist_env().world;
  const int me = world.rank();
  int checked = 0;
  for (const GridSizes& s : grids_for(world.size())) {
    RankGrid grid(s, world.size());
    for (GroupKind kind : kAllGroupKinds) {
      const int index = grid.group_index(kind, me);
      auto comm = world.split(index == kNoGroup ? -1 : index, grid.rank_in_group(kind, me),
                              std::string(group_kind_name(kind)));
      if (index == kNoGroup) {
        EXPECT_EQ(comm, nullptr);
        continue;
      }
      const std::vector<int> members = grid.group_members(kind, me);
      SCOPED_TRACE(fmt::format("tp {} cp {} dp {} pp {} ep {} group {} {}", s.tp, s.cp, s.dp, s.pp,
                               s.ep, group_kind_name(kind), fmt::join(members, ",")));
      ASSERT_NE(comm, nullptr);
      ASSERT_EQ(comm->size(), static_cast<int>(members.size()));
      ASSERT_EQ(comm->rank(), grid.rank_in_group(kind, me));
      ASSERT_EQ(members[comm->rank()], me);

      int64_t sum = me;
      comm->all_reduce(&sum, 1, DType::I64, ReduceOp::Sum);
      EXPECT_EQ(sum, std::accumulate(members.begin(), members.end(), int64_t{0}));

      std::vector<int32_t> gathered(members.size(), -1);
      int32_t mine = me;
      comm->all_gather(&mine, gathered.data(), 1, DType::I32);
      EXPECT_EQ(std::vector<int>(gathered.begin(), gathered.end()), members);

      float value = static_cast<float>(me) + 0.5f;
      comm->broadcast(&value, 1, DType::F32, comm->size() - 1);
      EXPECT_EQ(value, static_cast<float>(members.back()) + 0.5f);
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace parallm::comm::dist
