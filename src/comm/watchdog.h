// Watchdog: bounds blocking calls, which cannot be interrupted once inside
// the transport. A communicator arms its WatchSlot around each blocking call;
// a thread checks the slots every period and, when one overruns its timeout,
// hands a message naming the operation, group, rank and sequence number to
// on_expire (the MPI runtime prints it and aborts the job). Arming costs two
// relaxed atomic stores and a clock read; nothing is formatted unless it fires.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace parallm::comm {

// The in-flight blocking operation of one communicator.
class WatchSlot {
 public:
  explicit WatchSlot(std::string label) : label_(std::move(label)) {}
  // op: a static string ("all_reduce"); peer < 0 for collectives.
  void arm(const char* op, uint64_t seq, int peer, std::chrono::milliseconds timeout);
  void disarm() { deadline_ns_.store(0, std::memory_order_release); }
  // The message if the armed operation is past its deadline at now_ns.
  bool expired(int64_t now_ns, std::string* message) const;
  static int64_t now_ns();

 private:
  const std::string label_;              // "group 'tp[1]' (rank 1 of 2)"
  std::atomic<int64_t> deadline_ns_{0};  // 0: idle
  std::atomic<const char*> op_{nullptr};
  std::atomic<uint64_t> seq_{0};
  std::atomic<int> peer_{-1};
  std::atomic<int64_t> timeout_ms_{0};
};

// Arms a slot for the lifetime of a blocking call.
class WatchGuard {
 public:
  WatchGuard(WatchSlot& s, const char* op, uint64_t seq, int peer,
             std::chrono::milliseconds timeout)
      : slot_(s) {
    slot_.arm(op, seq, peer, timeout);
  }
  ~WatchGuard() { slot_.disarm(); }
  WatchGuard(const WatchGuard&) = delete;
  WatchGuard& operator=(const WatchGuard&) = delete;

 private:
  WatchSlot& slot_;
};

class Watchdog {
 public:
  using ExpireFn = std::function<void(const std::string& message)>;
  explicit Watchdog(ExpireFn on_expire,
                    std::chrono::milliseconds period = std::chrono::milliseconds(100));
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // The slot is watched until the last owner drops it.
  std::shared_ptr<WatchSlot> add_slot(std::string label);

 private:
  void loop();
  ExpireFn on_expire_;
  std::chrono::milliseconds period_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<std::weak_ptr<WatchSlot>> slots_;
  std::thread thread_;  // last: started after the members it reads
};

}  // namespace parallm::comm
