// TestDeviceStaging: a Communicator over another one for buffers on the
// test device (tensor/test_device_memory.h), as MPI without NCCL serves a
// GPU: each operation's device buffers are staged through host buffers (the
// receive region, and a send region outside it, copied to the host before
// the operation; the receive region copied back when it completes, at
// once for a blocking call and inside the Work for an async one). Host
// buffers pass through untouched. Groups split from it stage too. Point-to-
// point operations on device buffers match as NCCL's do (per pair, in issue
// order, tags ignored: NCCL has none), so a schedule whose sends and receives
// pair up only by tag fails here, on the CPU, and not first on GPUs. Why here
// and not in MpiCommunicator: the same decorator is what a GPU without
// NCCL needs (with pinned buffers and device copies), and the MPI backend
// stays a plain host backend.
#pragma once
#include <memory>
#include <string>

#include "comm/communicator.h"

namespace parallm::comm {

class TestDeviceStaging final : public Communicator {
 public:
  // Owning the group it stages for, or (the job's world) borrowing it.
  explicit TestDeviceStaging(std::unique_ptr<Communicator> inner);
  explicit TestDeviceStaging(Communicator& inner) : inner_(&inner) {}

  const std::string& name() const override { return inner_->name(); }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const CommOptions& options() const override { return inner_->options(); }
  uint64_t collectives_issued() const override { return inner_->collectives_issued(); }
  std::unique_ptr<Communicator> split(int color, int key, std::string name) override;
  std::unique_ptr<Communicator> subgroup(std::span<const int> ranks, std::string name) override;

 protected:
  void do_run(const OpSpec& s) override;
  std::unique_ptr<PendingOp> do_start(const OpSpec& s) override;

 private:
  std::unique_ptr<Communicator> owned_;
  Communicator* inner_;
};

}  // namespace parallm::comm
