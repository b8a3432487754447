// ShutdownSignals (see shutdown_signals.h).
#include "infer/serve/shutdown_signals.h"

#include <pthread.h>
#include <signal.h>

#include "base/error.h"

namespace parallm::serve {

namespace {
sigset_t shutdown_set() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGINT);
  return s;
}
}  // namespace

ShutdownSignals::ShutdownSignals() {
  const sigset_t s = shutdown_set();
  PX_CHECK(pthread_sigmask(SIG_BLOCK, &s, nullptr) == 0, "cannot block SIGTERM/SIGINT");
  signal(SIGPIPE, SIG_IGN);
}

ShutdownSignals::~ShutdownSignals() { stop(); }

void ShutdownSignals::watch(std::function<void(int)> on_signal) {
  watcher_ = std::thread([this, on_signal = std::move(on_signal)] {
    const sigset_t s = shutdown_set();
    int signo = 0;
    if (sigwait(&s, &signo) != 0 || stopping_) return;
    on_signal(signo);
  });
}

void ShutdownSignals::stop() {
  if (!watcher_.joinable()) return;
  stopping_ = true;
  pthread_kill(watcher_.native_handle(), SIGTERM);  // a no-op once it has returned
  watcher_.join();
}

}  // namespace parallm::serve
