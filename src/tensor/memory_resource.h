// MemoryResource: where an Allocator's bytes come from, on which device, and
// how they are copied and cleared there. The tensor layer knows only this
// interface; the CUDA one (kernels/cuda/caching_device_memory.h) lives above
// it, so nothing below kernels_cuda includes CUDA. HostMemory, the default,
// is 64-byte aligned host memory that reuses large blocks (below).
// Invariant: allocate returns zeroed
// memory (nullptr for 0 bytes, nullptr when out of memory), and one virtual
// call is made per buffer, never per element.
#pragma once
#include <cstddef>
#include <mutex>
#include <vector>

#include "tensor/dtype.h"

namespace parallm {

class MemoryResource {
 public:
  virtual ~MemoryResource() = default;
  virtual Device device() const = 0;
  // Zero-filled memory of at least `bytes`; nullptr for 0 bytes or when none is left.
  virtual void* allocate(size_t bytes) = 0;
  // `bytes` is the size given to allocate; ptr may be nullptr.
  virtual void release(void* ptr, size_t bytes) = 0;
  // Copies between this resource's memory and host memory or its own; complete on return.
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void zero(void* ptr, size_t bytes) = 0;
};

// HostMemory keeps released blocks of kHeldMinBytes or more and hands one
// back (zeroed again) to the next allocation of the same rounded size. Why:
// a training step frees and allocates the same activation sizes every
// micro-batch, and glibc gives blocks above its mmap threshold (32 MiB at
// most) back to the kernel at once, so every micro-batch paid fresh page
// faults and the kernel's zeroing (AMD EPYC VM, the planner's validation
// model at micro-batch 16: 2x the minor faults, ~15% of a step). Bound:
// held + live bytes never exceed the peak of live bytes, so the footprint
// is what the process needed anyway; a miss frees held blocks, oldest
// first, to stay within it. Thread-safe.
class HostMemory final : public MemoryResource {
 public:
  static constexpr size_t kHeldMinBytes = size_t{256} << 10;

  HostMemory() = default;
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  ~HostMemory() override;

  Device device() const override { return Device::CPU; }
  void* allocate(size_t bytes) override;
  void release(void* ptr, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void zero(void* ptr, size_t bytes) override;

  size_t held_bytes() const;  // released blocks kept for reuse

 private:
  struct Block {
    size_t bytes;
    void* ptr;
  };
  mutable std::mutex mu_;
  std::vector<Block> held_;  // released blocks, oldest first
  // Bytes of blocks of kHeldMinBytes or more: held, live, and live's peak.
  size_t held_bytes_ = 0, live_bytes_ = 0, peak_live_bytes_ = 0;
};

}  // namespace parallm
