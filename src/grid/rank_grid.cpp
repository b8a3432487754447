// Rank grid arithmetic. Every group kind except "embedding" is "ranks that
// agree on all axes but some": a reading of the rank (dense: tp, cp, dp, pp;
// expert: tp, ep, edp, pp, both mixed radix with tp fastest) plus the set of
// axes that vary inside a group. Numbering groups and members fastest-axis
// first makes both lists ascending in rank, which MPI_Comm_split colours and
// keys can use directly.
#include "grid/rank_grid.h"

#include <algorithm>
#include <array>

#include "base/error.h"

namespace parallm {
namespace {

struct Reading {
  std::array<int, 4> size;  // axis sizes, fastest first
  unsigned varying;         // bit i set: axis i varies within a group
};

std::array<int, 4> decompose(int rank, const std::array<int, 4>& size) {
  std::array<int, 4> c{};
  for (int i = 0; i < 4; ++i) {
    c[i] = rank % size[i];
    rank /= size[i];
  }
  return c;
}

int compose(const std::array<int, 4>& c, const std::array<int, 4>& size) {
  int rank = 0;
  for (int i = 3; i >= 0; --i) rank = rank * size[i] + c[i];
  return rank;
}

// Mixed-radix index of the axes selected (want_varying) or not, fastest first.
int sub_index(const std::array<int, 4>& c, const Reading& r, bool want_varying) {
  int index = 0;
  for (int i = 3; i >= 0; --i) {
    if (((r.varying >> i) & 1u) != static_cast<unsigned>(want_varying)) continue;
    index = index * r.size[i] + c[i];
  }
  return index;
}

Reading reading_of(GroupKind kind, const GridSizes& s) {
  const std::array<int, 4> dense = {s.tp, s.cp, s.dp, s.pp};
  const std::array<int, 4> expert = {s.tp, s.ep, s.edp(), s.pp};
  switch (kind) {
    case GroupKind::Tp:
      return {dense, 0b0001};
    case GroupKind::Cp:
      return {dense, 0b0010};
    case GroupKind::Dp:
      return {dense, 0b0100};
    case GroupKind::Pp:
      return {dense, 0b1000};
    case GroupKind::DpCp:
      return {dense, 0b0110};
    case GroupKind::TpCp:
      return {dense, 0b0011};
    case GroupKind::Mp:
      return {dense, 0b1001};
    case GroupKind::Ep:
      return {expert, 0b0010};
    case GroupKind::Edp:
      return {expert, 0b0100};
    case GroupKind::TpEp:
      return {expert, 0b0011};
    case GroupKind::TpEpPp:
      return {expert, 0b1011};
    case GroupKind::Embedding:
      break;
  }
  PX_FAIL("group kind '{}' has no axis reading", group_kind_name(kind));
}

constexpr long long kMaxWorld = 2147483647;

// The world implied by the sizes. A non-positive product means some size is
// below 1, which check_grid_sizes reports by itself, so 1 stands in for it.
int implied_world(const GridSizes& s) {
  const long long p = s.world_size();
  PX_CHECK(p <= kMaxWorld,
           "tp ({}) x cp ({}) x dp ({}) x pp ({}) = {} exceeds the largest world size ({})", s.tp,
           s.cp, s.dp, s.pp, p, kMaxWorld);
  return p > 0 ? static_cast<int>(p) : 1;
}

}  // namespace

RankGrid::RankGrid(const GridSizes& sizes) : RankGrid(sizes, implied_world(sizes)) {}

RankGrid::RankGrid(const GridSizes& sizes, int world_size)
    : sizes_(sizes), world_size_(world_size) {
  check_grid_sizes(sizes, world_size);
}

void RankGrid::check_rank(int rank) const {
  PX_CHECK(rank >= 0 && rank < world_size_, "rank ({}) is outside the world of {} ranks (0..{})",
           rank, world_size_, world_size_ - 1);
}

GridCoord RankGrid::coord(int rank) const {
  check_rank(rank);
  const auto d = decompose(rank, {sizes_.tp, sizes_.cp, sizes_.dp, sizes_.pp});
  const int dc = d[1] + sizes_.cp * d[2];
  return GridCoord{d[0], d[1], d[2], d[3], dc % sizes_.ep, dc / sizes_.ep};
}

int RankGrid::rank_of(int tp_rank, int cp_rank, int dp_rank, int pp_rank) const {
  PX_CHECK(
      tp_rank >= 0 && tp_rank < sizes_.tp && cp_rank >= 0 && cp_rank < sizes_.cp && dp_rank >= 0 &&
          dp_rank < sizes_.dp && pp_rank >= 0 && pp_rank < sizes_.pp,
      "coordinate (tp {}, cp {}, dp {}, pp {}) is outside the grid (tp {}, cp {}, dp {}, pp {})",
      tp_rank, cp_rank, dp_rank, pp_rank, sizes_.tp, sizes_.cp, sizes_.dp, sizes_.pp);
  return compose({tp_rank, cp_rank, dp_rank, pp_rank},
                 {sizes_.tp, sizes_.cp, sizes_.dp, sizes_.pp});
}

int RankGrid::expert_rank_of(int tp_rank, int ep_rank, int edp_rank, int pp_rank) const {
  PX_CHECK(tp_rank >= 0 && tp_rank < sizes_.tp && ep_rank >= 0 && ep_rank < sizes_.ep &&
               edp_rank >= 0 && edp_rank < sizes_.edp() && pp_rank >= 0 && pp_rank < sizes_.pp,
           "expert coordinate (tp {}, ep {}, edp {}, pp {}) is outside the grid "
           "(tp {}, ep {}, edp {}, pp {})",
           tp_rank, ep_rank, edp_rank, pp_rank, sizes_.tp, sizes_.ep, sizes_.edp(), sizes_.pp);
  return compose({tp_rank, ep_rank, edp_rank, pp_rank},
                 {sizes_.tp, sizes_.ep, sizes_.edp(), sizes_.pp});
}

int RankGrid::group_size(GroupKind kind) const {
  if (kind == GroupKind::Embedding) return sizes_.pp > 1 ? 2 : 1;
  const Reading r = reading_of(kind, sizes_);
  int n = 1;
  for (int i = 0; i < 4; ++i)
    if ((r.varying >> i) & 1u) n *= r.size[i];
  return n;
}

int RankGrid::num_groups(GroupKind kind) const {
  // One embedding group per pipeline (per pp group), like every dense kind
  // whose groups cover all ranks.
  if (kind == GroupKind::Embedding) return world_size_ / sizes_.pp;
  return world_size_ / group_size(kind);
}

int RankGrid::group_index(GroupKind kind, int rank) const {
  check_rank(rank);
  if (kind == GroupKind::Embedding) {
    const GridCoord c = coord(rank);
    if (c.pp_rank != 0 && c.pp_rank != sizes_.pp - 1) return kNoGroup;
    return group_index(GroupKind::Pp, rank);
  }
  const Reading r = reading_of(kind, sizes_);
  return sub_index(decompose(rank, r.size), r, false);
}

int RankGrid::rank_in_group(GroupKind kind, int rank) const {
  check_rank(rank);
  if (kind == GroupKind::Embedding) {
    const GridCoord c = coord(rank);
    if (c.pp_rank == 0) return 0;
    return c.pp_rank == sizes_.pp - 1 ? 1 : kNoGroup;
  }
  const Reading r = reading_of(kind, sizes_);
  return sub_index(decompose(rank, r.size), r, true);
}

std::vector<int> RankGrid::group_members(GroupKind kind, int rank) const {
  check_rank(rank);
  if (kind == GroupKind::Embedding) {
    if (group_index(kind, rank) == kNoGroup) return {};
    const GridCoord c = coord(rank);
    const int first = rank_of(c.tp_rank, c.cp_rank, c.dp_rank, 0);
    const int last = rank_of(c.tp_rank, c.cp_rank, c.dp_rank, sizes_.pp - 1);
    return first == last ? std::vector<int>{first} : std::vector<int>{first, last};
  }
  const Reading r = reading_of(kind, sizes_);
  const std::array<int, 4> base = decompose(rank, r.size);
  std::vector<int> members;
  members.reserve(group_size(kind));
  for (int m = 0, n = group_size(kind); m < n; ++m) {
    std::array<int, 4> c = base;
    int rest = m;
    for (int i = 0; i < 4; ++i) {
      if (!((r.varying >> i) & 1u)) continue;
      c[i] = rest % r.size[i];
      rest /= r.size[i];
    }
    members.push_back(compose(c, r.size));
  }
  std::sort(members.begin(), members.end());  // already ascending; keeps the invariant explicit
  return members;
}

std::vector<std::vector<int>> RankGrid::groups(GroupKind kind) const {
  std::vector<std::vector<int>> out(num_groups(kind));
  for (int rank = 0; rank < world_size_; ++rank) {
    const int g = group_index(kind, rank);
    if (g != kNoGroup) out[g].push_back(rank);
  }
  return out;
}

int RankGrid::pp_next_rank(int rank) const {
  const GridCoord c = coord(rank);
  return rank_of(c.tp_rank, c.cp_rank, c.dp_rank, (c.pp_rank + 1) % sizes_.pp);
}

int RankGrid::pp_prev_rank(int rank) const {
  const GridCoord c = coord(rank);
  return rank_of(c.tp_rank, c.cp_rank, c.dp_rank, (c.pp_rank + sizes_.pp - 1) % sizes_.pp);
}

}  // namespace parallm
