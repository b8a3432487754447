// Factories of NCCL communicators. make_nccl_world: every rank of an MPI
// world calls it with its own GPU; rank 0's ncclUniqueId travels over MPI
// and ncclCommInitRank joins the ranks. Ranks that share a GPU are refused
// before NCCL is asked, naming both ranks. make_nccl_single: a one-rank
// group with no MPI at all (tests, single-GPU runs).
#pragma once
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/nccl/nccl_communicator.h"

namespace parallm::comm {

// Collective over mpi_world. The NCCL group has mpi_world's ranks and
// options; it keeps its own MPI duplicate of mpi_world for setting up
// groups, so mpi_world stays free for other use.
std::unique_ptr<NcclCommunicator> make_nccl_world(Communicator& mpi_world, int device,
                                                  std::string name = "world");

// Collective over host (an MPI group): an NCCL group with host's ranks in
// host's order, on `device`, which keeps host. Used by make_nccl_world and
// by NcclCommunicator::split/subgroup.
std::unique_ptr<NcclCommunicator> make_nccl_group(std::unique_ptr<Communicator> host, int device,
                                                  std::string name, CommOptions opts);

// A one-rank NCCL group on `device`, without MPI.
std::unique_ptr<NcclCommunicator> make_nccl_single(int device, CommOptions opts = {},
                                                   std::string name = "world");

}  // namespace parallm::comm
