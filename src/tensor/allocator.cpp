#include "tensor/allocator.h"

#include "base/error.h"

namespace parallm {

std::string_view mem_tag_name(MemTag t) {
  static constexpr std::string_view kNames[kNumMemTags] = {
      "parameter", "gradient", "optimizer", "activation", "workspace", "communication"};
  return kNames[static_cast<size_t>(t)];
}

void Allocator::bump_peak(std::atomic<int64_t>& peak, int64_t value) {
  int64_t p = peak.load();
  while (value > p && !peak.compare_exchange_weak(p, value)) {
  }
}

void* Allocator::allocate(size_t bytes, MemTag tag) {
  void* p = resource_->allocate(bytes);
  PX_CHECK(bytes == 0 || p != nullptr, "out of {} memory allocating {} bytes for {}",
           device_name(device()), bytes, mem_tag_name(tag));
  auto b = static_cast<int64_t>(bytes);
  bump_peak(peak_[idx(tag)], current_[idx(tag)].fetch_add(b) + b);
  bump_peak(total_peak_, total_current_.fetch_add(b) + b);
  return p;
}

void Allocator::release(void* ptr, size_t bytes, MemTag tag) {
  resource_->release(ptr, bytes);
  current_[idx(tag)].fetch_sub(static_cast<int64_t>(bytes));
  total_current_.fetch_sub(static_cast<int64_t>(bytes));
}

MemStats Allocator::stats() const {
  MemStats s;
  for (size_t i = 0; i < kNumMemTags; ++i) {
    s.current[i] = current_[i].load();
    s.peak[i] = peak_[i].load();
  }
  s.total_current = total_current_.load();
  s.total_peak = total_peak_.load();
  return s;
}

void Allocator::reset_peaks() {
  for (size_t i = 0; i < kNumMemTags; ++i) peak_[i].store(current_[i].load());
  total_peak_.store(total_current_.load());
}

}  // namespace parallm
