// Assembles one parameter's full (global_shape) tensor from the shards the
// tp ranks hold, for checkpoints and layout-invariance tests. Collective over
// the tp group when the parameter is tp-sharded; a replicated parameter, or an
// inactive group, returns the local values. Vocab-padded tables come back
// with their padded rows (the first vocab rows are the model's).
#pragma once
#include <vector>

#include "nn/parameters.h"
#include "parallel/tensor/tp_group.h"

namespace parallm {

// local: parameter i's values on this rank (ps.numel(i) floats).
std::vector<float> gather_tp_parameter(const ParameterSet& ps, int i, const float* local,
                                       const TpGroup& tp);

}  // namespace parallm
