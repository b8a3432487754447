#include "comm/op_spec.h"

#include <fmt/format.h>

#include <numeric>

#include "base/error.h"

namespace parallm::comm {

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Barrier:
      return "barrier";
    case OpKind::Broadcast:
      return "broadcast";
    case OpKind::Reduce:
      return "reduce";
    case OpKind::AllReduce:
      return "all_reduce";
    case OpKind::Gather:
      return "gather";
    case OpKind::AllGather:
      return "all_gather";
    case OpKind::Scatter:
      return "scatter";
    case OpKind::ReduceScatter:
      return "reduce_scatter";
    case OpKind::AllToAll:
      return "all_to_all";
    case OpKind::AllToAllV:
      return "all_to_all_v";
    case OpKind::Send:
      return "send";
    case OpKind::Recv:
      return "recv";
  }
  return "unknown";
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
  }
  return "unknown";
}

bool is_collective(OpKind k) { return k != OpKind::Send && k != OpKind::Recv; }
bool is_reducing(OpKind k) {
  return k == OpKind::Reduce || k == OpKind::AllReduce || k == OpKind::ReduceScatter;
}
bool is_rooted(OpKind k) {
  return k == OpKind::Broadcast || k == OpKind::Reduce || k == OpKind::Gather ||
         k == OpKind::Scatter;
}
bool dtype_reducible(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 || t == DType::F16 ||
         t == DType::I32 || t == DType::I64;
}

namespace {
const char* at(const void* p, size_t elems, DType t) {
  return static_cast<const char*>(p) + elems * dtype_size(t);
}
size_t sum(std::span<const size_t> v) { return std::accumulate(v.begin(), v.end(), size_t{0}); }
}  // namespace

bool is_in_place(const OpSpec& s, int rank, int size) {
  if (s.send == nullptr || s.recv == nullptr) return false;
  const void* r = s.recv;
  switch (s.kind) {
    case OpKind::AllGather:
      return s.send == at(r, s.count * rank, s.dtype);
    case OpKind::Gather:
      return rank == s.root && s.send == at(r, s.count * rank, s.dtype);
    case OpKind::ReduceScatter:
      return r == at(s.send, s.count * rank, s.dtype);
    case OpKind::Scatter:
      return rank == s.root && r == at(s.send, s.count * rank, s.dtype);
    case OpKind::Send:
    case OpKind::Recv:
    case OpKind::Barrier:
      return false;
    default:
      return s.send == r;
  }
}

size_t send_elems(const OpSpec& s, int rank, int size) {
  const size_t n = static_cast<size_t>(size);
  switch (s.kind) {
    case OpKind::Barrier:
    case OpKind::Recv:
      return 0;
    case OpKind::Broadcast:
      return rank == s.root ? s.count : 0;
    case OpKind::Scatter:
      return rank == s.root ? s.count * n : 0;
    case OpKind::ReduceScatter:
    case OpKind::AllToAll:
      return s.count * n;
    case OpKind::AllToAllV:
      return sum(s.send_counts);
    default:
      return s.count;
  }
}

size_t recv_elems(const OpSpec& s, int rank, int size) {
  const size_t n = static_cast<size_t>(size);
  switch (s.kind) {
    case OpKind::Barrier:
    case OpKind::Send:
      return 0;
    case OpKind::Reduce:
      return rank == s.root ? s.count : 0;
    case OpKind::Gather:
      return rank == s.root ? s.count * n : 0;
    case OpKind::AllGather:
    case OpKind::AllToAll:
      return s.count * n;
    case OpKind::AllToAllV:
      return sum(s.recv_counts);
    default:
      return s.count;
  }
}

void validate(const OpSpec& s, int rank, int size, std::string_view group) {
  auto fail = [&](const std::string& why) {
    PX_FAIL("{} on group '{}' (rank {} of {}): {}", op_kind_name(s.kind), group, rank, size, why);
  };
  if (is_rooted(s.kind) || !is_collective(s.kind)) {
    if (s.root < 0 || s.root >= size)
      fail(fmt::format("{} {} is outside the group", is_collective(s.kind) ? "root" : "peer",
                       s.root));
  }
  if (is_collective(s.kind) && s.tag != 0) fail("tags are for send/recv only");
  if (s.tag < 0) fail(fmt::format("tag {} is negative", s.tag));
  if (is_reducing(s.kind) && !dtype_reducible(s.dtype))
    fail(fmt::format("dtype {} cannot be reduced", dtype_name(s.dtype)));
  if (s.kind == OpKind::AllToAllV && (s.send_counts.size() != static_cast<size_t>(size) ||
                                      s.recv_counts.size() != static_cast<size_t>(size)))
    fail(fmt::format("{} send counts and {} recv counts, expected one per rank",
                     s.send_counts.size(), s.recv_counts.size()));
  const size_t ns = send_elems(s, rank, size), nr = recv_elems(s, rank, size);
  if (ns > 0 && s.send == nullptr) fail(fmt::format("send buffer is null ({} elements)", ns));
  if (nr > 0 && s.recv == nullptr) fail(fmt::format("recv buffer is null ({} elements)", nr));
  if (ns == 0 || nr == 0 || is_in_place(s, rank, size)) return;
  const char* sb = static_cast<const char*>(s.send);
  const char* rb = static_cast<const char*>(s.recv);
  const size_t es = dtype_size(s.dtype);
  if (sb < rb + nr * es && rb < sb + ns * es)
    fail("send and recv buffers overlap without being in place");
}

std::string describe_args(const OpSpec& s) {
  std::string out = fmt::format("{}(", op_kind_name(s.kind));
  if (s.kind == OpKind::AllToAllV) {
    out += fmt::format("send_counts={}, recv_counts={}, {}", fmt::join(s.send_counts, ","),
                       fmt::join(s.recv_counts, ","), dtype_name(s.dtype));
  } else if (s.kind != OpKind::Barrier) {
    out += fmt::format("count={}, {}", s.count, dtype_name(s.dtype));
  }
  if (is_reducing(s.kind)) out += fmt::format(", {}", reduce_op_name(s.op));
  if (is_rooted(s.kind)) out += fmt::format(", root={}", s.root);
  if (s.kind == OpKind::Send) out += fmt::format(", to={}, tag={}", s.root, s.tag);
  if (s.kind == OpKind::Recv) out += fmt::format(", from={}, tag={}", s.root, s.tag);
  return out + ")";
}

}  // namespace parallm::comm
