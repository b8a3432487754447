// Tagged allocator: every buffer carries a MemTag, and current and peak bytes
// are tracked per tag (DESIGN principle 4). One Allocator per device, owned by
// the caller and passed explicitly; it must outlive every tensor it allocated.
// Its bytes come from a MemoryResource: host memory by default, or one the
// caller owns (e.g. cuda::CachingDeviceMemory) that must outlive the Allocator.
// Stats count requested bytes; a resource may reserve more (its own stats).
// Counters are atomic so communication threads may allocate too.
#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tensor/dtype.h"
#include "tensor/memory_resource.h"

namespace parallm {

enum class MemTag : uint8_t {
  Parameter,
  Gradient,
  Optimizer,
  Activation,
  Workspace,
  Communication
};
inline constexpr size_t kNumMemTags = 6;
std::string_view mem_tag_name(MemTag t);  // "parameter", "gradient", ...

struct MemStats {
  std::array<int64_t, kNumMemTags> current{};
  std::array<int64_t, kNumMemTags> peak{};
  int64_t total_current = 0;
  int64_t total_peak = 0;  // peak of the sum, not the sum of peaks
};

class Allocator {
 public:
  // Host memory (Device::CPU).
  Allocator() : resource_(&host_) {}
  // Memory of `resource`, which must outlive this allocator.
  explicit Allocator(MemoryResource& resource) : resource_(&resource) {}
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  Device device() const { return resource_->device(); }
  MemoryResource& resource() const { return *resource_; }

  // Zero-filled memory (host: 64-byte aligned); bytes may be 0.
  void* allocate(size_t bytes, MemTag tag);
  void release(void* ptr, size_t bytes, MemTag tag);

  MemStats stats() const;
  int64_t current(MemTag t) const { return current_[idx(t)].load(); }
  int64_t peak(MemTag t) const { return peak_[idx(t)].load(); }
  // Starts a new peak window (e.g. per step) at the current values.
  void reset_peaks();

 private:
  static size_t idx(MemTag t) { return static_cast<size_t>(t); }
  static void bump_peak(std::atomic<int64_t>& peak, int64_t value);
  HostMemory host_;
  MemoryResource* resource_;
  std::array<std::atomic<int64_t>, kNumMemTags> current_{};
  std::array<std::atomic<int64_t>, kNumMemTags> peak_{};
  std::atomic<int64_t> total_current_{0};
  std::atomic<int64_t> total_peak_{0};
};

}  // namespace parallm
