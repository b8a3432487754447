// Where each virtual stage (a position along the whole model) lives: which
// pipeline stage and which of its model chunks. Two placements:
// - Loop (GPipe, 1F1B, interleaved, ZB-H1): virtual stage c * pp + s is
//   chunk c of stage s, so activations go 0 -> 1 -> ... -> pp-1 -> 0 -> ...
// - V (DualPipeV): even chunks go down the stages, odd chunks come back up,
//   so chunk 0 of stage s is virtual stage s and chunk 1 is 2 pp - 1 - s;
//   stage pp-1 holds the two middle virtual stages (a local hand-over, no
//   message) and stage 0 holds the first and the last (embedding and head).
// Invariant: the map is a bijection between (stage, chunk) and [0, pp x V).
#pragma once

namespace parallm::pipeline {

enum class Placement { Loop, V };

struct StageChunk {
  int stage = 0, chunk = 0;
};

int placed_virtual_stage(Placement p, int pp, int stage, int chunk);
StageChunk place_virtual_stage(Placement p, int pp, int virtual_stage);

}  // namespace parallm::pipeline
