// LM head fused with cross-entropy: logits are produced a chunk of rows at a
// time, reduced to per-row losses and, when training, turned into gradients
// at once, so the (N, V) logits never exist (at most (chunk, V) at a time).
// Targets < 0 are ignored. The weight is the token table when tied.
#pragma once
#include "model/config.h"
#include "model/layers/layer_context.h"

namespace parallm {

struct LossSum {
  double sum = 0.0;     // sum of per-token cross-entropy
  int64_t count = 0;    // tokens with a target >= 0
};

class LmHead {
 public:
  LmHead() = default;
  LmHead(ParameterSet& ps, const ModelConfig& cfg, ParamRef tied_table);
  // Forward only (evaluation).
  LossSum loss(const LayerContext& c, const float* x, const int32_t* targets) const;
  // Forward and backward of grad_scale * sum of losses: dx (N, C) += ..., dW += ...
  LossSum loss_and_grad(const LayerContext& c, float* dx, const float* x, const int32_t* targets,
                        double grad_scale) const;
  // Full logits (N, V) for inference and tests.
  void logits(const LayerContext& c, float* out, const float* x) const;

 private:
  LossSum run(const LayerContext& c, float* dx, const float* x, const int32_t* targets,
              double grad_scale) const;
  int64_t chunk_rows(int64_t N) const;
  int64_t V_ = 0, C_ = 0;
  ParamRef w_;
};

}  // namespace parallm
