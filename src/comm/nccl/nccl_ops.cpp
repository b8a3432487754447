// Collectives as NCCL calls (nccl_ops.h).
#include "comm/nccl/nccl_ops.h"

#include <vector>

#include "base/error.h"
#include "comm/nccl/nccl_check.h"
#include "comm/nccl/nccl_types.h"
#include "kernels/cuda/cuda_check.h"

namespace parallm::comm {
namespace {

const char* byte_at(const void* p, size_t bytes) { return static_cast<const char*>(p) + bytes; }
char* byte_at(void* p, size_t bytes) { return static_cast<char*>(p) + bytes; }

void device_copy(void* dst, const void* src, size_t bytes, cudaStream_t st) {
  if (bytes == 0 || dst == src) return;
  PX_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st));
}

// ncclGroupStart..ncclGroupEnd; the group is closed also when a call inside fails.
class NcclGroup {
 public:
  NcclGroup(ncclComm_t comm, const std::string& what) : comm_(comm), what_(what) {
    nccl_check(ncclGroupStart(), "ncclGroupStart", comm_, what_);
  }
  ~NcclGroup() {
    if (open_) ncclGroupEnd();
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  void send(const void* buf, size_t bytes, int peer, cudaStream_t st) {
    if (bytes > 0)
      nccl_check(ncclSend(buf, bytes, ncclInt8, peer, comm_, st), "ncclSend", comm_, what_);
  }
  void recv(void* buf, size_t bytes, int peer, cudaStream_t st) {
    if (bytes > 0)
      nccl_check(ncclRecv(buf, bytes, ncclInt8, peer, comm_, st), "ncclRecv", comm_, what_);
  }
  void end() {
    open_ = false;
    nccl_check(ncclGroupEnd(), "ncclGroupEnd", comm_, what_);
  }

 private:
  ncclComm_t comm_;
  const std::string& what_;
  bool open_ = true;
};

// A stream-ordered device copy of an input, freed in stream order after the
// calls that read it (declare it before the NcclGroup that uses it).
class StagedInput {
 public:
  StagedInput(const void* src, size_t bytes, cudaStream_t st) : st_(st) {
    if (bytes == 0) return;
    PX_CUDA(cudaMallocAsync(&ptr_, bytes, st_));
    PX_CUDA(cudaMemcpyAsync(ptr_, src, bytes, cudaMemcpyDeviceToDevice, st_));
  }
  ~StagedInput() {
    if (ptr_ != nullptr) cudaFreeAsync(ptr_, st_);
  }
  StagedInput(const StagedInput&) = delete;
  StagedInput& operator=(const StagedInput&) = delete;
  const void* get() const { return ptr_; }

 private:
  cudaStream_t st_;
  void* ptr_ = nullptr;
};

void gather(const OpSpec& s, ncclComm_t comm, cudaStream_t st, int rank, int size, size_t block,
            const std::string& what) {
  if (rank == s.root) {
    device_copy(byte_at(s.recv, rank * block), s.send, block, st);  // no-op in place
    NcclGroup g(comm, what);
    for (int j = 0; j < size; ++j)
      if (j != rank) g.recv(byte_at(s.recv, j * block), block, j, st);
    g.end();
  } else {
    NcclGroup g(comm, what);
    g.send(s.send, block, s.root, st);
    g.end();
  }
}

void scatter(const OpSpec& s, ncclComm_t comm, cudaStream_t st, int rank, int size, size_t block,
             const std::string& what) {
  if (rank == s.root) {
    device_copy(s.recv, byte_at(s.send, rank * block), block, st);  // no-op in place
    NcclGroup g(comm, what);
    for (int j = 0; j < size; ++j)
      if (j != rank) g.send(byte_at(s.send, j * block), block, j, st);
    g.end();
  } else {
    NcclGroup g(comm, what);
    g.recv(s.recv, block, s.root, st);
    g.end();
  }
}

// all_to_all and all_to_all_v: block j of send (bytes[j] at offset off[j])
// to rank j, block j of recv from rank j.
void all_to_all(const OpSpec& s, ncclComm_t comm, cudaStream_t st, int rank, int size,
                const std::vector<size_t>& send_bytes, const std::vector<size_t>& recv_bytes,
                const std::string& what) {
  std::vector<size_t> soff(size, 0), roff(size, 0);
  for (int j = 1; j < size; ++j) {
    soff[j] = soff[j - 1] + send_bytes[j - 1];
    roff[j] = roff[j - 1] + recv_bytes[j - 1];
  }
  PX_CHECK(send_bytes[rank] == recv_bytes[rank],
           "{}: this rank sends itself {} bytes but expects {} from itself", what, send_bytes[rank],
           recv_bytes[rank]);
  const size_t total = soff[size - 1] + send_bytes[size - 1];
  const bool in_place = s.send == s.recv && total > 0;
  StagedInput staged(in_place ? s.send : nullptr, in_place ? total : 0, st);
  const void* src = in_place ? staged.get() : s.send;
  device_copy(byte_at(s.recv, roff[rank]), byte_at(src, soff[rank]), send_bytes[rank], st);
  NcclGroup g(comm, what);
  for (int j = 0; j < size; ++j) {
    if (j == rank) continue;
    g.send(byte_at(src, soff[j]), send_bytes[j], j, st);
    g.recv(byte_at(s.recv, roff[j]), recv_bytes[j], j, st);
  }
  g.end();
}

}  // namespace

