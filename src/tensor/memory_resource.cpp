#include "tensor/memory_resource.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>

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
  const bool large = rounded >= kHeldMinBytes;
  // A large block counts as live from here; a held one of its size is taken
  // (the most recently released), else the oldest held blocks go until held +
  // live fit the peak. free() runs outside the lock.
  auto take_held = [&]() -> void* {
    void* hit = nullptr;
    std::vector<void*> freed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const auto it = std::find_if(held_.rbegin(), held_.rend(),
                                   [&](const Block& b) { return b.bytes == rounded; });
      if (it != held_.rend()) {
        hit = it->ptr;
        held_bytes_ -= rounded;
        held_.erase(std::next(it).base());
      }
      live_bytes_ += rounded;
      peak_live_bytes_ = std::max(peak_live_bytes_, live_bytes_);
      size_t evict = 0;
      while (hit == nullptr && evict < held_.size() &&
             held_bytes_ + live_bytes_ > peak_live_bytes_) {
        held_bytes_ -= held_[evict].bytes;
        freed.push_back(held_[evict++].ptr);
      }
      held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(evict));
    }
    for (void* f : freed) std::free(f);
    return hit;
  };
  void* p = large ? take_held() : nullptr;
  if (p == nullptr) p = std::aligned_alloc(64, rounded);
  if (p == nullptr) {
    if (large) {
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
