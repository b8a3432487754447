// Work: the handle every *_async call returns. wait(timeout) drives the
// operation to completion or throws an Error naming the operation, the group,
// this rank and the collective's sequence number. A backend supplies the
// PendingOp behind it. Invariant: buffers given to an async call stay valid
// and untouched until wait() returns or test() returns true.
#pragma once
#include <chrono>
#include <memory>
#include <string>

namespace parallm::comm {

// A backend's in-flight operation.
class PendingOp {
 public:
  virtual ~PendingOp() = default;
  // Makes progress without blocking; true once complete, including any
  // post-processing (conversion back from fp32, averaging).
  virtual bool poll() = 0;
  // Blocks until complete (true) or the deadline passes (false). The default
  // polls; backends that complete on another thread sleep instead.
  virtual bool wait_until(std::chrono::steady_clock::time_point deadline);
  // "all_reduce #17 on group 'tp[1]' (rank 1 of 2)".
  virtual std::string describe() const = 0;
  virtual std::chrono::milliseconds default_timeout() const = 0;
};

class Work {
 public:
  Work() = default;  // already complete
  explicit Work(std::unique_ptr<PendingOp> op) : op_(std::move(op)) {}
  Work(Work&&) noexcept = default;
  Work& operator=(Work&& other) noexcept;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  // A pending Work waits here (default timeout), also while an exception
  // unwinds: its buffers may still be written, so it must not be left behind.
  // When the wait fails the process aborts with the message.
  ~Work();

  bool test();  // never blocks; true once complete
  void wait();  // with the communicator's default timeout
  // Throws Error on timeout; the operation stays pending and may be waited
  // on again.
  void wait(std::chrono::milliseconds timeout);
  bool done() const { return op_ == nullptr; }

 private:
  void finish_or_abort() noexcept;
  std::unique_ptr<PendingOp> op_;  // null once complete
};

// "30 s", "250 ms", "2 min".
std::string format_duration(std::chrono::milliseconds d);

}  // namespace parallm::comm
