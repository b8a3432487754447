// CudaDevice (cuda_device.h): built in dependency order (device, stream,
// memory on it, cuBLASLt, backend, op stream) and torn down in reverse.
#include "ops/cuda/cuda_device.h"

#include "kernels/cuda/blas.h"
#include "kernels/cuda/caching_device_memory.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"
#include "ops/cuda/cuda_backend.h"

namespace parallm::ops {

CudaDevice::CudaDevice(int local_rank, bool allow_tf32)
    : index_(cuda::select_device(local_rank)), name_(cuda::device_name(index_)) {
  PX_CUDA(cudaStreamCreateWithFlags(&queue_, cudaStreamNonBlocking));
  memory_ = std::make_unique<cuda::CachingDeviceMemory>(queue_);
  blas_ = std::make_unique<cuda::Blas>(allow_tf32);
  backend_ = std::make_unique<CudaBackend>(queue_, *blas_, *memory_);
  stream_ = std::make_unique<Stream>(Device::CUDA, *backend_);
}

CudaDevice::~CudaDevice() {
  // Queued work may still use the buffers the members free.
  cudaStreamSynchronize(queue_);
  stream_.reset();
  backend_.reset();
  blas_.reset();
  memory_.reset();
  cudaStreamDestroy(queue_);
}

void* CudaDevice::allocate(size_t bytes) { return memory_->allocate(bytes); }
void CudaDevice::release(void* ptr, size_t bytes) { memory_->release(ptr, bytes); }
void CudaDevice::copy(void* dst, const void* src, size_t bytes) { memory_->copy(dst, src, bytes); }
void CudaDevice::zero(void* ptr, size_t bytes) { memory_->zero(ptr, bytes); }

}  // namespace parallm::ops
