// pipeline_forward: this rank's pipeline stage runs one server step as
// micro-batches in flight (GPipe, forward only). Stage s runs micro-batch m
// while stage s+1 runs m-1: each stage receives micro-batch m's hidden rows
// (posted before m-1 is computed), runs its layers on them and sends the
// result on without waiting for the next stage to take it. Every rank of a
// stage makes the same call with the same step and micro-batches. Each span
// uses only its own blocks, so the KV writes are the unsplit step's; the
// last stage returns the logits (spans.size(), V) in the step's span order.
#pragma once
#include <vector>

#include "comm/communicator.h"
#include "infer/serve/micro_batches.h"
#include "model/transformer.h"

namespace parallm::serve {

// groups: split_micro_batches(spans, ...); pp: this stage's pipeline group.
// Returns an empty Tensor on every stage but the last.
Tensor pipeline_forward(Transformer& model, const std::vector<int32_t>& tokens,
                        const std::vector<PagedSpan>& spans, const std::vector<MicroBatch>& groups,
                        PagedKvCache& cache, comm::Communicator& pp);

}  // namespace parallm::serve
