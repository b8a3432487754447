// StopSignals: SIGINT, SIGTERM and SIGHUP to the supervisor mean "stop the
// job", not "restart it". The job runs in a session of its own (so that it
// can be ended whole), which also keeps a terminal's Ctrl-C from reaching
// it: without these handlers the supervisor would die and leave the job
// running. While one of these objects lives, a signal is only recorded;
// the supervisor's loop ends the job and says so.
#pragma once
#include <csignal>

namespace parallm {

class StopSignals {
 public:
  StopSignals();   // installs the handlers
  ~StopSignals();  // restores the ones before
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal received, or 0.
  int received() const;

 private:
  struct sigaction before_[3];
};

}  // namespace parallm
