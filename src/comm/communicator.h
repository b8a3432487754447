// Communicator: the one communication interface (DESIGN principle 5). Point-
// to-point and every collective, each blocking and *_async (returning a Work),
// over (pointer, count, DType) buffers. Semantics are NCCL's and MPI's: every
// rank of the group calls the same collectives in the same order; reductions
// of bf16/f16 accumulate in fp32; avg of integers truncates toward zero.
// In place follows NCCL's pointer rules (comm/op_spec.h). A communicator is
// used by one thread at a time, and so are its Works. Every op is counted
// here, not in the backends: bytes, ops and blocked time per op kind
// (comm/comm_counters.h). Backends: comm/mpi/ (NCCL later).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "comm/comm_counters.h"
#include "comm/comm_options.h"
#include "comm/op_spec.h"
#include "comm/work.h"

namespace parallm::comm {

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual const std::string& name() const = 0;  // "world", "tp[1]"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const CommOptions& options() const = 0;
  // Collectives issued so far; the next is number collectives_issued() + 1.
  virtual uint64_t collectives_issued() const = 0;
  // "group 'tp[1]' (rank 1 of 2)", for messages.
  std::string label() const;
  // A snapshot of everything issued on this communicator so far.
  CommCounters counters() const { return *counters_; }
  // A caller that knows when its peer posted (ring_attention's stamped
  // messages) records the part of a wait spent before that, as peer_wait.
  void note_peer_wait(OpKind k, int64_t ns) { counters_->add_peer_wait(k, ns); }

  // Collective over this group: ranks with the same color form a new group,
  // ordered by key (ties by rank). color < 0: this rank joins none (nullptr).
  // Options are inherited.
  virtual std::unique_ptr<Communicator> split(int color, int key, std::string name) = 0;
  // Collective over the listed ranks only (ranks of this group, in the new
  // group's order); every listed rank calls it, others need not.
  virtual std::unique_ptr<Communicator> subgroup(std::span<const int> ranks, std::string name) = 0;

  // Executes a spec: run() blocks, start() returns at once. Both validate.
  void run(const OpSpec& s);
  [[nodiscard]] Work start(const OpSpec& s);

  // ---- point-to-point (peer is a rank of this group; tag >= 0)
  void send(const void* buf, size_t count, DType dt, int peer, int tag = 0) {
    run(p2p(OpKind::Send, buf, nullptr, count, dt, peer, tag));
  }
  void recv(void* buf, size_t count, DType dt, int peer, int tag = 0) {
    run(p2p(OpKind::Recv, nullptr, buf, count, dt, peer, tag));
  }
  [[nodiscard]] Work send_async(const void* buf, size_t count, DType dt, int peer, int tag = 0) {
    return start(p2p(OpKind::Send, buf, nullptr, count, dt, peer, tag));
  }
  [[nodiscard]] Work recv_async(void* buf, size_t count, DType dt, int peer, int tag = 0) {
    return start(p2p(OpKind::Recv, nullptr, buf, count, dt, peer, tag));
  }

  // ---- collectives (counts as in OpKind; send == recv etc. means in place)
  void barrier() { run(OpSpec{}); }  // OpSpec's default kind is Barrier
  [[nodiscard]] Work barrier_async() { return start(OpSpec{}); }

  // root's send -> everyone's recv (root copies send to recv when they differ).
  void broadcast(const void* send, void* recv, size_t count, DType dt, int root) {
    run(rooted(OpKind::Broadcast, send, recv, count, dt, root));
  }
  void broadcast(void* buf, size_t count, DType dt, int root) {
    broadcast(buf, buf, count, dt, root);
  }
  [[nodiscard]] Work broadcast_async(const void* send, void* recv, size_t count, DType dt,
                                     int root) {
    return start(rooted(OpKind::Broadcast, send, recv, count, dt, root));
  }

  void reduce(const void* send, void* recv, size_t count, DType dt, ReduceOp op, int root) {
    run(rooted(OpKind::Reduce, send, recv, count, dt, root, op));
  }
  [[nodiscard]] Work reduce_async(const void* send, void* recv, size_t count, DType dt, ReduceOp op,
                                  int root) {
    return start(rooted(OpKind::Reduce, send, recv, count, dt, root, op));
  }

  void all_reduce(const void* send, void* recv, size_t count, DType dt, ReduceOp op) {
    run(bufs(OpKind::AllReduce, send, recv, count, dt, op));
  }
  void all_reduce(void* buf, size_t count, DType dt, ReduceOp op) {
    all_reduce(buf, buf, count, dt, op);
  }
  [[nodiscard]] Work all_reduce_async(const void* send, void* recv, size_t count, DType dt,
                                      ReduceOp op) {
    return start(bufs(OpKind::AllReduce, send, recv, count, dt, op));
  }

