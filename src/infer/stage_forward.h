// stage_forward: one cached forward of this rank's part of the model. Under
// pipeline parallelism the hidden rows come from the stage before and go to
// the stage after; only the last stage returns logits (S, V). Every rank of
// a stage makes the same call with the same tokens and spans.
#pragma once
#include <vector>

#include "comm/communicator.h"
#include "model/transformer.h"

namespace parallm {

// pp: this stage's pipeline group (null: the model is whole).
Tensor stage_forward(Transformer& model, const std::vector<int32_t>& tokens,
                     const std::vector<PagedSpan>& spans, PagedKvCache& cache,
                     comm::Communicator* pp);

}  // namespace parallm
