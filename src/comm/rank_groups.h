// RankGroups: this rank's communicators, split from the world by the rank
// grid (tp fastest, then cp, dp, pp). Training and distributed generation
// both build them, so a rank's tp and pp peers are the same in both.
#pragma once
#include <memory>

#include "comm/communicator.h"
#include "grid/rank_grid.h"

namespace parallm {

struct RankGroups {
  std::unique_ptr<comm::Communicator> dp, tp, pp;
  std::unique_ptr<comm::Communicator> cp, dp_cp;  // cp > 1 only: context parallel, dp x cp
  std::unique_ptr<comm::Communicator> embedding;  // first + last stage; null on middle ones
  std::unique_ptr<comm::Communicator> ep, edp;    // expert parallel, expert data parallel (ep > 1)
};

// Collective over world: every rank calls it. All null in a one-process run.
RankGroups split_groups(const RankGrid& grid, comm::Communicator* world, int rank);

}  // namespace parallm
