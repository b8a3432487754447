// run_cuda_train_job (cuda_train_job.h): the GPU, the NCCL world over it,
// then the one training job.
#include "train/cuda/cuda_train_job.h"

#include <memory>
#include <string>

#include "comm/nccl/nccl_world.h"
#include "ops/cuda/cuda_device.h"

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

double run_cuda_train_job(const TrainJobOptions& opts, const LaunchEnv& env, std::ostream& log,
                          comm::Communicator* mpi_world) {
  const bool tf32 = opts.run.train.precision.allow_tf32;
  ops::CudaDevice gpu(env.local_rank, tf32);
  std::unique_ptr<comm::NcclCommunicator> world;
  if (mpi_world != nullptr && mpi_world->size() > 1) {
    world = comm::make_nccl_world(*mpi_world, gpu.index());
    world->set_compute_stream(gpu.queue());
  }
  const JobDevice device{
      .memory = &gpu, .name = gpu.name(), .peak_flops = datasheet_peak_flops(gpu.name(), tf32)};
  return run_train_job(opts, env, log, world.get(), &device);
}

}  // namespace parallm
