// Feed-forward block: GPT-2's fc -> GELU(tanh) -> proj, or LLaMA's SwiGLU
// down(silu(gate(x)) * up(x)) (Gemma's GeGLU: gelu(gate(x)) * up(x), the
// same tanh GELU), split over tensor parallelism: fc / gate / up
// column-parallel (each rank holds intermediate/tp features, so the
// activation is local), proj / down row-parallel. Saves the pre-activation(s)
// and the activation output (the input of the last matmul). Input and output
// are residual-stream rows (N, or N/tp under sequence parallelism).
#pragma once
#include <string>

#include "model/config.h"
#include "parallel/tensor/parallel_linear.h"

namespace parallm {

class Mlp {
 public:
  struct Saved {
    Tensor pre;  // (N, I/tp): fc output (GPT-2) or gate output (gated)
    Tensor up;   // (N, I/tp): gated only
    Tensor act;  // (N, I/tp): input of the projection back to C (empty: recompute)
  };
  Mlp() = default;
  // adapters: where LoRA adapters go (cfg.lora) when ps is a frozen base; null: none.
  Mlp(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg, double proj_std,
      const TpGroup& tp = {}, ParameterSet* adapters = nullptr);
  Saved forward(const LayerContext& c, float* out, const float* inp) const;
  void backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                const Saved& s) const;

 private:
  // act = silu(pre) * up (SwiGLU) or gelu(pre) * up (GeGLU): the gated forms.
  void gated_forward(const ops::Stream& st, float* act, const float* pre, const float* up,
                     int64_t n) const;
  bool swiglu_ = false;  // gated (gate / up / down), SwiGLU or GeGLU
  bool geglu_ = false;
  int64_t inter_ = 0, C_ = 0;     // inter_: this rank's features
  ColumnParallelLinear fc_, up_;  // fc_ is "gate" under SwiGLU
  RowParallelLinear proj_;
  TpGroup tp_;
};

}  // namespace parallm
