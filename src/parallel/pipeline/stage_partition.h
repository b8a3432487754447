// Which transformer layers each pipeline stage (and each of its model chunks)
// holds. Layers are cut into pp x V consecutive ranges, one per virtual
// stage, evenly by default (sizes differ by at most one, the larger ones
// first) or as the user lists them ("3,5,5,3"); the placement (placement.h)
// says which stage and chunk hold each. The embedding lives on virtual stage
// 0, the final norm, head and loss on the last (stage pp - 1 in the loop,
// stage 0 in DualPipeV's V). Invariant: the ranges cover every layer
// exactly once, each at least one layer; otherwise a clear error.
#pragma once
#include <string>
#include <vector>

#include "parallel/pipeline/placement.h"

namespace parallm::pipeline {

struct ChunkLayers {
  int stage = 0, chunk = 0, virtual_stage = 0;
  int first_layer = 0, num_layers = 0;  // layers [first, first + num)
  bool has_embedding = false, has_head = false;
};

struct StagePartition {
  int pp = 1, virtual_stages = 1, num_layers = 0;
  Placement placement = Placement::Loop;
  std::vector<ChunkLayers> chunks;  // indexed by virtual stage

  const ChunkLayers& at(int stage, int chunk) const {
    return chunks[placed_virtual_stage(placement, pp, stage, chunk)];
  }
};

// counts: empty for the even split, else one layer count per virtual stage
// (pp x V of them, in virtual-stage order) summing to num_layers.
StagePartition partition_layers(int num_layers, int pp, int virtual_stages,
                                const std::vector<int>& counts = {},
                                Placement placement = Placement::Loop);

// "3,5,5,3" -> {3, 5, 5, 3}; errors name the bad entry.
std::vector<int> parse_layer_counts(const std::string& text);

}  // namespace parallm::pipeline