void enqueue_collective(const OpSpec& s, NcclChannel& ch, int rank, int size,
                        const std::string& what) {
  ncclComm_t comm = ch.comm();
  cudaStream_t st = ch.stream();
  const size_t es = dtype_size(s.dtype);
  const size_t block = s.count * es;  // bytes per rank's block
  switch (s.kind) {
    case OpKind::Barrier:
      nccl_check(
          ncclAllReduce(ch.barrier_buffer(), ch.barrier_buffer(), 1, ncclInt32, ncclSum, comm, st),
          "ncclAllReduce", comm, what);
      return;
    case OpKind::Broadcast:
      if (block == 0) return;
      nccl_check(ncclBroadcast(s.send, s.recv, block, ncclInt8, s.root, comm, st), "ncclBroadcast",
                 comm, what);
      return;
    case OpKind::Reduce:
      if (s.count == 0) return;
      nccl_check(
          ncclReduce(s.send, s.recv, s.count, nccl_dtype(s.dtype), nccl_op(s.op), s.root, comm, st),
          "ncclReduce", comm, what);
      return;
    case OpKind::AllReduce:
      if (s.count == 0) return;
      nccl_check(
          ncclAllReduce(s.send, s.recv, s.count, nccl_dtype(s.dtype), nccl_op(s.op), comm, st),
          "ncclAllReduce", comm, what);
      return;
    case OpKind::AllGather:
      if (block == 0) return;
      nccl_check(ncclAllGather(s.send, s.recv, block, ncclInt8, comm, st), "ncclAllGather", comm,
                 what);
      return;
    case OpKind::ReduceScatter:
      if (s.count == 0) return;
      nccl_check(
          ncclReduceScatter(s.send, s.recv, s.count, nccl_dtype(s.dtype), nccl_op(s.op), comm, st),
          "ncclReduceScatter", comm, what);
      return;
    case OpKind::Gather:
      if (block > 0) gather(s, comm, st, rank, size, block, what);
      return;
    case OpKind::Scatter:
      if (block > 0) scatter(s, comm, st, rank, size, block, what);
      return;
    case OpKind::AllToAll: {
      if (block == 0) return;
      const std::vector<size_t> bytes(size, block);
      all_to_all(s, comm, st, rank, size, bytes, bytes, what);
      return;
    }
    case OpKind::AllToAllV: {
      std::vector<size_t> sb(size), rb(size);
      for (int j = 0; j < size; ++j) {
        sb[j] = s.send_counts[j] * es;
        rb[j] = s.recv_counts[j] * es;
      }
      all_to_all(s, comm, st, rank, size, sb, rb, what);
      return;
    }
    case OpKind::Send:
    case OpKind::Recv:
      break;
  }
  PX_FAIL("{}: {} is not a collective", what, op_kind_name(s.kind));
}

}  // namespace parallm::comm
