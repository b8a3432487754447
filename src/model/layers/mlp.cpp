#include "model/layers/mlp.h"

#include "kernels/cpu/activation.h"

namespace parallm {

Mlp::Mlp(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg, double proj_std)
    : swiglu_(cfg.uses_swiglu()), inter_(cfg.intermediate) {
  bool bias = cfg.uses_bias();
  if (swiglu_) {
    fc_ = Linear(ps, prefix + ".gate", cfg.hidden, inter_, bias, cfg.init_std);
    up_ = Linear(ps, prefix + ".up", cfg.hidden, inter_, bias, cfg.init_std);
    proj_ = Linear(ps, prefix + ".down", inter_, cfg.hidden, bias, proj_std);
  } else {
    fc_ = Linear(ps, prefix + ".fc", cfg.hidden, inter_, bias, cfg.init_std);
    proj_ = Linear(ps, prefix + ".proj", inter_, cfg.hidden, bias, proj_std);
  }
}

Mlp::Saved Mlp::forward(const LayerContext& c, float* out, const float* inp) const {
  Saved s;
  const int64_t n = c.N() * inter_;
  s.pre = c.activation({c.N(), inter_});
  s.act = c.activation({c.N(), inter_});
  fc_.forward(c, s.pre.data<float>(), inp);
  if (swiglu_) {
    s.up = c.activation({c.N(), inter_});
    up_.forward(c, s.up.data<float>(), inp);
    cpu::swiglu_forward(s.act.data<float>(), s.pre.data<float>(), s.up.data<float>(), n);
  } else {
    cpu::gelu_forward(s.act.data<float>(), s.pre.data<float>(), n);
  }
  proj_.forward(c, out, s.act.data<float>());
  return s;
}

void Mlp::backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                   const Saved& s) const {
  const int64_t n = c.N() * inter_;
  Tensor dact = c.workspace({c.N(), inter_});
  proj_.backward(c, dact.data<float>(), dout, s.act.data<float>());
  Tensor dpre = c.workspace({c.N(), inter_});
  if (swiglu_) {
    Tensor dup = c.workspace({c.N(), inter_});
    cpu::swiglu_backward(dpre.data<float>(), dup.data<float>(), dact.data<float>(),
                         s.pre.data<float>(), s.up.data<float>(), n);
    up_.backward(c, dinp, dup.data<float>(), inp);
  } else {
    cpu::gelu_backward(dpre.data<float>(), s.pre.data<float>(), dact.data<float>(), n);
  }
  fc_.backward(c, dinp, dpre.data<float>(), inp);
}

}  // namespace parallm
