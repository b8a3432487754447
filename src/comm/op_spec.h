// OpSpec: one communication operation as data (kind, buffers, count, dtype,
// reduce op, root or peer). The Communicator's convenience methods build one;
// a backend executes it. Semantics follow NCCL and MPI: counts are elements,
// "in place" is a pointer relation (see is_in_place), and every rank of a
// group calls the same collectives in the same order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tensor/dtype.h"

namespace parallm::comm {

enum class ReduceOp : uint8_t { Sum, Avg, Max, Min };

enum class OpKind : uint8_t {
  Barrier,
  Broadcast,      // count elements from root to all
  Reduce,         // count elements, result on root
  AllReduce,      // count elements
  Gather,         // send count, root recv size*count (rank order)
  AllGather,      // send count, recv size*count (rank order)
  Scatter,        // root send size*count, recv count
  ReduceScatter,  // send size*count, recv count (this rank's block)
  AllToAll,       // send size*count (block j to rank j), recv size*count
  AllToAllV,      // send_counts[j] to rank j, recv_counts[j] from rank j, packed
  Send,
  Recv,
};

std::string_view op_kind_name(OpKind k);       // "all_reduce", ...
std::string_view reduce_op_name(ReduceOp op);  // "sum", "avg", "max", "min"
bool is_collective(OpKind k);                  // all but Send/Recv
bool is_reducing(OpKind k);                    // Reduce, AllReduce, ReduceScatter
bool is_rooted(OpKind k);                      // Broadcast, Reduce, Gather, Scatter
bool dtype_reducible(DType t);                 // F32, F64, BF16, F16, I32, I64

struct OpSpec {
  OpKind kind = OpKind::Barrier;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // elements; per rank for gather/scatter-like kinds (see OpKind)
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  int root = 0;                         // root rank for rooted collectives, the peer for Send/Recv
  int tag = 0;                          // Send/Recv only
  std::span<const size_t> send_counts;  // AllToAllV only, one per rank
  std::span<const size_t> recv_counts;
};

// True when the operation runs in place on this rank, with NCCL's pointer
// rules: all_gather/gather send == recv + rank*count, reduce_scatter recv ==
// send + rank*count, scatter (root) recv == send + root*count, else send ==
// recv. In-place gather/scatter only concern the root.
bool is_in_place(const OpSpec& s, int rank, int size);

// Element counts of each buffer on this rank (0 where the buffer is unused).
size_t send_elems(const OpSpec& s, int rank, int size);
size_t recv_elems(const OpSpec& s, int rank, int size);

// Throws Error naming the operation when the spec is invalid on this rank:
// root/peer out of range, a dtype that cannot be reduced, count vectors of
// the wrong length, null buffers with nonzero counts, or buffers that overlap
// without being exactly in place.
void validate(const OpSpec& s, int rank, int size, std::string_view group);

// "all_reduce(count=7, BF16, avg)": the operation and its arguments.
std::string describe_args(const OpSpec& s);

}  // namespace parallm::comm
