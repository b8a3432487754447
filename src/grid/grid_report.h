// What `parallm grid` prints: the sizes, every non-trivial group list, a
// picture with one row per pipeline stage (like the PTD figure of seed 004),
// and a per-node table of rank coordinates; or the same facts as JSON.
// Nodes are assumed to hold consecutive ranks: node = rank / gpus_per_node.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "grid/rank_grid.h"

namespace parallm {

// Human-readable report; gpus_per_node >= 1 (the last node may be partial).
std::string format_grid_text(const RankGrid& grid, int gpus_per_node);

// Machine-readable report: sizes, every kind's groups, each rank's coordinates.
nlohmann::ordered_json grid_to_json(const RankGrid& grid, int gpus_per_node);
// grid_to_json as text with one group kind and one rank per line (valid JSON,
// still readable; nlohmann's indented dump puts every number on its own line).
std::string format_grid_json(const RankGrid& grid, int gpus_per_node);

// Groups as "[0 1] [2 3]"; shared with the text report and tests.
std::string format_groups(const std::vector<std::vector<int>>& groups);

}  // namespace parallm
