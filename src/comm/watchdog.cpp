#include "comm/watchdog.h"

#include <fmt/format.h>

#include <algorithm>

#include "comm/work.h"

namespace parallm::comm {

int64_t WatchSlot::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void WatchSlot::arm(const char* op, uint64_t seq, int peer, std::chrono::milliseconds timeout) {
  op_.store(op, std::memory_order_relaxed);
  seq_.store(seq, std::memory_order_relaxed);
  peer_.store(peer, std::memory_order_relaxed);
  timeout_ms_.store(timeout.count(), std::memory_order_relaxed);
  deadline_ns_.store(now_ns() + timeout.count() * 1000000, std::memory_order_release);
}

bool WatchSlot::expired(int64_t now, std::string* message) const {
  const int64_t deadline = deadline_ns_.load(std::memory_order_acquire);
  if (deadline == 0 || now < deadline) return false;
  const int peer = peer_.load(std::memory_order_relaxed);
  const std::string what = peer < 0
                               ? fmt::format("{} #{}", op_.load(), seq_.load())
                               : fmt::format("{} #{} with rank {}", op_.load(), seq_.load(), peer);
  *message = fmt::format(
      "{} on {} did not complete within {}: a peer rank may have died, hung, or called a "
      "different collective; aborting the job",
      what, label_, format_duration(std::chrono::milliseconds(timeout_ms_.load())));
  return true;
}

Watchdog::Watchdog(ExpireFn on_expire, std::chrono::milliseconds period)
    : on_expire_(std::move(on_expire)), period_(period), thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::shared_ptr<WatchSlot> Watchdog::add_slot(std::string label) {
  auto slot = std::make_shared<WatchSlot>(std::move(label));
  std::lock_guard<std::mutex> lock(mu_);
  slots_.push_back(slot);
  return slot;
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, period_, [this] { return stop_; });
    if (stop_) break;
    std::erase_if(slots_, [](const std::weak_ptr<WatchSlot>& w) { return w.expired(); });
    const int64_t now = WatchSlot::now_ns();
    std::string message;
    for (const auto& w : slots_) {
      auto s = w.lock();
      if (s && s->expired(now, &message)) {
        s->disarm();  // report each overrun once
        lock.unlock();
        on_expire_(message);
        lock.lock();
        break;
      }
    }
  }
}

}  // namespace parallm::comm
