// The loop and V placements of virtual stages on pipeline stages.
#include "parallel/pipeline/placement.h"

namespace parallm::pipeline {

int placed_virtual_stage(Placement p, int pp, int stage, int chunk) {
  if (p == Placement::V && chunk % 2 == 1) return (chunk + 1) * pp - 1 - stage;
  return chunk * pp + stage;
}

StageChunk place_virtual_stage(Placement p, int pp, int virtual_stage) {
  const int chunk = virtual_stage / pp, offset = virtual_stage % pp;
  if (p == Placement::V && chunk % 2 == 1) return {pp - 1 - offset, chunk};
  return {offset, chunk};
}

}  // namespace parallm::pipeline
