// Normalisation over the hidden dimension: LayerNorm (weight and bias, GPT-2)
// or RMSNorm (weight only, LLaMA; Gemma's gain is 1 + weight, its weight
// starting at 0). Saves per-row statistics for backward.
// Rows are independent, so under sequence parallelism it runs on this rank's
// slice of the tokens (tp_partial_grad: its gradients are then partial).
#pragma once
#include <string>

#include "nn/layer_context.h"

namespace parallm {

class Norm {
 public:
  struct Saved {
    Tensor out;   // (N, C), the normalised output (input to the next matmul)
    Tensor mean;  // (N), LayerNorm only
    Tensor rstd;  // (N)
  };
  Norm() = default;
  // adds_one: RMSNorm scales by (1 + weight) (ModelConfig::norm_adds_one).
  Norm(ParameterSet& ps, const std::string& name, int64_t C, bool layernorm, double eps,
       bool tp_partial_grad = false, bool adds_one = false);
  Saved forward(const LayerContext& c, const float* inp) const;
  // dinp (N, C) += ...; weight/bias grads accumulate.
  void backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                const Saved& s) const;

 private:
  int64_t C_ = 0;
  bool layernorm_ = true;
  bool adds_one_ = false;
  double eps_ = 1e-5;
  ParamRef w_, b_;
};

}  // namespace parallm
