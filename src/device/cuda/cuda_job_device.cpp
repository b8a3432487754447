// CudaJobDevice (cuda_job_device.h).
#include "device/cuda/cuda_job_device.h"

#include <string>

#include "comm/nccl/nccl_world.h"

namespace parallm {
namespace {

// MFU's denominator on a known card: the datasheet's dense peak (H100/H200
// SXM: 66.9 fp32, 494.7 TF32 TFLOP/s); 0 on others.
double datasheet_peak_flops(const std::string& device, bool tf32) {
  const bool hopper =
      device.find("H100") != std::string::npos || device.find("H200") != std::string::npos;
  if (!hopper) return 0.0;
  return (tf32 ? 494.7 : 66.9) * 1e12;
}

}  // namespace

CudaJobDevice::CudaJobDevice(comm::Communicator* mpi_world, int local_rank, bool allow_tf32)
    : gpu_(local_rank, allow_tf32),
      mpi_world_(mpi_world),
      peak_flops_(datasheet_peak_flops(gpu_.name(), allow_tf32)) {
  if (mpi_world == nullptr || mpi_world->size() <= 1) return;
  nccl_ = comm::make_nccl_world(*mpi_world, gpu_.index());
  nccl_->set_compute_stream(gpu_.queue());
}

CudaJobDevice::~CudaJobDevice() = default;

comm::Communicator* CudaJobDevice::world() const {
  // One process keeps the MPI world it was given (none, or one rank).
  return nccl_ ? static_cast<comm::Communicator*>(nccl_.get()) : mpi_world_;
}

}  // namespace parallm
