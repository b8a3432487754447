#include "model/layers/norm.h"

#include "base/error.h"
#include "ops/norm.h"

namespace parallm {

Norm::Norm(ParameterSet& ps, const std::string& name, int64_t C, bool layernorm, double eps,
           bool tp_partial_grad, bool adds_one)
    : C_(C), layernorm_(layernorm), adds_one_(adds_one), eps_(eps) {
  PX_CHECK(!(layernorm && adds_one), "{}: a (1 + weight) gain is an RMSNorm trait (Gemma)", name);
  w_ = ps.add({.name = name + ".weight",
               .shape = {C},
               .init = adds_one ? InitKind::Zeros : InitKind::Ones,  // a gain of 1 either way
               .weight_decay = false,
               .tp_partial_grad = tp_partial_grad});
  if (layernorm)
    b_ = ps.add({.name = name + ".bias",
                 .shape = {C},
                 .init = InitKind::Zeros,
                 .weight_decay = false,
                 .tp_partial_grad = tp_partial_grad});
}

Norm::Saved Norm::forward(const LayerContext& c, const float* inp) const {
  Saved s;
  s.out = c.activation({c.N(), C_});
  s.rstd = c.activation({c.N()});
  if (layernorm_) {
    s.mean = c.activation({c.N()});
    ops::layernorm_forward(c.stream(), s.out.data<float>(), s.mean.data<float>(),
                           s.rstd.data<float>(), inp, c.params.value(w_), c.params.value(b_), c.N(),
                           C_, eps_);
  } else {
    ops::rmsnorm_forward(c.stream(), s.out.data<float>(), s.rstd.data<float>(), inp,
                         c.params.value(w_), c.N(), C_, eps_, adds_one_);
  }
  return s;
}

void Norm::backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                    const Saved& s) const {
  if (layernorm_) {
    ops::layernorm_backward(c.stream(), dinp, c.params.grad(w_), c.params.grad(b_), dout, inp,
                            c.params.value(w_), s.mean.data<float>(), s.rstd.data<float>(), c.N(),
                            C_);
  } else {
    ops::rmsnorm_backward(c.stream(), dinp, c.params.grad(w_), dout, inp, c.params.value(w_),
                          s.rstd.data<float>(), c.N(), C_, adds_one_);
  }
}

}  // namespace parallm
