// CudaDevice: one process's GPU as the op interface sees it: its memory
// (a caching allocator on the device's stream), the stream every op of the
// model runs on, cuBLASLt, and the CUDA backend behind that stream. An
// Allocator over it is all the model, its parameters and the optimizers
// need: ops::Stream::of(allocator) finds the stream (ops/stream.h).
// Invariant: everything of one model is queued on the one stream, so no
// op waits for another by an event; a host read (copy_to_host, the sum of
// squares, the non-finite check) waits for the stream.
#pragma once
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "ops/stream.h"

namespace parallm::cuda {
class Blas;
class CachingDeviceMemory;
}  // namespace parallm::cuda

namespace parallm::ops {

class CudaBackend;

class CudaDevice final : public DeviceMemory {
 public:
  // The GPU of local rank `local_rank` (local_rank mod the visible count);
  // allow_tf32 lets fp32 GEMMs use TF32 tensor cores.
  CudaDevice(int local_rank, bool allow_tf32);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  const Stream& stream() const override { return *stream_; }
  Device device() const override { return Device::CUDA; }
  void* allocate(size_t bytes) override;
  void release(void* ptr, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void zero(void* ptr, size_t bytes) override;

  int index() const { return index_; }
  const std::string& name() const { return name_; }
  cudaStream_t queue() const { return queue_; }
  cuda::CachingDeviceMemory& memory() const { return *memory_; }

 private:
  int index_;
  std::string name_;
  cudaStream_t queue_ = nullptr;
  std::unique_ptr<cuda::CachingDeviceMemory> memory_;
  std::unique_ptr<cuda::Blas> blas_;
  std::unique_ptr<CudaBackend> backend_;
  std::unique_ptr<Stream> stream_;
};

}  // namespace parallm::ops
