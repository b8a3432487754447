#include "comm/communicator.h"

#include <fmt/format.h>

namespace parallm::comm {

namespace {
using Clock = std::chrono::steady_clock;

int64_t ns_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

// A backend's op whose waits count as blocked time of its kind and whose
// polls count as poll time: test() never blocks, but without a progress
// thread the bytes move inside it, so its time is kept apart from blocked.
class CountedOp final : public PendingOp {
 public:
  CountedOp(std::unique_ptr<PendingOp> op, std::shared_ptr<CommCounters> c, OpKind k)
      : op_(std::move(op)), counters_(std::move(c)), kind_(k) {}
  bool poll() override {
    const auto t0 = Clock::now();
    const bool done = op_->poll();
    counters_->add_poll(kind_, ns_since(t0));
    return done;
  }
  bool wait_until(Clock::time_point deadline) override {
    const auto t0 = Clock::now();
    const bool done = op_->wait_until(deadline);
    counters_->add_blocked(kind_, ns_since(t0));
    return done;
  }
  std::string describe() const override { return op_->describe(); }
  std::chrono::milliseconds default_timeout() const override { return op_->default_timeout(); }

 private:
  std::unique_ptr<PendingOp> op_;
  std::shared_ptr<CommCounters> counters_;
  OpKind kind_;
};

int64_t payload_bytes(const OpSpec& s, int rank, int size) {
  return static_cast<int64_t>(send_elems(s, rank, size) * dtype_size(s.dtype));
}
}  // namespace

std::string Communicator::label() const {
  return fmt::format("group '{}' (rank {} of {})", name(), rank(), size());
}

void Communicator::run(const OpSpec& s) {
  validate(s, rank(), size(), name());
  counters_->add_op(s.kind, payload_bytes(s, rank(), size()));
  const auto t0 = Clock::now();
  do_run(s);
  counters_->add_blocked(s.kind, ns_since(t0));
}

Work Communicator::start(const OpSpec& s) {
  validate(s, rank(), size(), name());
  counters_->add_op(s.kind, payload_bytes(s, rank(), size()));
  // Timed too: a backend may complete the op before returning (MPI without
  // thread support runs collectives inline).
  const auto t0 = Clock::now();
  std::unique_ptr<PendingOp> op = do_start(s);
  counters_->add_blocked(s.kind, ns_since(t0));
  if (op == nullptr) return Work();
  return Work(std::make_unique<CountedOp>(std::move(op), counters_, s.kind));
}

}  // namespace parallm::comm
