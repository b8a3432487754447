#include "comm/work.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

#include "base/error.h"

namespace parallm::comm {

std::string format_duration(std::chrono::milliseconds d) {
  const auto ms = d.count();
  if (ms % 60000 == 0 && ms >= 60000) return fmt::format("{} min", ms / 60000);
  if (ms % 1000 == 0 && ms >= 1000) return fmt::format("{} s", ms / 1000);
  if (ms >= 10000) return fmt::format("{:.1f} s", ms / 1000.0);
  return fmt::format("{} ms", ms);
}

Work& Work::operator=(Work&& other) noexcept {
  if (this != &other) {
    finish_or_abort();
    op_ = std::move(other.op_);
  }
  return *this;
}

Work::~Work() { finish_or_abort(); }

void Work::finish_or_abort() noexcept {
  if (op_ == nullptr) return;
  // An error is already ending this rank (often a timed-out wait on a peer
  // that died or hung) and will abort the job once it reaches run_mpi_job,
  // with its own message. Waiting out the timeout again for each other
  // pending operation would only delay that end, which a supervisor is
  // timing: the operation is left to the abort (its request is never
  // freed; no MPI call runs on this thread before MPI_Abort).
  if (std::uncaught_exceptions() > 0 && !op_->poll()) {
    (void)op_.release();
    return;
  }
  try {
    wait();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parallm: fatal: a pending operation was dropped: %s\n", e.what());
    std::fflush(stderr);
    std::abort();
  }
}

bool Work::test() {
  if (op_ != nullptr && op_->poll()) op_.reset();
  return op_ == nullptr;
}

void Work::wait() {
  if (op_ != nullptr) wait(op_->default_timeout());
}

bool PendingOp::wait_until(std::chrono::steady_clock::time_point deadline) {
  // Progress comes from polling (Open MPI has no progress thread), so poll
  // hot, yielding the core once the operation is clearly not instant: ranks
  // may share cores with each other.
  for (uint64_t i = 0;; ++i) {
    if (poll()) return true;
    if (i >= 64) std::this_thread::yield();
    if (i % 16 == 15 && std::chrono::steady_clock::now() >= deadline) return false;
  }
}

void Work::wait(std::chrono::milliseconds timeout) {
  if (op_ == nullptr) return;
  if (op_->wait_until(std::chrono::steady_clock::now() + timeout)) {
    op_.reset();
    return;
  }
  PX_FAIL(
      "{} did not complete within {}: a peer rank may have died, hung, or called a "
      "different collective (set check_collectives to compare calls)",
      op_->describe(), format_duration(timeout));
}

}  // namespace parallm::comm
