// run_cuda_train_job in a build without the CUDA backend (no nvcc when
// cmake configured): a clear error instead of a missing symbol.
#include "base/error.h"
#include "train/cuda/cuda_train_job.h"

namespace parallm {

double run_cuda_train_job(const TrainJobOptions&, const LaunchEnv&, std::ostream&,
                          comm::Communicator*) {
  PX_FAIL("--device cuda: this build has no CUDA backend (cmake found no nvcc; see docs/cuda.md)");
}

}  // namespace parallm
