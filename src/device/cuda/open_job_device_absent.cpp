// open_job_device (open_job_device.h) in a build without the CUDA backend
// (cmake found no nvcc): the host and the test device, and a clear error
// for a GPU instead of a missing symbol.
#include "base/error.h"
#include "device/cuda/open_job_device.h"

namespace parallm {

std::unique_ptr<JobDevice> open_job_device(Device d, comm::Communicator* mpi_world, int, bool) {
  PX_CHECK(d != Device::CUDA,
           "--device cuda: this build has no CUDA backend (cmake found no nvcc; see docs/cuda.md)");
  return std::make_unique<HostJobDevice>(d, mpi_world);
}

}  // namespace parallm
