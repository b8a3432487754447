// GridRequest: what a user asked for on the command line, resolved into a
// RankGrid. The world size comes from --world, else from the launcher (when
// run under mpirun/srun), else it is the product of the sizes; dp, when not
// given and the world is known, is derived as Megatron does.
#pragma once
#include <optional>

#include "grid/grid_sizes.h"
#include "grid/rank_grid.h"

namespace parallm {

struct GridRequest {
  GridSizes sizes;
  bool dp_given = true;                          // false: dp = world / (tp x cp x pp)
  std::optional<int> world_size = std::nullopt;  // --world
  int launch_world_size = 1;                     // LaunchEnv::world_size; 1 when not launched
};

// Throws parallm::Error (with the values) when the request is not a grid.
RankGrid resolve_grid(const GridRequest& request);

}  // namespace parallm
