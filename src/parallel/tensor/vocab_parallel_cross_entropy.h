// Vocabulary-parallel cross-entropy (Megatron's tensor_parallel/
// cross_entropy.py), one chunk of logit rows at a time: each tp rank holds
// the logits of its VocabShard only, and the loss needs the whole row, so
// the row max is all-reduced (max), then the sum of exponentials and the
// target logit together (sum); the logits themselves never travel. The
// gradient softmax - onehot is formed in place on this rank's columns.
// With an inactive group it is the plain fused cross-entropy.
#pragma once
#include <cstdint>
#include <vector>

#include "nn/op_buffers.h"
#include "parallel/tensor/tp_group.h"
#include "parallel/tensor/vocab_shard.h"

namespace parallm {

struct LossSum {
  double sum = 0.0;   // sum of per-token cross-entropy
  int64_t count = 0;  // tokens with a target >= 0
};

class VocabParallelCrossEntropy {
 public:
  // max_rows: the largest chunk passed later; s: the logits' stream, whose
  // per-row buffers come from alloc (none on the host stream).
  VocabParallelCrossEntropy(const ops::Stream& s, Allocator& alloc, const VocabShard& shard,
                            const TpGroup& tp, int64_t max_rows);
  // logits (n, shard.valid): columns are ids shard.begin + j. Adds the losses
  // of rows whose target is >= 0 to out and keeps each row's log-sum-exp for
  // grad_inplace. Collective over tp (two all-reduces). Throws on a target
  // outside the vocabulary.
  // targets are read on the host, targets_op (the same values) by the ops.
  void loss(const float* logits, const int32_t* targets, const int32_t* targets_op, int64_t n,
            LossSum& out);
  // After loss() on the same chunk: logits become the gradient of
  // grad_scale * (sum of the chunk's losses) with respect to them.
  void grad_inplace(float* logits, const int32_t* targets_op, int64_t n, double grad_scale);

 private:
  const ops::Stream* stream_;
  VocabShard shard_;
  TpGroup tp_;
  HostMirror<float> mx_, sums_, lse_, scale_;
};

}  // namespace parallm
