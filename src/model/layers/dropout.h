// Hidden dropout on the residual stream's rows, keyed by global indices: the
// mask of an element is a pure function of (layer key, site, global sample,
// global token position, channel), so it is the same under any tp / sp / dp
// layout and is regenerated in backward instead of being stored.
// Invariant: p == 0 or key == 0 leaves x untouched and draws nothing.
#pragma once
#include <cstdint>

#include "nn/layer_context.h"

namespace parallm {

// The key of one layer's dropout sites, from the micro-batch's seed (0 stays 0).
uint64_t layer_dropout_key(uint64_t seed, int64_t layer);

// Sites inside a block.
enum class DropoutSite : uint64_t { Attention = 1, AttnOut = 2, MlpOut = 3 };

// x (rows, C) *= mask / (1 - p) in place, where the rows are the stream rows
// [row0, row0 + rows) of the micro-batch's flattened B x T rows (row0 =
// tp rank * rows under sequence parallelism, else 0). Used for forward and,
// with the same arguments, for the backward of the gradient.
void hidden_dropout(const LayerContext& c, DropoutSite site, double p, float* x, int64_t row0,
                    int64_t rows, int64_t C);

}  // namespace parallm
