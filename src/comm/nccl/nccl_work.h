// NcclWork: the PendingOp behind every NCCL operation, done when its event on
// the communication stream has fired. Waiting polls cudaEventQuery and
// ncclCommGetAsyncError (a failed peer connection surfaces there), sleeping
// briefly between polls. At the deadline it aborts the communicator
// (ncclCommAbort ends the kernels that would otherwise spin forever) and
// reports the timeout; unlike an MPI Work, a timed-out NCCL Work cannot be
// waited on again: every later wait on the group throws naming the timeout.
#pragma once
#include <chrono>
#include <memory>

#include "comm/mpi/mpi_pending.h"
#include "comm/nccl/nccl_channel.h"
#include "comm/work.h"

namespace parallm::comm {

class NcclWork final : public PendingOp {
 public:
  NcclWork(std::shared_ptr<NcclChannel> ch, std::shared_ptr<NcclDone> done, OpLabel label,
           std::chrono::milliseconds timeout)
      : ch_(std::move(ch)), done_(std::move(done)), label_(std::move(label)), timeout_(timeout) {}
  bool poll() override;
  bool wait_until(std::chrono::steady_clock::time_point deadline) override;
  std::string describe() const override { return label_.str(); }
  std::chrono::milliseconds default_timeout() const override { return timeout_; }

 private:
  std::shared_ptr<NcclChannel> ch_;
  std::shared_ptr<NcclDone> done_;
  OpLabel label_;
  std::chrono::milliseconds timeout_;
};

}  // namespace parallm::comm
