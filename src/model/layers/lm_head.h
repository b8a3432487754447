// LM head fused with cross-entropy: logits are produced a chunk of rows at a
// time, reduced to per-row losses and, when training, turned into gradients
// at once, so the (N, V) logits never exist (at most (chunk, V) at a time).
// Targets < 0 are ignored. The weight is the token table when tied. Under
// tensor parallelism the head is vocab-parallel and so is the loss
// (parallel/tensor/vocab_parallel_cross_entropy.h): each rank forms logits
// of its VocabShard only.
// Input x and dx are all N token rows (the caller gathers them under
// sequence parallelism); dx is this rank's partial sum under tp.
#pragma once
#include "model/config.h"
#include "nn/layer_context.h"
#include "parallel/tensor/tp_group.h"
#include "parallel/tensor/vocab_parallel_cross_entropy.h"
#include "parallel/tensor/vocab_shard.h"

namespace parallm {

class LmHead {
 public:
  LmHead() = default;
  LmHead(ParameterSet& ps, const ModelConfig& cfg, ParamRef tied_table, const TpGroup& tp = {});
  // Forward only (evaluation).
  LossSum loss(const LayerContext& c, const float* x, const int32_t* targets) const;
  // Forward and backward of grad_scale * sum of losses: dx (N, C) += ..., dW += ...
  LossSum loss_and_grad(const LayerContext& c, float* dx, const float* x, const int32_t* targets,
                        double grad_scale) const;
  // This rank's logits (N, shard rows), padded ids included, for inference
  // and tests (gather_from_tp_region assembles the full (N, padded) logits).
  void logits(const LayerContext& c, float* out, const float* x) const;
  const VocabShard& vocab_shard() const { return shard_; }

 private:
  LossSum run(const LayerContext& c, float* dx, const float* x, const int32_t* targets,
              double grad_scale) const;
  int64_t chunk_rows(int64_t N) const;
  int64_t C_ = 0;
  VocabShard shard_;
  ParamRef w_;
  TpGroup tp_;
};

}  // namespace parallm
