#include "parallel/tensor/mappings.h"

#include <vector>

#include "base/error.h"
#include "ops/activation.h"
#include "ops/copy.h"

namespace parallm {

namespace {
constexpr int64_t kF = sizeof(float);

void copy_rows(const TpGroup& g, float* dst, const float* src, int64_t n) {
  if (dst != src) ops::copy(g.stream(), dst, src, static_cast<size_t>(n) * sizeof(float));
}

void all_reduce(const TpGroup& g, float* x, int64_t n) {
  g.comm->all_reduce(x, static_cast<size_t>(n), DType::F32, comm::ReduceOp::Sum);
}
}  // namespace

void copy_to_tp_region_backward(const TpGroup& g, float* dx, int64_t n) {
  if (g.active()) all_reduce(g, dx, n);
}

void reduce_from_tp_region(const TpGroup& g, float* x, int64_t n) {
  if (g.active()) all_reduce(g, x, n);
}

void scatter_to_tp_region(const TpGroup& g, float* out, const float* in, int64_t rows,
                          int64_t cols) {
  PX_CHECK(cols % g.size() == 0, "scatter_to_tp_region: {} columns are not divisible by tp ({})",
           cols, g.size());
  const int64_t w = cols / g.size(), c0 = g.rank() * w;
  for (int64_t r = 0; r < rows; ++r)
    ops::copy(g.stream(), out + r * w, in + r * cols + c0, static_cast<size_t>(w * kF));
}

void gather_from_tp_region(const TpGroup& g, float* out, const float* in, int64_t rows,
                           int64_t cols_local) {
  if (!g.active()) return copy_rows(g, out, in, rows * cols_local);
  const int P = g.size();
  // Inference and tests only (the full logits); the staging copy is untagged.
  std::vector<float> blocks(static_cast<size_t>(rows * cols_local * P));
  g.comm->all_gather(in, blocks.data(), static_cast<size_t>(rows * cols_local), DType::F32);
  // blocks (P, rows, w) -> out (rows, P * w)
  for (int p = 0; p < P; ++p)
    for (int64_t r = 0; r < rows; ++r)
      ops::copy_to_device(g.stream(), out + r * cols_local * P + p * cols_local,
                          blocks.data() + (p * rows + r) * cols_local,
                          static_cast<size_t>(cols_local * kF));
}

void gather_from_sequence_region(const TpGroup& g, float* full, const float* local,
                                 int64_t rows_local, int64_t cols) {
  if (!g.active()) return copy_rows(g, full, local, rows_local * cols);
  g.comm->all_gather(local, full, static_cast<size_t>(rows_local * cols), DType::F32);
}

void reduce_scatter_to_sequence_region(const TpGroup& g, float* local, const float* full,
                                       int64_t rows_local, int64_t cols) {
  if (!g.active()) return copy_rows(g, local, full, rows_local * cols);
  g.comm->reduce_scatter(full, local, static_cast<size_t>(rows_local * cols), DType::F32,
                         comm::ReduceOp::Sum);
}

void enter_tp_region(const TpGroup& g, float* full, const float* stream, int64_t N, int64_t C) {
  if (g.sp()) return gather_from_sequence_region(g, full, stream, N / g.size(), C);
  copy_rows(g, full, stream, N * C);  // copy_to_tp_region: forward identity
}

void enter_tp_region_backward(const TpGroup& g, float* dstream, float* dfull, int64_t N,
                              int64_t C) {
  if (g.sp()) {
    const int64_t rows = N / g.size();
    float* mine = dfull + g.rank() * rows * C;  // in place: no extra buffer
    reduce_scatter_to_sequence_region(g, mine, dfull, rows, C);
    ops::add_inplace(g.stream(), dstream, mine, rows * C);
    return;
  }
  copy_to_tp_region_backward(g, dfull, N * C);
  ops::add_inplace(g.stream(), dstream, dfull, N * C);
}

void leave_tp_region(const TpGroup& g, float* stream, float* partial, int64_t N, int64_t C) {
  if (g.sp()) return reduce_scatter_to_sequence_region(g, stream, partial, N / g.size(), C);
  reduce_from_tp_region(g, partial, N * C);
  copy_rows(g, stream, partial, N * C);
}

void leave_tp_region_backward(const TpGroup& g, float* dfull, const float* dstream, int64_t N,
                              int64_t C) {
  if (g.sp()) return gather_from_sequence_region(g, dfull, dstream, N / g.size(), C);
  copy_rows(g, dfull, dstream, N * C);  // reduce_from_tp_region: backward identity
}

}  // namespace parallm
