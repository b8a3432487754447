#include "comm/mpi/mpi_plan.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "comm/mpi/mpi_types.h"
#include "comm/mpi/ring_reduce_scatter.h"

namespace parallm::comm {

void Finish::apply() const {
  if (divide_buf != nullptr) divide_in_place(divide_buf, divide_dtype, divide_count, divisor);
  if (narrow_src != nullptr)
    narrow_from_f32(narrow_src, narrow_dst, narrow_dtype, narrow_count, divisor);
  if (move_bytes > 0) std::memmove(move_dst, move_src, move_bytes);
}

namespace {

const void* send_or_in_place(const OpSpec& s, bool in_place) {
  return in_place ? MPI_IN_PLACE : s.send;
}

// Reductions: native dtypes reduce on the caller's buffers; bf16/f16 reduce an
// fp32 copy of the input in place and narrow it into recv afterwards.
void plan_reduction(const OpSpec& s, int rank, int size, bool in_place, Allocator* alloc,
                    MpiPlan& p) {
  MpiCall& c = p.call;
  Finish& f = p.finish;
  const int divisor = s.op == ReduceOp::Avg ? size : 1;
  const bool result_here = s.kind != OpKind::Reduce || rank == s.root;
  const size_t in_elems = s.kind == OpKind::ReduceScatter ? s.count * size : s.count;
  c.op = mpi_op(s.op);
  if (reduces_via_f32(s.dtype)) {
    p.staging = StagingBuffer(alloc, in_elems * sizeof(float));
    widen_to_f32(s.send, s.dtype, p.staging.f32(), in_elems);
    c.type = MPI_FLOAT;
    c.send = result_here ? MPI_IN_PLACE : p.staging.data();
    c.recv = result_here ? p.staging.data() : nullptr;
    if (result_here) {  // every result lands at the start of the staging copy
      f.narrow_src = p.staging.f32();
      f.narrow_dst = s.recv;
      f.narrow_dtype = s.dtype;
      f.narrow_count = s.count;
      f.divisor = divisor;
    }
    return;
  }
  c.type = mpi_datatype(s.dtype);
  c.send = send_or_in_place(s, in_place && result_here);  // MPI_IN_PLACE is the root's only
  c.recv = s.recv;
  void* result = s.recv;
  if (s.kind == OpKind::ReduceScatter && in_place) {
    // MPI leaves the block at the buffer's start; NCCL's contract puts it at
    // block `rank`, where the caller's recv pointer is.
    void* full = const_cast<void*>(s.send);
    c.recv = full;
    result = full;
    if (rank > 0) {
      f.move_src = full;
      f.move_dst = s.recv;
      f.move_bytes = s.count * dtype_size(s.dtype);
    }
  }
  if (divisor > 1 && result_here) {
    f.divide_buf = result;
    f.divide_dtype = s.dtype;
    f.divide_count = s.count;
    f.divisor = divisor;
  }
}

void plan_all_to_all_v(const OpSpec& s, int size, bool in_place, std::string_view ctx, MpiCall& c) {
  if (in_place)
    PX_CHECK(std::equal(s.send_counts.begin(), s.send_counts.end(), s.recv_counts.begin()),
             "{}: in-place all_to_all_v needs send_counts == recv_counts", ctx);
  auto prefix = [&](std::span<const size_t> counts, std::vector<int>& n, std::vector<int>& d) {
    size_t off = 0;
    for (int j = 0; j < size; ++j) {
      n.push_back(mpi_count(counts[j], ctx));
      d.push_back(mpi_count(off, ctx));
      off += counts[j];
    }
  };
  prefix(s.send_counts, c.send_counts, c.send_displs);
  prefix(s.recv_counts, c.recv_counts, c.recv_displs);
  c.send = send_or_in_place(s, in_place);
  c.recv = s.recv;
  c.type = mpi_datatype(s.dtype);
}

}  // namespace

MpiPlan make_plan(const OpSpec& s, MPI_Comm comm, int rank, int size, Allocator* alloc,
                  std::string_view context, std::vector<std::byte>* scratch) {
  MpiPlan p;
  MpiCall& c = p.call;
  c.kind = s.kind;
  c.comm = comm;
  c.root = s.root;
  c.tag = s.tag;
  c.count = mpi_count(s.count, context);
  const bool in_place = is_in_place(s, rank, size);
  switch (s.kind) {
    case OpKind::Barrier:
      break;
    case OpKind::Reduce:
    case OpKind::AllReduce:
    case OpKind::ReduceScatter:
      plan_reduction(s, rank, size, in_place, alloc, p);
      break;
    case OpKind::Broadcast:
      if (rank == s.root && s.send != s.recv && s.count > 0)
        std::memcpy(s.recv, s.send, s.count * dtype_size(s.dtype));
      c.recv = s.recv;
      c.type = mpi_datatype(s.dtype);
      break;
    case OpKind::Scatter:
      c.send = s.send;
      c.recv = in_place ? MPI_IN_PLACE : s.recv;
      c.type = mpi_datatype(s.dtype);
      break;
    case OpKind::Gather:
    case OpKind::AllGather:
    case OpKind::AllToAll:
      c.send = send_or_in_place(s, in_place);
      c.recv = s.recv;
      c.type = mpi_datatype(s.dtype);
      break;
    case OpKind::AllToAllV:
      plan_all_to_all_v(s, size, in_place, context, c);
      break;
    case OpKind::Send:
    case OpKind::Recv:
      PX_CHECK(s.tag >= 0 && s.tag < kRingTag, "{}: tag {} is outside 0..{} (the ring's tag is {})",
               context, s.tag, kRingTag - 1, kRingTag);
      c.send = s.send;
      c.recv = s.recv;
      c.type = mpi_datatype(s.dtype);
      p.expect_recv = s.count;
      break;
  }
  // Large sums take the ring (ring_reduce_scatter.h): decided here, where
  // the group's size is known; invoke() only follows the choice.
  if (s.kind == OpKind::ReduceScatter && ring_reduce_scatter_serves(c.type, c.op, c.count, size))
    c.scratch = scratch;
  return p;
}

const char* mpi_call_name(OpKind k, bool nb) {
  switch (k) {
    case OpKind::Barrier:
      return nb ? "MPI_Ibarrier" : "MPI_Barrier";
    case OpKind::Broadcast:
      return nb ? "MPI_Ibcast" : "MPI_Bcast";
    case OpKind::Reduce:
      return nb ? "MPI_Ireduce" : "MPI_Reduce";
    case OpKind::AllReduce:
      return nb ? "MPI_Iallreduce" : "MPI_Allreduce";
    case OpKind::Gather:
      return nb ? "MPI_Igather" : "MPI_Gather";
    case OpKind::AllGather:
      return nb ? "MPI_Iallgather" : "MPI_Allgather";
    case OpKind::Scatter:
      return nb ? "MPI_Iscatter" : "MPI_Scatter";
    case OpKind::ReduceScatter:
      return nb ? "MPI_Ireduce_scatter_block" : "MPI_Reduce_scatter_block";
    case OpKind::AllToAll:
      return nb ? "MPI_Ialltoall" : "MPI_Alltoall";
    case OpKind::AllToAllV:
      return nb ? "MPI_Ialltoallv" : "MPI_Alltoallv";
    case OpKind::Send:
      return nb ? "MPI_Isend" : "MPI_Send";
    case OpKind::Recv:
      return nb ? "MPI_Irecv" : "MPI_Recv";
  }
  return "MPI";
}

int invoke(const MpiCall& c, MPI_Request* req, MPI_Status* status) {
  void* send = const_cast<void*>(c.send);  // MPI-3 takes const; older headers did not
  const bool nb = req != nullptr;
  switch (c.kind) {
    case OpKind::Barrier:
      return nb ? MPI_Ibarrier(c.comm, req) : MPI_Barrier(c.comm);
    case OpKind::Broadcast:
      return nb ? MPI_Ibcast(c.recv, c.count, c.type, c.root, c.comm, req)
                : MPI_Bcast(c.recv, c.count, c.type, c.root, c.comm);
    case OpKind::Reduce:
      return nb ? MPI_Ireduce(send, c.recv, c.count, c.type, c.op, c.root, c.comm, req)
                : MPI_Reduce(send, c.recv, c.count, c.type, c.op, c.root, c.comm);
    case OpKind::AllReduce:
      return nb ? MPI_Iallreduce(send, c.recv, c.count, c.type, c.op, c.comm, req)
                : MPI_Allreduce(send, c.recv, c.count, c.type, c.op, c.comm);
    case OpKind::Gather:
      return nb ? MPI_Igather(send, c.count, c.type, c.recv, c.count, c.type, c.root, c.comm, req)
                : MPI_Gather(send, c.count, c.type, c.recv, c.count, c.type, c.root, c.comm);
    case OpKind::AllGather:
      return nb ? MPI_Iallgather(send, c.count, c.type, c.recv, c.count, c.type, c.comm, req)
                : MPI_Allgather(send, c.count, c.type, c.recv, c.count, c.type, c.comm);
    case OpKind::Scatter:
      return nb ? MPI_Iscatter(send, c.count, c.type, c.recv, c.count, c.type, c.root, c.comm, req)
                : MPI_Scatter(send, c.count, c.type, c.recv, c.count, c.type, c.root, c.comm);
    case OpKind::ReduceScatter:
      if (!nb && c.scratch != nullptr)
        return ring_reduce_scatter(send, c.recv, c.count, c.type, c.comm, *c.scratch);
      return nb ? MPI_Ireduce_scatter_block(send, c.recv, c.count, c.type, c.op, c.comm, req)
                : MPI_Reduce_scatter_block(send, c.recv, c.count, c.type, c.op, c.comm);
    case OpKind::AllToAll:
      return nb ? MPI_Ialltoall(send, c.count, c.type, c.recv, c.count, c.type, c.comm, req)
                : MPI_Alltoall(send, c.count, c.type, c.recv, c.count, c.type, c.comm);
    case OpKind::AllToAllV:
      return nb ? MPI_Ialltoallv(send, c.send_counts.data(), c.send_displs.data(), c.type, c.recv,
                                 c.recv_counts.data(), c.recv_displs.data(), c.type, c.comm, req)
                : MPI_Alltoallv(send, c.send_counts.data(), c.send_displs.data(), c.type, c.recv,
                                c.recv_counts.data(), c.recv_displs.data(), c.type, c.comm);
    case OpKind::Send:
      return nb ? MPI_Isend(send, c.count, c.type, c.root, c.tag, c.comm, req)
                : MPI_Send(send, c.count, c.type, c.root, c.tag, c.comm);
    case OpKind::Recv:
      return nb ? MPI_Irecv(c.recv, c.count, c.type, c.root, c.tag, c.comm, req)
                : MPI_Recv(c.recv, c.count, c.type, c.root, c.tag, c.comm,
                           status != nullptr ? status : MPI_STATUS_IGNORE);
  }
  return MPI_ERR_OTHER;
}

}  // namespace parallm::comm
