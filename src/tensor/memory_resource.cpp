#include "tensor/memory_resource.h"

#include <cstdlib>
#include <cstring>

namespace parallm {

void* HostMemory::allocate(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;  // aligned_alloc wants a multiple of the alignment
  if (rounded == 0) return nullptr;
  void* p = std::aligned_alloc(64, rounded);
  if (p != nullptr) std::memset(p, 0, rounded);
  return p;
}

void HostMemory::release(void* ptr, size_t) { std::free(ptr); }

void HostMemory::copy(void* dst, const void* src, size_t bytes) {
  if (bytes != 0) std::memmove(dst, src, bytes);
}

void HostMemory::zero(void* ptr, size_t bytes) {
  if (bytes != 0) std::memset(ptr, 0, bytes);
}

}  // namespace parallm
