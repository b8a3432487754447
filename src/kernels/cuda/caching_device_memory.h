// CachingDeviceMemory: the MemoryResource behind a CUDA Allocator. Sizes are
// rounded up (512 B up to 1 MiB, 2 MiB above) and released blocks wait in a
// free list per rounded size, so a training step that frees and re-allocates
// the same shapes calls cudaMalloc only on its first pass. Memory comes back
// zero-filled by cudaMemsetAsync on the resource's stream, and blocks are
// reused in that stream's order: work on other streams that touches a block
// must be finished before the block is released. Reserved bytes (what
// cudaMalloc holds) are reported beside the Allocator's requested bytes.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tensor/memory_resource.h"

namespace parallm::cuda {

class CachingDeviceMemory final : public MemoryResource {
 public:
  static constexpr size_t kSmallRound = 512;
  static constexpr size_t kLargeRound = size_t{2} << 20;
  static constexpr size_t kSmallLimit = size_t{1} << 20;  // larger requests get large blocks

  // Memory of the device current at construction; fills, clears and copies are
  // ordered on `stream` (nullptr: the legacy default stream).
  explicit CachingDeviceMemory(cudaStream_t stream = nullptr);
  ~CachingDeviceMemory() override;
  CachingDeviceMemory(const CachingDeviceMemory&) = delete;
  CachingDeviceMemory& operator=(const CachingDeviceMemory&) = delete;

  Device device() const override { return Device::CUDA; }
  void* allocate(size_t bytes) override;
  void release(void* ptr, size_t bytes) override;
  // Any direction (host/device, device/device); synchronous: done on return.
  void copy(void* dst, const void* src, size_t bytes) override;
  // Stream-ordered clear on the resource's stream.
  void zero(void* ptr, size_t bytes) override;

  // Returns every cached (free) block to the driver.
  void empty_cache();
  int64_t reserved_bytes() const;       // held from cudaMalloc: in use + cached
  int64_t peak_reserved_bytes() const;  // since construction or reset_peak_reserved()
  int64_t cached_bytes() const;         // free blocks waiting for reuse
  void reset_peak_reserved();
  int device_index() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  // The block size a request of `bytes` gets.
  static size_t block_size(size_t bytes);

 private:
  void free_cached_locked();

  int device_;
  cudaStream_t stream_;
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // block size -> cached blocks
  std::unordered_map<void*, size_t> live_;               // block in use -> its size
  int64_t reserved_ = 0;
  int64_t peak_reserved_ = 0;
  int64_t cached_ = 0;
};

}  // namespace parallm::cuda
