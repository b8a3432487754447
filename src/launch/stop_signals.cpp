#include "launch/stop_signals.h"

namespace parallm {
namespace {

// A signal handler can reach nothing but a static of this type: the one
// piece of process-wide state in the supervisor, written only here.
volatile std::sig_atomic_t g_stop_signal = 0;

void record(int sig) { g_stop_signal = sig; }

constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

}  // namespace

StopSignals::StopSignals() {
  g_stop_signal = 0;
  struct sigaction sa = {};
  sa.sa_handler = record;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &before_[i]);
}

StopSignals::~StopSignals() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &before_[i], nullptr);
}

int StopSignals::received() const { return g_stop_signal; }

}  // namespace parallm
