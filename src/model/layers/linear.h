// Linear layer y = x W^T + b with W stored (out, in) as in torch.nn.Linear.
// Parameters live in the model's ParameterSet; the layer keeps references.
// Tensor-parallel column/row variants will wrap this with communication.
#pragma once
#include <string>

#include "model/layers/layer_context.h"

namespace parallm {

class Linear {
 public:
  Linear() = default;
  Linear(ParameterSet& ps, const std::string& name, int64_t in, int64_t out, bool bias,
         double init_std);
  // out (N, out) = inp (N, in) W^T + b
  void forward(const LayerContext& c, float* out, const float* inp) const;
  // dinp (N, in) += dout W (skipped when null); dW, db accumulate.
  void backward(const LayerContext& c, float* dinp, const float* dout, const float* inp) const;
  int64_t in() const { return in_; }
  int64_t out() const { return out_; }
  ParamRef weight() const { return w_; }

 private:
  int64_t in_ = 0, out_ = 0;
  ParamRef w_, b_;
};

}  // namespace parallm
