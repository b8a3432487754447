// CudaJobDevice: a job's model on this process's GPU: ops::CudaDevice gives
// its memory, stream and kernels (ops/cuda/cuda_device.h); a job of several
// processes moves device buffers over NCCL (one GPU per rank, the unique id
// over MPI, the compute stream shared so no op waits on an event), host
// buffers over the MPI world beside it. Every layout the test device runs
// runs here; what the CUDA backend lacks is refused before any work
// (train_config.cpp, check_device; the ops name a missing kernel).
#pragma once
#include <memory>

#include "comm/nccl/nccl_communicator.h"
#include "device/job_device.h"
#include "ops/cuda/cuda_device.h"

namespace parallm {

class CudaJobDevice final : public JobDevice {
 public:
  CudaJobDevice(comm::Communicator* mpi_world, int local_rank, bool allow_tf32);
  ~CudaJobDevice() override;

  Device kind() const override { return Device::CUDA; }
  MemoryResource& memory() override { return gpu_; }
  comm::Communicator* world() const override;
  std::string name() const override { return gpu_.name(); }
  double peak_flops() const override { return peak_flops_; }

 private:
  ops::CudaDevice gpu_;
  comm::Communicator* mpi_world_;
  std::unique_ptr<comm::NcclCommunicator> nccl_;
  double peak_flops_;
};

}  // namespace parallm
