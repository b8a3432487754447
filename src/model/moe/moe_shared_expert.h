// The shared expert of an MoE layer (Qwen2-MoE, DeepSeek; docs/moe.md): the
// family's MLP with moe.shared_intermediate features that every token runs
// through beside its routed experts, tp-split like a dense MLP (Mlp: column
// then row parallel, sequence-parallel gather and scatter inside). With
// moe.shared_expert_gate (Qwen2-MoE) a linear C -> 1 without bias scales it
// per token: out_t += sigmoid(x_t . w_g) * mlp(x)_t; without, out += mlp(x).
// Its parameters are dense (reduced over dp, not expert-dp); the gate is
// replicated over tp, so under sp its gradient is partial (tp_partial_grad).
#pragma once
#include <string>
#include <vector>

#include "model/layers/mlp.h"

namespace parallm {

class MoeSharedExpert {
 public:
  struct Saved {
    Mlp::Saved mlp;
    Tensor y;                 // (rows, C) the MLP's output (gated only)
    std::vector<float> gate;  // (rows) sigmoid(x_t . w_g) (gated only)
  };
  MoeSharedExpert() = default;
  MoeSharedExpert(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg,
                  double proj_std, const TpGroup& tp);
  // out (rows, C) += shared(inp); rows: N, or N/tp under sp.
  Saved forward(const LayerContext& c, float* out, const float* inp) const;
  // dinp (rows, C) += d loss / d inp; the MLP's and the gate's gradients accumulate.
  void backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                const Saved& s) const;

 private:
  int64_t C_ = 0;
  bool gated_ = false;
  Mlp mlp_;
  ParamRef gate_;  // (1, C)
  TpGroup tp_;
};

}  // namespace parallm
