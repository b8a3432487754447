// Which GPU this process uses (device.h).
#include "kernels/cuda/device.h"

#include <cuda_runtime_api.h>

#include "base/error.h"
#include "kernels/cuda/cuda_check.h"

namespace parallm::cuda {

int device_count() {
  int n = 0;
  // No driver or no device is "zero devices" here, not a failure.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

int select_device(int local_rank) {
  int n = device_count();
  PX_CHECK(n > 0, "--device cuda: no CUDA device is visible (local rank {})", local_rank);
  int dev = local_rank % n;
  PX_CUDA(cudaSetDevice(dev));
  return dev;
}

std::string device_name(int device) {
  cudaDeviceProp p{};
  PX_CUDA(cudaGetDeviceProperties(&p, device));
  return p.name;
}

int multiprocessor_count(int device) {
  int v = 0;
  PX_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, device));
  return v;
}

size_t total_memory(int device) {
  cudaDeviceProp p{};
  PX_CUDA(cudaGetDeviceProperties(&p, device));
  return p.totalGlobalMem;
}

}  // namespace parallm::cuda
