// Feed-forward block: GPT-2's fc -> GELU(tanh) -> proj, or LLaMA's SwiGLU
// down(silu(gate(x)) * up(x)). Saves the pre-activation(s) and the
// activation output (the input of the last matmul).
#pragma once
#include <string>

#include "model/config.h"
#include "model/layers/linear.h"

namespace parallm {

class Mlp {
 public:
  struct Saved {
    Tensor pre;   // (N, I): fc output (GPT-2) or gate output (SwiGLU)
    Tensor up;    // (N, I): SwiGLU only
    Tensor act;   // (N, I): input of the projection back to C
  };
  Mlp() = default;
  Mlp(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg, double proj_std);
  Saved forward(const LayerContext& c, float* out, const float* inp) const;
  void backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                const Saved& s) const;

 private:
  bool swiglu_ = false;
  int64_t inter_ = 0;
  Linear fc_, up_, proj_;  // fc_ is "gate" under SwiGLU
};

}  // namespace parallm
