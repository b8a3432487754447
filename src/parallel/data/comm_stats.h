// Communication accounting of one training step on one rank: bytes this
// rank handed to collectives (its payload, not the wire traffic of the
// algorithm underneath) and the time the step spent blocked on
// communication that compute did not hide ("exposed").
#pragma once
#include <chrono>
#include <cstdint>

namespace parallm {

struct CommStats {
  int64_t bytes = 0;
  double exposed_seconds = 0.0;
  int64_t collectives = 0;
};

// Adds the wall time of its scope to stats.exposed_seconds.
class ExposedTimer {
 public:
  explicit ExposedTimer(CommStats& s) : s_(s), t0_(std::chrono::steady_clock::now()) {}
  ~ExposedTimer() {
    s_.exposed_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  ExposedTimer(const ExposedTimer&) = delete;
  ExposedTimer& operator=(const ExposedTimer&) = delete;

 private:
  CommStats& s_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace parallm
