// Creating NCCL groups over MPI (nccl_world.h).
#include "comm/nccl/nccl_world.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <array>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "comm/nccl/nccl_check.h"
#include "kernels/cuda/cuda_check.h"

namespace parallm::comm {
namespace {

using Uuid = std::array<uint8_t, 16>;

std::string uuid_hex(const Uuid& u) {
  std::string s;
  for (uint8_t b : u) s += fmt::format("{:02x}", b);
  return s;
}

// NCCL refuses two ranks on one GPU with a terse message; say which ranks.
void check_one_gpu_per_rank(Communicator& host, int device, const std::string& name) {
  cudaDeviceProp prop{};
  PX_CUDA(cudaGetDeviceProperties(&prop, device));
  Uuid mine{};
  std::memcpy(mine.data(), prop.uuid.bytes, mine.size());
  std::vector<Uuid> all(host.size());
  host.all_gather(mine.data(), all.data(), mine.size(), DType::U8);
  for (int a = 0; a < host.size(); ++a)
    for (int b = a + 1; b < host.size(); ++b)
      PX_CHECK(all[a] != all[b],
               "group '{}': ranks {} and {} use the same GPU (UUID {}); NCCL needs one GPU per "
               "rank: run at most as many ranks per node as there are visible GPUs (this rank, "
               "{}, uses CUDA device {})",
               name, a, b, uuid_hex(all[a]), host.rank(), device);
}

}  // namespace

std::unique_ptr<NcclCommunicator> make_nccl_group(std::unique_ptr<Communicator> host, int device,
                                                  std::string name, CommOptions opts) {
  PX_CHECK(host != nullptr, "group '{}': no MPI host group to build the NCCL group over", name);
  PX_CUDA(cudaSetDevice(device));
  check_one_gpu_per_rank(*host, device, name);
  ncclUniqueId id{};
  const std::string ctx = fmt::format("creating NCCL group '{}' (rank {} of {}, CUDA device {})",
                                      name, host->rank(), host->size(), device);
  if (host->rank() == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId", nullptr, ctx);
  host->broadcast(&id, sizeof(id), DType::U8, 0);
  ncclComm_t comm = nullptr;
  nccl_check(ncclCommInitRank(&comm, host->size(), id, host->rank()), "ncclCommInitRank", nullptr,
             ctx);
  return std::make_unique<NcclCommunicator>(comm, device, std::move(name), opts, std::move(host));
}

std::unique_ptr<NcclCommunicator> make_nccl_world(Communicator& mpi_world, int device,
                                                  std::string name) {
  std::unique_ptr<Communicator> host = mpi_world.split(0, mpi_world.rank(), name + ":host");
  const CommOptions opts = mpi_world.options();
  return make_nccl_group(std::move(host), device, std::move(name), opts);
}

std::unique_ptr<NcclCommunicator> make_nccl_single(int device, CommOptions opts, std::string name) {
  PX_CUDA(cudaSetDevice(device));
  ncclComm_t comm = nullptr;
  nccl_check(ncclCommInitAll(&comm, 1, &device), "ncclCommInitAll", nullptr,
             fmt::format("creating one-rank NCCL group '{}' on CUDA device {}", name, device));
  return std::make_unique<NcclCommunicator>(comm, device, std::move(name), opts, nullptr);
}

}  // namespace parallm::comm
