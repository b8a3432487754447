// Multi-head causal self-attention with grouped-query heads and optional
// rotary embeddings. Projections q, k, v, o are Linears; the core is the
// flash-style kernel, so only q, k, v, the head outputs and the per-row
// log-sum-exp are saved, never the (B, H, T, T) probabilities.
#pragma once
#include <string>

#include "kernels/cpu/attention.h"
#include "model/config.h"
#include "model/layers/linear.h"

namespace parallm {

class Attention {
 public:
  struct Saved {
    Tensor q, k, v;  // (B, T, Hq*D), (B, T, Hkv*D) x2, after rotary
    Tensor att;      // (B, T, Hq*D), input of the output projection
    Tensor lse;      // (B, Hq, T)
  };
  Attention() = default;
  Attention(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg, double proj_std);
  // out (N, C) is written (not accumulated).
  Saved forward(const LayerContext& c, float* out, const float* inp) const;
  // dinp (N, C) += gradient w.r.t. the layer input.
  void backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                const Saved& s) const;

 private:
  cpu::AttnDims dims(const LayerContext& c) const;
  Linear q_, k_, v_, o_;
  int64_t n_heads_ = 0, n_kv_heads_ = 0, head_dim_ = 0;
  bool rope_ = false;
  double rope_theta_ = 10000.0;
};

}  // namespace parallm
