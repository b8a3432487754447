// Tensor forms of the common collectives: thin checks (dtype, element
// counts, device) over the (pointer, count, dtype) Communicator calls, so
// layer code can write comm::all_reduce(tp, grad, ReduceOp::Sum). Tensors
// must be contiguous (every parallm Tensor is). Shapes are not constrained:
// only element counts matter to a collective.
#pragma once
#include "base/error.h"
#include "comm/communicator.h"
#include "tensor/tensor.h"

namespace parallm::comm {

namespace detail {
inline void same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  PX_CHECK(a.dtype() == b.dtype(), "{}: input is {}, output is {}", op, dtype_name(a.dtype()),
           dtype_name(b.dtype()));
}
inline size_t numel(const Tensor& t) { return static_cast<size_t>(t.numel()); }
}  // namespace detail

// In place: t becomes the reduction of every rank's t.
inline void all_reduce(Communicator& c, const Tensor& t, ReduceOp op) {
  c.all_reduce(t.raw(), detail::numel(t), t.dtype(), op);
}
[[nodiscard]] inline Work all_reduce_async(Communicator& c, const Tensor& t, ReduceOp op) {
  return c.all_reduce_async(t.raw(), t.raw(), detail::numel(t), t.dtype(), op);
}

inline void broadcast(Communicator& c, const Tensor& t, int root) {
  c.broadcast(t.raw(), detail::numel(t), t.dtype(), root);
}

// out: size x in (the blocks in rank order).
inline void all_gather(Communicator& c, const Tensor& in, const Tensor& out) {
  detail::same_dtype(in, out, "all_gather");
  PX_CHECK(detail::numel(out) == detail::numel(in) * c.size(),
           "all_gather on {}: output has {} elements, expected {} x {}", c.label(), out.numel(),
           c.size(), in.numel());
  c.all_gather(in.raw(), out.raw(), detail::numel(in), in.dtype());
}

// in: size x out; out gets the reduction of every rank's block `rank`.
inline void reduce_scatter(Communicator& c, const Tensor& in, const Tensor& out, ReduceOp op) {
  detail::same_dtype(in, out, "reduce_scatter");
  PX_CHECK(detail::numel(in) == detail::numel(out) * c.size(),
           "reduce_scatter on {}: input has {} elements, expected {} x {}", c.label(), in.numel(),
           c.size(), out.numel());
  c.reduce_scatter(in.raw(), out.raw(), detail::numel(out), in.dtype(), op);
}

// in and out: size equal blocks; block j of in goes to rank j.
inline void all_to_all(Communicator& c, const Tensor& in, const Tensor& out) {
  detail::same_dtype(in, out, "all_to_all");
  PX_CHECK(detail::numel(in) == detail::numel(out) && detail::numel(in) % c.size() == 0,
           "all_to_all on {}: {} and {} elements are not equal multiples of {}", c.label(),
           in.numel(), out.numel(), c.size());
  c.all_to_all(in.raw(), out.raw(), detail::numel(in) / c.size(), in.dtype());
}

}  // namespace parallm::comm
