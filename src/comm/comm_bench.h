// Collective benchmark in the style of nccl-tests (`parallm bench comm`): for
// each collective a sweep of message sizes with time, algorithm bandwidth
// and bus bandwidth, for our Communicator and for the same call made
// directly on the backend's own API (raw MPI), timed alternately in the same
// run on the same buffers, with the ratio. size is nccl-tests' size: the
// per-rank buffer for all_reduce/broadcast/reduce, the total of the n blocks
// for all_gather/reduce_scatter/all_to_all/gather/scatter.
#pragma once
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.h"

namespace parallm::comm {

// The same collectives through a peer API, for comparison.
class PeerCollectives {
 public:
  virtual ~PeerCollectives() = default;
  virtual std::string name() const = 0;  // "MPI"
  virtual bool supports(OpKind k, DType t, ReduceOp op) const = 0;
  // Same arguments and in-place pointer rules as the Communicator; in-place
  // reduce_scatter leaves the block where the peer API puts it.
  virtual void run(OpKind k, const void* send, void* recv, size_t count, DType t, ReduceOp op,
                   int root, bool async) = 0;
};

struct CommBenchOptions {
  std::vector<OpKind> ops = {OpKind::AllReduce, OpKind::AllGather, OpKind::ReduceScatter,
                             OpKind::Broadcast, OpKind::Reduce,    OpKind::AllToAll};
  size_t min_bytes = 1024;
  size_t max_bytes = size_t{64} << 20;
  size_t step_factor = 4;
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  bool in_place = false;
  bool async = false;
  int rounds = 7;         // timed rounds per size and side (see min_time)
  bool min_time = false;  // report the fastest round instead of the median
  double round_ms = 40;   // target length of one round (sets the iterations)
  int max_iters = 1000;
  // Work each rank runs before every call (e.g. a GEMM of a layer's size):
  // a collective that follows compute also waits for the rank that comes
  // last, which back-to-back calls never show. Its own time is left out of
  // the reported time: what remains is the call plus that wait.
  std::function<void()> before_call;
};

struct CommBenchRow {
  OpKind kind;
  size_t bytes = 0, count = 0;          // nccl-tests size; elements per rank block
  double us = 0, algbw = 0, busbw = 0;  // ours; GB/s = 1e9 B/s
  int64_t wrong = 0;                    // elements that differ from the expectation
  bool has_peer = false;
  double peer_us = 0, peer_algbw = 0, peer_busbw = 0;
  // busbw / peer_busbw, as the median over rounds of the ratio of the two
  // adjacent measurements (paired, so load from other processes cancels).
  double ratio = 0;
};

// nccl-tests' bus bandwidth factor: 2(n-1)/n for all_reduce, (n-1)/n for
// all_gather, reduce_scatter, all_to_all, gather and scatter, 1 otherwise.
double bus_factor(OpKind k, int ranks);

// "64M" -> 67108864, "1K" -> 1024, "4096" -> 4096 (powers of 1024).
size_t parse_bytes(std::string_view s);
std::vector<OpKind> parse_op_kinds(std::string_view comma_list);  // "all_reduce,all_gather"

// Collective over comm. Prints the table to out when out is non-null (pass
// it on one rank). peer may be null (no comparison).
std::vector<CommBenchRow> run_comm_bench(Communicator& comm, PeerCollectives* peer,
                                         const CommBenchOptions& opts, std::ostream* out);

}  // namespace parallm::comm
