#include "tensor/test_device_memory.h"

namespace parallm {

namespace {

template <class T>
T* tag(T* p) {
  return p == nullptr ? p : reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(p) | kTestDeviceTag);
}

// Host memory passes unchanged: copies cross between host and device.
template <class T>
T* host_side(T* p) {
  return is_test_device_address(p) ? test_device_host(p) : p;
}

}  // namespace

void* TestDeviceMemory::allocate(size_t bytes) {
  void* p = host_.allocate(bytes);
  PX_CHECK(!is_test_device_address(p), "host block {} already has the test device tag", p);
  return tag(p);
}

void TestDeviceMemory::release(void* ptr, size_t bytes) {
  host_.release(test_device_host(ptr), bytes);
}

void TestDeviceMemory::copy(void* dst, const void* src, size_t bytes) {
  host_.copy(host_side(dst), host_side(src), bytes);
}

void TestDeviceMemory::zero(void* ptr, size_t bytes) { host_.zero(test_device_host(ptr), bytes); }

}  // namespace parallm
