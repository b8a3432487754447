// The benchmark's peer: the same collectives called directly on MPI (the
// MPI_Comm under an MpiCommunicator), blocking or MPI_I* + MPI_Wait, with
// MPI's own in-place conventions. Only the benchmark uses it.
#pragma once
#include <memory>

#include "comm/comm_bench.h"

namespace parallm::comm {

// comm must be an MpiCommunicator; the peer uses its MPI communicator.
std::unique_ptr<PeerCollectives> make_mpi_peer(Communicator& comm);

}  // namespace parallm::comm
