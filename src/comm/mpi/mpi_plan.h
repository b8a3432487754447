// MpiPlan: an OpSpec lowered to one MPI call plus the work around it: fp32
// staging for bf16/f16 reductions, the division for avg, and the move that
// puts an in-place reduce-scatter's block where NCCL puts it. Invariant: for
// f32/f64/int data with sum/max/min the call uses the caller's buffers
// directly (no copies), so the wrapper costs what the raw MPI call costs.
#pragma once
#include "comm/mpi/mpi_include.h"

#include <cstddef>
#include <string_view>
#include <vector>

#include "comm/op_spec.h"
#include "comm/staging.h"

namespace parallm::comm {

// Arguments of the one MPI call (send may be MPI_IN_PLACE, as may recv for
// an in-place scatter at the root).
struct MpiCall {
  OpKind kind = OpKind::Barrier;
  const void* send = nullptr;
  void* recv = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  int root = 0;  // or the peer of send/recv
  int tag = 0;
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;  // all_to_all_v
  MPI_Comm comm = MPI_COMM_NULL;
  // Set when a reduce-scatter takes the ring (the communicator's scratch,
  // reused); null: MPI's own call.
  std::vector<std::byte>* scratch = nullptr;
};

// Done after the call completes, in this order.
struct Finish {
  void* divide_buf = nullptr;  // avg of native dtypes: divide_buf[i] /= divisor
  DType divide_dtype = DType::F32;
  size_t divide_count = 0;
  const float* narrow_src = nullptr;  // fp32 result -> caller's bf16/f16 buffer
  void* narrow_dst = nullptr;
  DType narrow_dtype = DType::BF16;
  size_t narrow_count = 0;
  int divisor = 1;
  const void* move_src = nullptr;  // in-place reduce_scatter: block 0 -> block rank
  void* move_dst = nullptr;
  size_t move_bytes = 0;
  void apply() const;
};

struct MpiPlan {
  MpiCall call;
  StagingBuffer staging;
  Finish finish;
  size_t expect_recv = 0;  // recv: elements the sender must send
};

// Lowers s for this rank; stages inputs (widening bf16/f16) and does the
// root's copy of an out-of-place broadcast. context names the operation in errors.
MpiPlan make_plan(const OpSpec& s, MPI_Comm comm, int rank, int size, Allocator* alloc,
                  std::string_view context, std::vector<std::byte>* scratch = nullptr);

// Runs the call: blocking when req is null, else starts it and sets *req.
// status (may be null) receives a blocking recv's status. Returns MPI's code.
int invoke(const MpiCall& c, MPI_Request* req, MPI_Status* status);

// MPI's function name for messages ("MPI_Allreduce", or "MPI_Iallreduce").
const char* mpi_call_name(OpKind k, bool nonblocking);

}  // namespace parallm::comm
