// TpGroup: what a layer needs to run tensor parallel: the tp communicator
// (null or size 1: no tensor parallelism), whether sequence parallelism is
// on. Passed explicitly to the model at construction (DESIGN principle 3);
// its traffic is counted by the communicator (tp_traffic below).
// Invariant: every rank of the group builds the same model with the same
// TpGroup settings, so collectives line up call for call.
#pragma once
#include <cstdint>

#include "comm/communicator.h"
#include "ops/stream.h"

namespace parallm {

// The traffic of a tp communicator, split by op kind, a rule the
// Communicator's own counters can apply (docs/tensor_parallel.md): "sp" is
// its all-gathers and reduce-scatters (sequence parallelism's gather and
// scatter of the residual stream; also the rarer tp gathers of inference
// logits and Muon's tp weights), "tp" every other op (all-reduces: the
// layers' and the loss's, the partial-gradient sync, the norm sum).
struct TpTraffic {
  comm::OpTally tp, sp;
};
TpTraffic tp_traffic(const comm::CommCounters& c);

struct TpGroup {
  comm::Communicator* comm = nullptr;
  bool sequence_parallel = false;
  // Where the group's buffers live (null: the host), for the copies the
  // mappings make between them.
  const ops::Stream* on = nullptr;

  const ops::Stream& stream() const { return on != nullptr ? *on : ops::Stream::host(); }
  int size() const { return comm ? comm->size() : 1; }
  int rank() const { return comm ? comm->rank() : 0; }
  bool active() const { return size() > 1; }
  // Sequence parallel only means something with more than one rank.
  bool sp() const { return sequence_parallel && active(); }
};

// Rows of the residual stream this rank holds: N, or N / tp under sequence
// parallelism (a contiguous block of the B*T token rows; B == 1 makes it
// exactly a slice of the sequence). Throws when N does not divide.
int64_t tp_local_rows(const TpGroup& g, int64_t N);

}  // namespace parallm
