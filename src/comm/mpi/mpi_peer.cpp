#include "comm/mpi/mpi_peer.h"

#include "comm/mpi/mpi_include.h"

#include "base/error.h"
#include "comm/mpi/mpi_communicator.h"
#include "comm/mpi/mpi_types.h"

namespace parallm::comm {
namespace {

class MpiPeer final : public PeerCollectives {
 public:
  MpiPeer(MPI_Comm comm, int rank) : comm_(comm), rank_(rank) {}
  std::string name() const override { return "MPI"; }

  bool supports(OpKind k, DType t, ReduceOp op) const override {
    // MPI has no bf16/f16 arithmetic and no avg.
    return !is_reducing(k) ||
           (dtype_reducible(t) && t != DType::BF16 && t != DType::F16 && op != ReduceOp::Avg);
  }

  void run(OpKind k, const void* send, void* recv, size_t count, DType t, ReduceOp op, int root,
           bool async) override {
    const int n = static_cast<int>(count);
    const MPI_Datatype ty = mpi_datatype(t);
    const MPI_Op mop = mpi_op(op);
    const size_t es = dtype_size(t);
    char* r = static_cast<char*>(recv);
    const char* s = static_cast<const char*>(send);
    const void* in = send;
    MPI_Request q = MPI_REQUEST_NULL;
    MPI_Request* req = async ? &q : nullptr;
    int rc = MPI_SUCCESS;
    switch (k) {
      case OpKind::AllReduce:
        if (send == recv) in = MPI_IN_PLACE;
        rc = req ? MPI_Iallreduce(in, recv, n, ty, mop, comm_, req)
                 : MPI_Allreduce(in, recv, n, ty, mop, comm_);
        break;
      case OpKind::AllGather:
        if (s == r + count * es * rank_) in = MPI_IN_PLACE;
        rc = req ? MPI_Iallgather(in, n, ty, recv, n, ty, comm_, req)
                 : MPI_Allgather(in, n, ty, recv, n, ty, comm_);
        break;
      case OpKind::ReduceScatter:
        if (r == s + count * es * rank_) {  // MPI leaves the block at the start
          in = MPI_IN_PLACE;
          recv = const_cast<void*>(send);
        }
        rc = req ? MPI_Ireduce_scatter_block(in, recv, n, ty, mop, comm_, req)
                 : MPI_Reduce_scatter_block(in, recv, n, ty, mop, comm_);
        break;
      case OpKind::Broadcast:  // MPI's broadcast has one buffer
        rc = req ? MPI_Ibcast(recv, n, ty, root, comm_, req) : MPI_Bcast(recv, n, ty, root, comm_);
        break;
      case OpKind::Reduce:
        if (send == recv) in = rank_ == root ? MPI_IN_PLACE : send;
        rc = req ? MPI_Ireduce(in, recv, n, ty, mop, root, comm_, req)
                 : MPI_Reduce(in, recv, n, ty, mop, root, comm_);
        break;
      case OpKind::Gather:
        if (rank_ == root && s == r + count * es * rank_) in = MPI_IN_PLACE;
        rc = req ? MPI_Igather(in, n, ty, recv, n, ty, root, comm_, req)
                 : MPI_Gather(in, n, ty, recv, n, ty, root, comm_);
        break;
      case OpKind::Scatter:
        if (rank_ == root && r == s + count * es * rank_) recv = MPI_IN_PLACE;
        rc = req ? MPI_Iscatter(send, n, ty, recv, n, ty, root, comm_, req)
                 : MPI_Scatter(send, n, ty, recv, n, ty, root, comm_);
        break;
      case OpKind::AllToAll:
        if (send == recv) in = MPI_IN_PLACE;
        rc = req ? MPI_Ialltoall(in, n, ty, recv, n, ty, comm_, req)
                 : MPI_Alltoall(in, n, ty, recv, n, ty, comm_);
        break;
      default:
        PX_FAIL("MPI peer: {} is not benchmarked", op_kind_name(k));
    }
    if (rc == MPI_SUCCESS && req != nullptr) rc = MPI_Wait(req, MPI_STATUS_IGNORE);
    mpi_check(rc, "raw MPI call", "the benchmark's MPI peer");
  }

 private:
  MPI_Comm comm_;
  int rank_;
};

}  // namespace

std::unique_ptr<PeerCollectives> make_mpi_peer(Communicator& comm) {
  auto* m = dynamic_cast<MpiCommunicator*>(&comm);
  PX_CHECK(m != nullptr, "the MPI peer needs a communicator from the MPI backend");
  return std::make_unique<MpiPeer>(m->handle(), comm.rank());
}

}  // namespace parallm::comm
