// NcclCommunicator: the Communicator over one NCCL communicator, on device
// buffers (every OpSpec pointer is a device pointer of this rank's GPU).
// Operations go on the communicator's own stream, each first waiting for the
// work queued so far on the caller's compute stream (set_compute_stream;
// the legacy default stream until set); start() returns a Work done when the
// operation's event fires, run() waits for it. Timeouts: a wait past
// CommOptions::timeout aborts the NCCL communicator and throws the Error an
// MPI Work throws; under run_mpi_job that Error ends the whole job.
// Point-to-point: NCCL has no tags, so sends and recvs between a pair match
// in issue order (FIFO); tags are accepted and ignored, and a recv whose
// count differs from the send's is not detected. Async sends/recvs are
// launched together as one NCCL group at the next wait, test, collective or
// blocking call, so exchanges and rings cannot deadlock; but, as in NCCL, a
// send issued before a collective must be received before that collective
// on the peer too. bf16/f16 reductions are NCCL's (fp32 adds, rounded to
// the element type after each step), not fp32 over all ranks as in MPI.
// Host buffers (a loss, a norm, a flag the host reduces) go, blocking, to
// the MPI group beside it (in a one-rank group without one, a collective is
// a copy). Groups: split/subgroup build a new NCCL communicator from a unique id
// broadcast over the MPI host group kept beside it (same ranks, same order),
// or with ncclCommSplit for a one-rank group that has no host group.
#pragma once
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <string>

#include "comm/communicator.h"

namespace parallm::comm {

class NcclChannel;
struct OpLabel;

class NcclCommunicator final : public Communicator {
 public:
  // Takes ownership of comm, an NCCL communicator on `device`. host: an MPI
  // communicator over the same ranks in the same order, or null for a
  // one-rank group; with check_collectives it compares calls before each
  // collective.
  NcclCommunicator(ncclComm_t comm, int device, std::string name, CommOptions opts,
                   std::unique_ptr<Communicator> host);
  ~NcclCommunicator() override;

  const std::string& name() const override { return name_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const CommOptions& options() const override { return opts_; }
  uint64_t collectives_issued() const override { return coll_seq_; }
  std::unique_ptr<Communicator> split(int color, int key, std::string name) override;
  std::unique_ptr<Communicator> subgroup(std::span<const int> ranks, std::string name) override;

  // Operations issued from now on wait for the work queued on s before them.
  void set_compute_stream(cudaStream_t s);
  cudaStream_t compute_stream() const;
  // The communication stream every operation runs on.
  cudaStream_t stream() const;
  int device() const { return device_; }
  ncclComm_t handle() const;
  // The MPI group beside it (null for a one-rank group made without MPI).
  Communicator* host() const { return host_.get(); }

 protected:
  void do_run(const OpSpec& s) override;
  std::unique_ptr<PendingOp> do_start(const OpSpec& s) override;

 private:
  // c, waiting for the same compute stream as this group.
  std::unique_ptr<NcclCommunicator> same_stream(std::unique_ptr<NcclCommunicator> c) const;
  OpLabel next_label(const OpSpec& s);
  void check(const OpSpec& s, const OpLabel& l);
  std::shared_ptr<NcclChannel> ch_;
  std::unique_ptr<Communicator> host_;
  int device_;
  std::string name_;
  CommOptions opts_;
  int rank_ = 0;
  int size_ = 1;
  uint64_t coll_seq_ = 0;  // collectives issued
  uint64_t p2p_seq_ = 0;   // sends and recvs issued
  std::shared_ptr<const std::string> label_;
};

}  // namespace parallm::comm
