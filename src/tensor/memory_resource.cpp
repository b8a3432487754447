#include "tensor/memory_resource.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace parallm {

namespace {

size_t rounded_size(size_t bytes) {  // aligned_alloc wants a multiple of the alignment
  return (bytes + 63) / 64 * 64;
}

}  // namespace

HostMemory::~HostMemory() {
  for (const Block& b : held_) std::free(b.ptr);
}

void* HostMemory::allocate(size_t bytes) {
  const size_t rounded = rounded_size(bytes);
  if (rounded == 0) return nullptr;
  void* p = nullptr;
  if (rounded >= kHeldMinBytes) {
    std::vector<void*> freed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = held_.size(); i-- > 0;)  // the most recently released first
        if (held_[i].bytes == rounded) {
          p = held_[i].ptr;
          held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
          held_bytes_ -= rounded;
          break;
        }
      live_bytes_ += rounded;
      peak_live_bytes_ = std::max(peak_live_bytes_, live_bytes_);
      if (p == nullptr) {
        size_t evict = 0;  // oldest first, until held + live fit the peak
        while (evict < held_.size() && held_bytes_ + live_bytes_ > peak_live_bytes_) {
          held_bytes_ -= held_[evict].bytes;
          freed.push_back(held_[evict++].ptr);
        }
        held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(evict));
      }
    }
    for (void* f : freed) std::free(f);
  }
  if (p == nullptr) p = std::aligned_alloc(64, rounded);
  if (p == nullptr) {
    if (rounded >= kHeldMinBytes) {
      std::lock_guard<std::mutex> lock(mu_);
      live_bytes_ -= rounded;
    }
    return nullptr;
  }
  std::memset(p, 0, rounded);
  return p;
}

void HostMemory::release(void* ptr, size_t bytes) {
  const size_t rounded = rounded_size(bytes);
  if (ptr == nullptr) return;
  if (rounded < kHeldMinBytes) {
    std::free(ptr);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  live_bytes_ -= rounded;
  held_.push_back({rounded, ptr});
  held_bytes_ += rounded;
}

size_t HostMemory::held_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_bytes_;
}

void HostMemory::copy(void* dst, const void* src, size_t bytes) {
  if (bytes != 0) std::memmove(dst, src, bytes);
}

void HostMemory::zero(void* ptr, size_t bytes) {
  if (bytes != 0) std::memset(ptr, 0, bytes);
}

}  // namespace parallm
