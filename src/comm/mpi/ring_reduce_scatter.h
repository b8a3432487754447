// A ring reduce-scatter over point-to-point messages, for the sums that
// Open MPI's MPI_Reduce_scatter_block serves slowly: on shared memory its
// tuned choice reduces to one root and scatters, and measured here (2 ranks,
// vader) it took 1.27 ms for 1.5 MB of f32 where an all-gather of the same
// bytes took 0.14 ms. The ring moves each block n - 1 times between
// neighbours and sums as it goes; each rank receives its neighbour's partial
// sum, adds its own input and passes it on (Patarasuk and Yuan's bandwidth-
// optimal schedule), so every rank sends and receives (n - 1) / n of the
// buffer. Invariant: block b's sum is formed in one fixed order (ranks b + 1,
// b + 2, ..., b around the ring), independent of timing and thread count;
// with 2 ranks it is the same bits as any order.
#pragma once
#include "comm/mpi/mpi_include.h"

#include <cstddef>
#include <vector>

namespace parallm::comm {

// The tag the ring's messages carry; Send/Recv of callers must stay below it
// (make_plan checks).
constexpr int kRingTag = 32766;

// Below this many input bytes MPI's own call is as fast (64 KiB: 0.86-0.97x
// the ring's time at 2-3 ranks; 256 KiB: 4-5x slower).
constexpr size_t kRingMinBytes = 128 * 1024;

// True when the ring serves this call: a sum of f32 or f64 of `count`
// elements per rank's block over `ranks` ranks, at least kRingMinBytes in all.
bool ring_reduce_scatter_serves(MPI_Datatype type, MPI_Op op, int count, int ranks);

// MPI_Reduce_scatter_block's contract for a sum (send may be MPI_IN_PLACE:
// then recv holds the n x count input and receives this rank's block at
// its start). scratch holds the two blocks in flight; it grows to 2 x count
// elements and is kept for the next call. Blocking; returns MPI's code.
int ring_reduce_scatter(const void* send, void* recv, int count, MPI_Datatype type, MPI_Comm comm,
                        std::vector<std::byte>& scratch);

}  // namespace parallm::comm
