// Collective checking (CommOptions::check_collectives): before a collective
// runs, every rank of the group shares the call's signature (operation,
// dtype, count, reduce op, root, sequence number) with one small all-gather.
// A disagreement throws the same Error on every rank, naming each rank's
// call, before any data moves, so the group stays usable. all_to_all_v also
// checks that each pair of ranks agrees on its counts.
#pragma once
#include "comm/mpi/mpi_include.h"

#include <chrono>

#include "comm/mpi/mpi_pending.h"

namespace parallm::comm {

void check_collective(const OpSpec& s, const OpLabel& label, MPI_Comm comm, int rank, int size,
                      std::chrono::milliseconds timeout);

}  // namespace parallm::comm
