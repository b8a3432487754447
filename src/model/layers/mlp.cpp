#include "model/layers/mlp.h"

#include "kernels/cpu/activation.h"
#include "parallel/tensor/mappings.h"

namespace parallm {

Mlp::Mlp(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg, double proj_std,
         const TpGroup& tp)
    : swiglu_(cfg.uses_swiglu()), inter_(cfg.intermediate / tp.size()), C_(cfg.hidden), tp_(tp) {
  bool bias = cfg.uses_bias();
  const int64_t I = cfg.intermediate;
  if (swiglu_) {
    fc_ = ColumnParallelLinear(ps, prefix + ".gate", cfg.hidden, I, bias, cfg.init_std, tp);
    up_ = ColumnParallelLinear(ps, prefix + ".up", cfg.hidden, I, bias, cfg.init_std, tp);
    proj_ = RowParallelLinear(ps, prefix + ".down", I, cfg.hidden, bias, proj_std, tp);
  } else {
    fc_ = ColumnParallelLinear(ps, prefix + ".fc", cfg.hidden, I, bias, cfg.init_std, tp);
    proj_ = RowParallelLinear(ps, prefix + ".proj", I, cfg.hidden, bias, proj_std, tp);
  }
}

Mlp::Saved Mlp::forward(const LayerContext& c, float* out, const float* inp) const {
  Tensor gathered;  // the full (N, C) input under sequence parallel
  const float* x = inp;
  if (tp_.sp()) {
    gathered = c.workspace({c.N(), C_});
    enter_tp_region(tp_, gathered.data<float>(), inp, c.N(), C_);
    x = gathered.data<float>();
  }
  Saved s;
  const int64_t n = c.N() * inter_;
  s.pre = c.activation({c.N(), inter_});
  s.act = c.activation({c.N(), inter_});
  fc_.forward(c, s.pre.data<float>(), x);
  if (swiglu_) {
    s.up = c.activation({c.N(), inter_});
    up_.forward(c, s.up.data<float>(), x);
    cpu::swiglu_forward(s.act.data<float>(), s.pre.data<float>(), s.up.data<float>(), n);
  } else {
    cpu::gelu_forward(s.act.data<float>(), s.pre.data<float>(), n);
  }
  gathered = Tensor();
  proj_.forward(c, out, s.act.data<float>());
  return s;
}

void Mlp::backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                   const Saved& s) const {
  const int64_t n = c.N() * inter_;
  Tensor dact = c.workspace({c.N(), inter_});
  proj_.backward(c, dact.data<float>(), dout, s.act.data<float>());
  Tensor dpre = c.workspace({c.N(), inter_});
  Tensor dup;
  if (swiglu_) {
    dup = c.workspace({c.N(), inter_});
    cpu::swiglu_backward(dpre.data<float>(), dup.data<float>(), dact.data<float>(),
                         s.pre.data<float>(), s.up.data<float>(), n);
  } else {
    cpu::gelu_backward(dpre.data<float>(), s.pre.data<float>(), dact.data<float>(), n);
  }
  dact = Tensor();
  if (!tp_.active()) {
    if (swiglu_) up_.backward(c, dinp, dup.data<float>(), inp);
    fc_.backward(c, dinp, dpre.data<float>(), inp);
    return;
  }
  Tensor gathered;
  const float* x = inp;
  if (tp_.sp()) {  // re-gather the input instead of having saved it whole
    gathered = c.workspace({c.N(), C_});
    enter_tp_region(tp_, gathered.data<float>(), inp, c.N(), C_);
    x = gathered.data<float>();
  }
  Tensor dx = c.workspace({c.N(), C_});
  if (swiglu_) up_.backward(c, dx.data<float>(), dup.data<float>(), x);
  fc_.backward(c, dx.data<float>(), dpre.data<float>(), x);
  enter_tp_region_backward(tp_, dinp, dx.data<float>(), c.N(), C_);
}

}  // namespace parallm
