// Normalisation over the hidden dimension: LayerNorm (weight and bias, GPT-2)
// or RMSNorm (weight only, LLaMA). Saves per-row statistics for backward.
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
  Norm(ParameterSet& ps, const std::string& name, int64_t C, bool layernorm, double eps,
       bool tp_partial_grad = false);
  Saved forward(const LayerContext& c, const float* inp) const;
  // dinp (N, C) += ...; weight/bias grads accumulate.
  void backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                const Saved& s) const;

 private:
  int64_t C_ = 0;
  bool layernorm_ = true;
  double eps_ = 1e-5;
  ParamRef w_, b_;
};

}  // namespace parallm
