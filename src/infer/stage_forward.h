// stage_forward: one cached forward of this rank's part of the model. Under
// pipeline parallelism the hidden rows come from the stage before and go to
// the stage after; only the last stage returns logits (S, V). Every rank of
// a stage makes the same call with the same tokens and spans. Hidden rows
// and logits are buffers of the model's device.
#pragma once
#include <vector>

#include "comm/communicator.h"
#include "model/transformer.h"

namespace parallm {

// pp: this stage's pipeline group (null: the model is whole).
Tensor stage_forward(Transformer& model, const std::vector<int32_t>& tokens,
                     const std::vector<PagedSpan>& spans, PagedKvCache& cache,
                     comm::Communicator* pp);

// t where host code reads it: t itself on the host, else a copy in memory of
// `host` (the sampler reads a device's logits so).
Tensor on_host(const Tensor& t, Allocator& host);

}  // namespace parallm
