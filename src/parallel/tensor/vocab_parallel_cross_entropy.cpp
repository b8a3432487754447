#include "parallel/tensor/vocab_parallel_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "kernels/cpu/cross_entropy.h"

namespace parallm {

VocabParallelCrossEntropy::VocabParallelCrossEntropy(const VocabShard& shard, const TpGroup& tp,
                                                     int64_t max_rows)
    : shard_(shard),
      tp_(tp),
      mx_(max_rows),
      sums_(2 * max_rows),
      lse_(max_rows),
      scale_(max_rows) {}

void VocabParallelCrossEntropy::loss(const float* L, const int32_t* tr, int64_t n, LossSum& out) {
  const int64_t V = shard_.valid;  // padded ids get no logits at all
  if (V > 0) {
    cpu::ce_row_max(mx_.data(), L, n, V);
  } else {
    std::fill(mx_.begin(), mx_.end(), -std::numeric_limits<float>::infinity());
  }
  if (tp_.active()) {  // the global row max, then shard sums against it
    tp_.comm->all_reduce(mx_.data(), static_cast<size_t>(n), DType::F32, comm::ReduceOp::Max);
  }
  // The sum of exponentials (first n) and target logits (next n), adjacent
  // so one all-reduce carries both.
  float* se = sums_.data();
  float* tl = sums_.data() + n;
  std::fill(sums_.begin(), sums_.end(), 0.0f);
  if (V > 0) {
    cpu::ce_row_sumexp(se, L, mx_.data(), n, V);
    cpu::ce_target_logit(tl, L, tr, n, V, shard_.begin);
  }
  if (tp_.active()) {
    tp_.comm->all_reduce(se, static_cast<size_t>(2 * n), DType::F32, comm::ReduceOp::Sum);
  }
  for (int64_t i = 0; i < n; ++i) {
    lse_[i] = mx_[i] + std::log(se[i]);
    if (tr[i] < 0) continue;
    PX_CHECK(tr[i] < shard_.vocab, "target token {} is outside the vocabulary ({})", tr[i],
             shard_.vocab);
    out.sum += static_cast<double>(lse_[i]) - static_cast<double>(tl[i]);
    out.count += 1;
  }
}

void VocabParallelCrossEntropy::grad_inplace(float* L, const int32_t* tr, int64_t n,
                                             double grad_scale) {
  if (shard_.valid == 0) return;
  std::fill(scale_.begin(), scale_.begin() + n, static_cast<float>(grad_scale));
  cpu::ce_softmax_grad_inplace(L, lse_.data(), tr, scale_.data(), n, shard_.valid, shard_.begin);
}

}  // namespace parallm
