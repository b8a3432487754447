#include "parallel/tensor/vocab_parallel_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "ops/cross_entropy.h"

namespace parallm {

VocabParallelCrossEntropy::VocabParallelCrossEntropy(const ops::Stream& s, Allocator& alloc,
                                                     const VocabShard& shard, const TpGroup& tp,
                                                     int64_t max_rows)
    : stream_(&s),
      shard_(shard),
      tp_(tp),
      mx_(s, alloc, max_rows),
      sums_(s, alloc, 2 * max_rows),
      lse_(s, alloc, max_rows),
      scale_(s, alloc, max_rows) {}

void VocabParallelCrossEntropy::loss(const float* L, const int32_t* tr, const int32_t* tr_op,
                                     int64_t n, LossSum& out) {
  const int64_t V = shard_.valid;  // padded ids get no logits at all
  if (V > 0) {
    ops::ce_row_max(*stream_, mx_.op(), L, n, V);
  } else {
    std::fill(mx_.host(), mx_.host() + n, -std::numeric_limits<float>::infinity());
    mx_.to_device(n);
  }
  if (tp_.active()) {  // the global row max, then shard sums against it
    tp_.comm->all_reduce(mx_.op(), static_cast<size_t>(n), DType::F32, comm::ReduceOp::Max);
  }
  // The sum of exponentials (first n) and target logits (next n), adjacent
  // so one all-reduce carries both.
  float* se = sums_.op();
  float* tl = sums_.op() + n;
  ops::zero(*stream_, se, static_cast<size_t>(2 * n) * sizeof(float));
  if (V > 0) {
    ops::ce_row_sumexp(*stream_, se, L, mx_.op(), n, V);
    ops::ce_target_logit(*stream_, tl, L, tr_op, n, V, shard_.begin);
  }
  if (tp_.active()) {
    tp_.comm->all_reduce(se, static_cast<size_t>(2 * n), DType::F32, comm::ReduceOp::Sum);
  }
  mx_.to_host(n);
  sums_.to_host(2 * n);
  const float* mx = mx_.host();
  const float* hse = sums_.host();
  const float* htl = sums_.host() + n;
  float* lse = lse_.host();
  for (int64_t i = 0; i < n; ++i) {
    lse[i] = mx[i] + std::log(hse[i]);
    if (tr[i] < 0) continue;
    PX_CHECK(tr[i] < shard_.vocab, "target token {} is outside the vocabulary ({})", tr[i],
             shard_.vocab);
    out.sum += static_cast<double>(lse[i]) - static_cast<double>(htl[i]);
    out.count += 1;
  }
  lse_.to_device(n);
}

void VocabParallelCrossEntropy::grad_inplace(float* L, const int32_t* tr_op, int64_t n,
                                             double grad_scale) {
  if (shard_.valid == 0) return;
  std::fill(scale_.host(), scale_.host() + n, static_cast<float>(grad_scale));
  scale_.to_device(n);
  ops::ce_softmax_grad_inplace(*stream_, L, lse_.op(), tr_op, scale_.op(), n, shard_.valid,
                               shard_.begin);
}

}  // namespace parallm
