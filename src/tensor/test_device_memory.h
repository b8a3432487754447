// TestDeviceMemory: the memory of Device::Test, a device that lives on the
// CPU but behaves like a GPU's memory towards host code. Its addresses are
// host blocks with bit 62 set: non-canonical on x86-64 (4- and 5-level
// paging), so any host load or store through one faults at once, while
// pointer arithmetic on them (views, row offsets) still works. Only the op
// implementations (src/ops) and the communicator's staging turn a test
// device address back into the host one, with test_device_host(). Copies to
// and from the host go through copy(), as cudaMemcpy does on a GPU.
// Invariant: every address it hands out is tagged, and only it untags them.
#pragma once
#include <cstdint>

#include "base/error.h"
#include "tensor/memory_resource.h"

namespace parallm {

inline constexpr uintptr_t kTestDeviceTag = uintptr_t{1} << 62;

inline bool is_test_device_address(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & kTestDeviceTag) != 0;
}

// The host address behind a test device address (nullptr stays nullptr).
template <class T>
T* test_device_host(T* p) {
  if (p == nullptr) return p;
  PX_CHECK(is_test_device_address(p),
           "{} is not a test device address (a host buffer given to an op on the test device)",
           static_cast<const void*>(p));
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(p) & ~kTestDeviceTag);
}

class TestDeviceMemory final : public MemoryResource {
 public:
  TestDeviceMemory() = default;
  TestDeviceMemory(const TestDeviceMemory&) = delete;
  TestDeviceMemory& operator=(const TestDeviceMemory&) = delete;

  Device device() const override { return Device::Test; }
  void* allocate(size_t bytes) override;
  void release(void* ptr, size_t bytes) override;
  // Either side may be a test device address or host memory.
  void copy(void* dst, const void* src, size_t bytes) override;
  void zero(void* ptr, size_t bytes) override;

 private:
  HostMemory host_;
};

}  // namespace parallm
