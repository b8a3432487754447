// Softmax cross-entropy on the GPU, the twins of kernels/cpu/cross_entropy.h
// (row max, sum of exponentials, target logit, in-place softmax gradient, for
// vocab-parallel loss), plus the fused per-row loss-and-gradient the LM head
// calls on a chunk of rows, and one row's log-sum-exp for sampling. Logits
// T in {float, __nv_bfloat16}; every statistic is fp32 (sums of exponentials
// accumulate in double, as the CPU).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace parallm::cuda {

// mx[i] = max_j logits[i, j]
template <class T>
void ce_row_max(float* mx, const T* logits, int64_t n, int64_t V, cudaStream_t s);
// sumexp[i] = sum_j exp(logits[i, j] - mx[i])
template <class T>
void ce_row_sumexp(float* sumexp, const T* logits, const float* mx, int64_t n, int64_t V,
                   cudaStream_t s);
// tl[i] = logits[i, targets[i] - vocab_begin] if the target lies in this shard
// [vocab_begin, vocab_begin + V), else 0 (targets < 0 included).
template <class T>
void ce_target_logit(float* tl, const T* logits, const int32_t* targets, int64_t n, int64_t V,
                     int64_t vocab_begin, cudaStream_t s);
// In place: logits[i, j] <- (exp(logits[i, j] - lse[i]) - [j is target]) * row_scale[i]
// (row_scale null: 1). Rows whose target < 0 become 0.
template <class T>
void ce_softmax_grad_inplace(T* logits, const float* lse, const int32_t* targets,
                             const float* row_scale, int64_t n, int64_t V, int64_t vocab_begin,
                             cudaStream_t s);

// Fused, one block per row: loss[i] = lse_i - logits[i, targets[i]] and logits
// replaced in place by (softmax - onehot) * row_scale. Rows with target < 0
// get loss 0 and a zero gradient; a target >= V counts as outside the
// (unsharded) vocabulary: loss lse_i and no one-hot term, as the pieces do.
template <class T>
void ce_loss_grad_inplace(T* logits, float* loss, const int32_t* targets, float row_scale,
                          int64_t n, int64_t V, cudaStream_t s);

// log(sum_j exp(x[j])) of one fp32 row, as cpu::log_sum_exp: the max first,
// then exp(x[j] - max) in double, summed in double (sampling's
// log-probabilities over a whole vocabulary). Deterministic: the block split
// depends on n alone. Returns to the host, so it synchronizes s; n == 0 gives
// -inf. scratch: log_sum_exp_scratch_bytes(n) bytes of device memory.
size_t log_sum_exp_scratch_bytes(int64_t n);
double log_sum_exp(const float* x, int64_t n, void* scratch, cudaStream_t s);

}  // namespace parallm::cuda
