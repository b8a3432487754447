// Caching device allocator (caching_device_memory.h).
#include "kernels/cuda/caching_device_memory.h"

#include <algorithm>

#include "base/error.h"
#include "kernels/cuda/cuda_check.h"

namespace parallm::cuda {
namespace {

// Makes `device` current for a scope, restoring the caller's device after.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    PX_CUDA(cudaGetDevice(&previous_));
    if (previous_ != device) PX_CUDA(cudaSetDevice(device));
    switched_ = previous_ != device;
  }
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

size_t CachingDeviceMemory::block_size(size_t bytes) {
  return bytes <= kSmallLimit ? round_up(bytes, kSmallRound) : round_up(bytes, kLargeRound);
}

CachingDeviceMemory::CachingDeviceMemory(cudaStream_t stream) : stream_(stream) {
  PX_CUDA(cudaGetDevice(&device_));
}

CachingDeviceMemory::~CachingDeviceMemory() {
  // No throwing here: at process exit the driver may already be gone.
  int previous = 0;
  bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != device_ &&
                  cudaSetDevice(device_) == cudaSuccess;
  for (auto& [size, blocks] : free_)
    for (void* p : blocks) cudaFree(p);
  for (auto& [p, size] : live_) cudaFree(p);  // tensors outliving their allocator: a caller bug
  if (switched) cudaSetDevice(previous);
}

void* CachingDeviceMemory::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  size_t size = block_size(bytes);
  DeviceScope scope(device_);
  std::lock_guard<std::mutex> lock(mu_);
  void* p = nullptr;
  auto it = free_.find(size);
  if (it != free_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    cached_ -= static_cast<int64_t>(size);
  } else {
    cudaError_t e = cudaMalloc(&p, size);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear it, then retry once with the cache handed back
      free_cached_locked();
      e = cudaMalloc(&p, size);
      if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        return nullptr;  // the Allocator reports it, naming the tag
      }
    }
    PX_CUDA(e);
    reserved_ += static_cast<int64_t>(size);
    peak_reserved_ = std::max(peak_reserved_, reserved_);
  }
  live_.emplace(p, size);
  PX_CUDA(cudaMemsetAsync(p, 0, size, stream_));
  return p;
}

void CachingDeviceMemory::release(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  PX_CHECK(it != live_.end(), "CachingDeviceMemory: release of {} bytes at {} it did not allocate",
           bytes, ptr);
  PX_CHECK(it->second == block_size(bytes),
           "CachingDeviceMemory: release of {} bytes at {}, a block of {} bytes", bytes, ptr,
           it->second);
  free_[it->second].push_back(ptr);
  cached_ += static_cast<int64_t>(it->second);
  live_.erase(it);
}

void CachingDeviceMemory::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  DeviceScope scope(device_);
  PX_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
  PX_CUDA(cudaStreamSynchronize(stream_));
}

void CachingDeviceMemory::zero(void* ptr, size_t bytes) {
  if (bytes == 0) return;
  DeviceScope scope(device_);
  PX_CUDA(cudaMemsetAsync(ptr, 0, bytes, stream_));
}

void CachingDeviceMemory::free_cached_locked() {
  for (auto& [size, blocks] : free_) {
    for (void* p : blocks) {
      PX_CUDA(cudaFree(p));  // synchronizes the device: no pending fill still writes p
      reserved_ -= static_cast<int64_t>(size);
      cached_ -= static_cast<int64_t>(size);
    }
  }
  free_.clear();
}

void CachingDeviceMemory::empty_cache() {
  DeviceScope scope(device_);
  std::lock_guard<std::mutex> lock(mu_);
  free_cached_locked();
}

int64_t CachingDeviceMemory::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_;
}

int64_t CachingDeviceMemory::peak_reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_reserved_;
}

int64_t CachingDeviceMemory::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

void CachingDeviceMemory::reset_peak_reserved() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_reserved_ = reserved_;
}

}  // namespace parallm::cuda
