// The NCCL calls behind each collective: the native collective where NCCL
// has one (broadcast, reduce, all_reduce, all_gather, reduce_scatter; barrier
// = all_reduce of one int), grouped ncclSend/ncclRecv for gather, scatter,
// all_to_all and all_to_all_v, plus device copies of a rank's own block.
// Data movement runs on bytes (every DType moves); reductions use NCCL's
// types. In-place all_to_all(_v) sends from a stream-ordered copy of the
// input, since its blocks are overwritten while others are still being sent.
#pragma once
#include <string>

#include "comm/nccl/nccl_channel.h"
#include "comm/op_spec.h"

namespace parallm::comm {

// Enqueues collective s (not Send/Recv) on ch's stream; ch.begin() came first.
void enqueue_collective(const OpSpec& s, NcclChannel& ch, int rank, int size,
                        const std::string& what);

}  // namespace parallm::comm
