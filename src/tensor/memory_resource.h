// MemoryResource: where an Allocator's bytes come from, on which device, and
// how they are copied and cleared there. The tensor layer knows only this
// interface; the CUDA one (kernels/cuda/caching_device_memory.h) lives above
// it, so nothing below kernels_cuda includes CUDA. HostMemory, the default,
// is plain 64-byte aligned host memory. Invariant: allocate returns zeroed
// memory (nullptr for 0 bytes, nullptr when out of memory), and one virtual
// call is made per buffer, never per element.
#pragma once
#include <cstddef>

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

class HostMemory final : public MemoryResource {
 public:
  Device device() const override { return Device::CPU; }
  void* allocate(size_t bytes) override;
  void release(void* ptr, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void zero(void* ptr, size_t bytes) override;
};

}  // namespace parallm
