// The communicators of one layout pp x tp x dp, built on the first
// pp*tp*dp ranks of the world for a layout test (the other ranks sit it
// out). A 1 x 1 x 1 layout splits nothing: every rank runs the one-process
// job on its own, which is the reference the layouts are compared with.
#pragma once
#include <memory>

#include "comm/communicator.h"
#include "grid/rank_grid.h"

namespace parallm::testing {

struct LayoutGroups {
  bool member = true;  // false: this rank is outside the layout
  std::unique_ptr<comm::Communicator> layout, tp, dp, pp, embedding;
  int pp_rank = 0;
};

// Collective over the whole world whenever the layout has more than one rank.
inline LayoutGroups split_layout(comm::Communicator& world, const GridSizes& sizes) {
  LayoutGroups g;
  const int n = static_cast<int>(sizes.world_size());
  if (n == 1) return g;
  const int rank = world.rank();
  g.member = rank < n;
  // Ranks beyond the layout take color -1 and get no communicator.
  g.layout = world.split(g.member ? 0 : -1, rank, "layout");
  if (!g.member) return g;
  const RankGrid grid(sizes, n);
  const int r = g.layout->rank();
  auto split = [&](GroupKind k, const char* name) {
    return g.layout->split(grid.group_index(k, r), grid.rank_in_group(k, r), name);
  };
  g.tp = split(GroupKind::Tp, "tp");
  g.dp = split(GroupKind::Dp, "dp");
  g.pp = split(GroupKind::Pp, "pp");
  g.embedding = split(GroupKind::Embedding, "embedding");
  g.pp_rank = grid.coord(r).pp_rank;
  return g;
}

}  // namespace parallm::testing
