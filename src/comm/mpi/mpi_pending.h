// OpLabel names an operation in messages; MpiRequestWork is the PendingOp
// behind async send/recv: an MPI request, completed by polling MPI_Test
// (point-to-point stays nonblocking MPI so that a send and a recv posted
// together never wait on each other, as they could on one serial thread).
#pragma once
#include "comm/mpi/mpi_include.h"

#include <memory>
#include <string>

#include "comm/mpi/mpi_plan.h"
#include "comm/work.h"

namespace parallm::comm {

// Identifies an operation in messages: "all_reduce #17 on group 'tp[1]'
// (rank 1 of 2)", or "recv #3 from rank 0 (tag 5) on group ...".
struct OpLabel {
  OpKind kind = OpKind::Barrier;
  uint64_t seq = 0;
  int peer = -1;
  int tag = 0;
  std::shared_ptr<const std::string> group;  // "group 'tp[1]' (rank 1 of 2)"
  std::string str() const;
};

class MpiRequestWork final : public PendingOp {
 public:
  // Starts the call; throws Error when MPI refuses it.
  MpiRequestWork(MpiPlan plan, OpLabel label, std::chrono::milliseconds timeout);
  bool poll() override;
  std::string describe() const override { return label_.str(); }
  std::chrono::milliseconds default_timeout() const override { return timeout_; }

 private:
  MpiPlan plan_;
  OpLabel label_;
  std::chrono::milliseconds timeout_;
  MPI_Request req_ = MPI_REQUEST_NULL;
};

// For a completed recv: throws unless the sender sent exactly `expected` elements.
void check_recv_count(const MPI_Status& st, MPI_Datatype type, size_t expected,
                      const OpLabel& label);

}  // namespace parallm::comm
