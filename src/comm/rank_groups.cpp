// split_groups (see rank_groups.h).
#include "comm/rank_groups.h"

#include <fmt/core.h>

namespace parallm {

RankGroups split_groups(const RankGrid& grid, comm::Communicator* world, int rank) {
  RankGroups g;
  if (grid.world_size() == 1) return g;
  auto split = [&](GroupKind kind, const char* name) {
    const int i = grid.group_index(kind, rank);
    return world->split(i, grid.rank_in_group(kind, rank), fmt::format("{}[{}]", name, i));
  };
  g.dp = split(GroupKind::Dp, "dp");
  g.tp = split(GroupKind::Tp, "tp");
  if (grid.sizes().cp > 1) {
    g.cp = split(GroupKind::Cp, "cp");
    g.dp_cp = split(GroupKind::DpCp, "dp_cp");
  }
  if (grid.sizes().pp > 1) {
    g.pp = split(GroupKind::Pp, "pp");
    g.embedding = split(GroupKind::Embedding, "embedding");
  }
  if (grid.sizes().ep > 1) {
    g.ep = split(GroupKind::Ep, "ep");
    g.edp = split(GroupKind::Edp, "edp");
  }
  return g;
}

}  // namespace parallm
