// open_job_device: the device a job's model lives on, by --device: the
// host or the test device (HostJobDevice), or this process's GPU
// (CudaJobDevice: ops::CudaDevice, and over several ranks an NCCL world on
// its stream, host buffers over MPI beside it). The jobs take the result
// and never name a backend. A build without nvcc (no CUDA backend) fails
// here, clearly, for --device cuda.
#pragma once
#include <memory>

#include "device/job_device.h"

namespace parallm {

// mpi_world: the job's ranks (null: one process); local_rank picks the GPU
// (mod the visible count); allow_tf32 lets its fp32 GEMMs use TF32.
std::unique_ptr<JobDevice> open_job_device(Device d, comm::Communicator* mpi_world,
                                           int local_rank, bool allow_tf32);

}  // namespace parallm
