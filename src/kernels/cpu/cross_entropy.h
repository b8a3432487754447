// Softmax cross-entropy on a chunk of logits (n rows, V columns), split into
// the pieces that vocab-parallel loss needs, so a caller can all-reduce the
// row max, the sum of exponentials and the target logit across vocabulary
// shards between the steps. The LM head calls these on chunks of rows so the
// full (B*T, V) logits never exist.
#pragma once
#include <cstdint>

namespace parallm::cpu {

// mx[i] = max_j logits[i, j]
template <class T>
void ce_row_max(T* mx, const T* logits, int64_t n, int64_t V);
// sumexp[i] = sum_j exp(logits[i, j] - mx[i])
template <class T>
void ce_row_sumexp(T* sumexp, const T* logits, const T* mx, int64_t n, int64_t V);
// tl[i] = logits[i, targets[i] - vocab_begin] if the target lies in this shard
// [vocab_begin, vocab_begin + V), else 0. Targets < 0 are ignored (tl = 0).
template <class T>
void ce_target_logit(T* tl, const T* logits, const int32_t* targets, int64_t n, int64_t V,
                     int64_t vocab_begin);
// In place: logits[i, j] <- (exp(logits[i, j] - lse[i]) - [j is target]) * row_scale[i].
// This is d(loss_i * row_scale[i]) / d logits. Rows whose target < 0 become 0.
template <class T>
void ce_softmax_grad_inplace(T* logits, const T* lse, const int32_t* targets, const T* row_scale,
                             int64_t n, int64_t V, int64_t vocab_begin);

// log(sum_j exp(x[j])) of one row, in double (sampling's log-probabilities
// over a whole vocabulary, every decoded token).
double log_sum_exp(const float* x, int64_t n);

}  // namespace parallm::cpu
