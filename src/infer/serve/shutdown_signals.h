// ShutdownSignals: SIGTERM and SIGINT as an event a server can act on, not
// an interruption: the constructor blocks both (and ignores SIGPIPE, so a
// client that hangs up never kills the process) in the calling thread, which
// every thread started afterwards inherits; watch() starts one thread that
// waits for them with sigwait and calls its handler. Create it first, on
// the main thread, before any other thread exists (MPI, OpenMP, HTTP).
#pragma once
#include <atomic>
#include <functional>
#include <thread>

namespace parallm::serve {

class ShutdownSignals {
 public:
  ShutdownSignals();
  ~ShutdownSignals();  // stop()
  ShutdownSignals(const ShutdownSignals&) = delete;
  ShutdownSignals& operator=(const ShutdownSignals&) = delete;

  // on_signal runs once, on the watcher thread, with the signal's number.
  void watch(std::function<void(int signo)> on_signal);
  // Ends the watcher (waking it if no signal came) and waits for it,
  // including a handler that is running.
  void stop();

 private:
  std::atomic<bool> stopping_{false};
  std::thread watcher_;
};

}  // namespace parallm::serve