  // send: count; root's recv: size*count in rank order.
  void gather(const void* send, void* recv, size_t count, DType dt, int root) {
    run(rooted(OpKind::Gather, send, recv, count, dt, root));
  }
  [[nodiscard]] Work gather_async(const void* send, void* recv, size_t count, DType dt, int root) {
    return start(rooted(OpKind::Gather, send, recv, count, dt, root));
  }

  // send: count; recv: size*count in rank order.
  void all_gather(const void* send, void* recv, size_t count, DType dt) {
    run(bufs(OpKind::AllGather, send, recv, count, dt));
  }
  [[nodiscard]] Work all_gather_async(const void* send, void* recv, size_t count, DType dt) {
    return start(bufs(OpKind::AllGather, send, recv, count, dt));
  }

  // root's send: size*count, block j to rank j; recv: count.
  void scatter(const void* send, void* recv, size_t count, DType dt, int root) {
    run(rooted(OpKind::Scatter, send, recv, count, dt, root));
  }
  [[nodiscard]] Work scatter_async(const void* send, void* recv, size_t count, DType dt, int root) {
    return start(rooted(OpKind::Scatter, send, recv, count, dt, root));
  }

  // send: size*count; recv: count, the reduction of every rank's block `rank`.
  void reduce_scatter(const void* send, void* recv, size_t count, DType dt, ReduceOp op) {
    run(bufs(OpKind::ReduceScatter, send, recv, count, dt, op));
  }
  [[nodiscard]] Work reduce_scatter_async(const void* send, void* recv, size_t count, DType dt,
                                          ReduceOp op) {
    return start(bufs(OpKind::ReduceScatter, send, recv, count, dt, op));
  }

  // send and recv: size*count; block j of send goes to rank j, block j of
  // recv came from rank j.
  void all_to_all(const void* send, void* recv, size_t count, DType dt) {
    run(bufs(OpKind::AllToAll, send, recv, count, dt));
  }
  [[nodiscard]] Work all_to_all_async(const void* send, void* recv, size_t count, DType dt) {
    return start(bufs(OpKind::AllToAll, send, recv, count, dt));
  }

  // Variable split: send_counts[j] elements (packed in rank order) to rank j,
  // recv_counts[j] from rank j. Counts must agree pairwise across ranks.
  void all_to_all_v(const void* send, std::span<const size_t> send_counts, void* recv,
                    std::span<const size_t> recv_counts, DType dt) {
    run(varsplit(send, send_counts, recv, recv_counts, dt));
  }
  [[nodiscard]] Work all_to_all_v_async(const void* send, std::span<const size_t> send_counts,
                                        void* recv, std::span<const size_t> recv_counts, DType dt) {
    return start(varsplit(send, send_counts, recv, recv_counts, dt));
  }

 protected:
  Communicator() = default;
  virtual void do_run(const OpSpec& s) = 0;
  // The operation in flight, or null when it already completed.
  virtual std::unique_ptr<PendingOp> do_start(const OpSpec& s) = 0;

 private:
  // Shared with the Works in flight, which add their wait time to it.
  std::shared_ptr<CommCounters> counters_ = std::make_shared<CommCounters>();

  static OpSpec bufs(OpKind k, const void* send, void* recv, size_t n, DType dt,
                     ReduceOp op = ReduceOp::Sum) {
    OpSpec s;
    s.kind = k;
    s.send = send;
    s.recv = recv;
    s.count = n;
    s.dtype = dt;
    s.op = op;
    return s;
  }
  static OpSpec rooted(OpKind k, const void* send, void* recv, size_t n, DType dt, int root,
                       ReduceOp op = ReduceOp::Sum) {
    OpSpec s = bufs(k, send, recv, n, dt, op);
    s.root = root;
    return s;
  }
  static OpSpec p2p(OpKind k, const void* send, void* recv, size_t n, DType dt, int peer, int tag) {
    OpSpec s = rooted(k, send, recv, n, dt, peer);
    s.tag = tag;
    return s;
  }
  static OpSpec varsplit(const void* send, std::span<const size_t> sc, void* recv,
                         std::span<const size_t> rc, DType dt) {
    OpSpec s = bufs(OpKind::AllToAllV, send, recv, 0, dt);
    s.send_counts = sc;
    s.recv_counts = rc;
    return s;
  }
};

}  // namespace parallm::comm
