// open_job_device (open_job_device.h) where the build has the CUDA backend.
#include "device/cuda/open_job_device.h"

#include "device/cuda/cuda_job_device.h"

namespace parallm {

std::unique_ptr<JobDevice> open_job_device(Device d, comm::Communicator* mpi_world,
                                           int local_rank, bool allow_tf32) {
  if (d == Device::CUDA) return std::make_unique<CudaJobDevice>(mpi_world, local_rank, allow_tf32);
  return std::make_unique<HostJobDevice>(d, mpi_world);
}

}  // namespace parallm
