// Softmax cross-entropy on a chunk of logits (n rows, V columns) in the
// pieces vocab-parallel loss all-reduces between: row max, sum of
// exponentials, target logit, then the gradient in place.
// Kernels: kernels/cpu/cross_entropy.h.
#pragma once
#include <cstdint>

#include "ops/stream.h"

namespace parallm::ops {

void ce_row_max(const Stream& s, float* mx, const float* logits, int64_t n, int64_t V);
void ce_row_sumexp(const Stream& s, float* sumexp, const float* logits, const float* mx, int64_t n,
                   int64_t V);
// tl[i] = logits[i, targets[i] - vocab_begin] inside this shard, else 0.
void ce_target_logit(const Stream& s, float* tl, const float* logits, const int32_t* targets,
                     int64_t n, int64_t V, int64_t vocab_begin);
// logits[i, j] <- (softmax - onehot) * row_scale[i]; rows with target < 0 become 0.
void ce_softmax_grad_inplace(const Stream& s, float* logits, const float* lse,
                             const int32_t* targets, const float* row_scale, int64_t n, int64_t V,
                             int64_t vocab_begin);

// log(sum_j exp(x[j])) of one row of n values, in double.
double log_sum_exp(const Stream& s, const float* x, int64_t n);

}  // namespace parallm::ops
