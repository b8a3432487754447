// ModelStage: which part of the transformer one process holds. A list of
// chunks, each a contiguous range of global layer indices (one chunk per
// virtual pipeline stage on this rank), plus whether it holds the embedding
// (first virtual stage) and the final norm + LM head + loss (last virtual
// stage: the last pipeline stage, or the first in DualPipeV's V).
// The default (empty chunks) is the whole model. Parameter names keep the
// global layer index, so the counter-based init gives a stage exactly its
// slice of the one-process model.
#pragma once
#include <vector>

namespace parallm {

struct LayerRange {
  int first = 0, count = 0;  // layers [first, first + count)
};

struct ModelStage {
  std::vector<LayerRange> chunks;  // empty: one chunk with every layer
  bool embedding = true;           // on the chunk 0 input
  bool head = true;                // on the last chunk's output
};

}  // namespace parallm
