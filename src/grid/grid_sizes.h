// GridSizes: how many ways each parallel dimension splits the world, and the
// checks that a layout is possible. Checked before anything is allocated
// (DESIGN principle 8): every violation is reported with the values involved.
// Invariant of a valid layout: tp x cp x dp x pp == world, and ep divides
// dp x cp (expert layers fold the dp x cp ranks into ep x expert-dp).
#pragma once
#include <string>
#include <vector>

namespace parallm {

struct GridSizes {
  int tp = 1;  // tensor parallel (fastest-varying in the rank order)
  int cp = 1;  // context parallel
  int dp = 1;  // data parallel
  int pp = 1;  // pipeline parallel (slowest-varying)
  int ep = 1;  // expert parallel; folds dp x cp, adds nothing to the world size

  // tp x cp x dp x pp in 64 bits, so absurd planning inputs cannot overflow.
  long long world_size() const;
  int edp() const { return dp * cp / ep; }  // expert data parallel; valid sizes only
  bool operator==(const GridSizes&) const = default;
};

// Every violated constraint, one message each, e.g.
// "world size (8) is not equal to tp (2) x cp (1) x dp (2) x pp (4) = 16".
// Empty when the sizes form a valid grid of world_size ranks.
std::vector<std::string> grid_size_violations(const GridSizes& sizes, int world_size);

// Throws parallm::Error listing every violation (joined by "; ").
void check_grid_sizes(const GridSizes& sizes, int world_size);

// Megatron's rule when dp is not given: dp = world / (tp x cp x pp).
// Throws when the world size is not a multiple of tp x cp x pp.
int derive_dp(const GridSizes& sizes, int world_size);

}  // namespace parallm
