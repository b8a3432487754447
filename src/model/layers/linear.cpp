#include "model/layers/linear.h"

#include "kernels/cpu/matmul.h"

namespace parallm {

Linear::Linear(ParameterSet& ps, const std::string& name, int64_t in, int64_t out, bool bias,
               double init_std)
    : in_(in), out_(out) {
  w_ = ps.add({.name = name + ".weight", .shape = {out, in}, .init_std = init_std});
  if (bias)
    b_ = ps.add({.name = name + ".bias", .shape = {out}, .init = InitKind::Zeros,
                 .weight_decay = false});
}

void Linear::forward(const LayerContext& c, float* out, const float* inp) const {
  const float* b = b_.index >= 0 ? c.params.value(b_) : nullptr;
  cpu::linear_forward(out, inp, c.params.value(w_), b, c.N(), in_, out_);
}

void Linear::backward(const LayerContext& c, float* dinp, const float* dout,
                      const float* inp) const {
  float* db = b_.index >= 0 ? c.params.grad(b_) : nullptr;
  cpu::linear_backward(dinp, c.params.grad(w_), db, dout, inp, c.params.value(w_), c.N(), in_,
                       out_);
}

}  // namespace parallm
