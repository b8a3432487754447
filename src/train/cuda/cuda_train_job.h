// `parallm train --device cuda`: the one training job (train/train_job.h)
// with the model on this process's GPU: ops::CudaDevice gives its memory,
// stream and kernels (ops/cuda/cuda_device.h), and a job of several
// processes moves device buffers over NCCL (one GPU per rank, the NCCL
// unique id over MPI; host buffers over MPI beside it). Every layout the
// test device runs runs here; what the CUDA backend lacks is refused before
// any work (train_config.cpp, check_device). A build without nvcc links
// cuda_train_job_absent.cpp, which says so.
#pragma once
#include <ostream>

#include "base/env.h"
#include "comm/communicator.h"
#include "train/train_job.h"

namespace parallm {

// mpi_world: the job's ranks (null or one rank: no NCCL group). Returns the
// final training loss.
double run_cuda_train_job(const TrainJobOptions& opts, const LaunchEnv& env, std::ostream& log,
                          comm::Communicator* mpi_world);

}  // namespace parallm
