// Resolution order for the world size: explicit flag, launcher, product.
#include "grid/grid_request.h"

namespace parallm {

RankGrid resolve_grid(const GridRequest& req) {
  std::optional<int> world = req.world_size;
  if (!world && req.launch_world_size > 1) world = req.launch_world_size;
  if (!world) return RankGrid(req.sizes);
  GridSizes sizes = req.sizes;
  if (!req.dp_given) sizes.dp = derive_dp(sizes, *world);
  return RankGrid(sizes, *world);
}

}  // namespace parallm
