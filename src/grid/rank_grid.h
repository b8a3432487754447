// RankGrid: the 5-D layout of ranks, as pure arithmetic (no MPI). A rank is
//   rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank))
// (tp fastest, so tensor-parallel peers share a node). Expert layers read the
// same ranks as (tp, ep, edp, pp) with dc = cp_rank + cp * dp_rank folded as
// ep_rank = dc % ep, edp_rank = dc / ep (Megatron-Core's expert order).
// Invariants: every kind's groups partition the world (embedding: its
// members only); each group is sorted and groups are sorted by first member.
#pragma once
#include <vector>

#include "grid/grid_sizes.h"
#include "grid/group_kind.h"

namespace parallm {

// Where one rank sits on every axis of both readings of the grid.
struct GridCoord {
  int tp_rank = 0, cp_rank = 0, dp_rank = 0, pp_rank = 0;
  int ep_rank = 0, edp_rank = 0;  // expert layers: (tp, ep, edp, pp)
  bool operator==(const GridCoord&) const = default;
};

inline constexpr int kNoGroup = -1;  // a rank outside every group of a kind

class RankGrid {
 public:
  // Validates (check_grid_sizes) before anything else; world = the product.
  explicit RankGrid(const GridSizes& sizes);
  RankGrid(const GridSizes& sizes, int world_size);

  const GridSizes& sizes() const { return sizes_; }
  int world_size() const { return world_size_; }

  GridCoord coord(int rank) const;
  int rank_of(int tp_rank, int cp_rank, int dp_rank, int pp_rank) const;
  int expert_rank_of(int tp_rank, int ep_rank, int edp_rank, int pp_rank) const;

  // Ranks per group (embedding: 2, or 1 when pp == 1) and number of groups.
  int group_size(GroupKind kind) const;
  int num_groups(GroupKind kind) const;
  // Every group of a kind, each sorted ascending; index = group_index.
  std::vector<std::vector<int>> groups(GroupKind kind) const;
  // The group containing rank (empty for a middle stage and kEmbedding).
  std::vector<int> group_members(GroupKind kind, int rank) const;
  // Which of groups(kind) holds rank, or kNoGroup (kEmbedding only).
  int group_index(GroupKind kind, int rank) const;
  // Position of rank inside its group (its rank in that communicator), or kNoGroup.
  int rank_in_group(GroupKind kind, int rank) const;

  bool is_first_pp_stage(int rank) const { return coord(rank).pp_rank == 0; }
  bool is_last_pp_stage(int rank) const { return coord(rank).pp_rank == sizes_.pp - 1; }
  // Same (tp, cp, dp) position one stage later / earlier; wraps around the
  // ends (as Megatron does), so callers test is_first/last_pp_stage first.
  int pp_next_rank(int rank) const;
  int pp_prev_rank(int rank) const;

 private:
  void check_rank(int rank) const;

  GridSizes sizes_;
  int world_size_;
};

}  // namespace parallm
