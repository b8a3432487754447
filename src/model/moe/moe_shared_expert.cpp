// The shared expert's forward and backward (see moe_shared_expert.h).
#include "model/moe/moe_shared_expert.h"

#include <cmath>

#include "nn/op_buffers.h"
#include "ops/activation.h"

namespace parallm {
namespace {

ModelConfig shared_mlp_config(const ModelConfig& cfg) {
  ModelConfig m = cfg;
  m.intermediate = cfg.moe.shared_intermediate;
  return m;
}

double dot(const float* a, const float* b, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

}  // namespace

MoeSharedExpert::MoeSharedExpert(ParameterSet& ps, const std::string& prefix,
                                 const ModelConfig& cfg, double proj_std, const TpGroup& tp)
    : C_(cfg.hidden), gated_(cfg.moe.shared_expert_gate), tp_(tp) {
  mlp_ = Mlp(ps, prefix + ".shared_expert", shared_mlp_config(cfg), proj_std, tp);
  if (gated_)  // a gating weight like the router's: no weight decay
    gate_ = ps.add({.name = prefix + ".shared_expert_gate.weight",
                    .shape = {1, C_},
                    .global_shape = {1, C_},
                    .init_std = cfg.init_std,
                    .weight_decay = false,
                    .tp_partial_grad = tp.sp()});
}

MoeSharedExpert::Saved MoeSharedExpert::forward(const LayerContext& c, float* out,
                                                const float* inp) const {
  const int64_t rows = tp_local_rows(tp_, c.N());
  Saved s;
  Tensor y = gated_ ? c.activation({rows, C_}) : c.workspace({rows, C_});
  s.mlp = mlp_.forward(c, y.data<float>(), inp);
  if (!gated_) {
    ops::add_inplace(c.stream(), out, y.data<float>(), rows * C_);
    return s;
  }
  // The gate is host code (a dot product per row): it reads host copies.
  const HostView<const float> x(c.stream(), inp, rows * C_);
  const HostView<const float> w(c.stream(), c.params.value(gate_), C_);
  s.gate.resize(static_cast<size_t>(rows));
  for (int64_t t = 0; t < rows; ++t) {
    const double z = dot(x.get() + t * C_, w.get(), C_);
    s.gate[t] = static_cast<float>(1.0 / (1.0 + std::exp(-z)));
    ops::axpy(c.stream(), out + t * C_, s.gate[t], y.data<float>() + t * C_, C_);
  }
  s.y = y;
  return s;
}

void MoeSharedExpert::backward(const LayerContext& c, float* dinp, const float* dout,
                               const float* inp, const Saved& s) const {
  if (!gated_) {
    mlp_.backward(c, dinp, dout, inp, s.mlp);
    return;
  }
  const int64_t rows = tp_local_rows(tp_, c.N());
  const float* w = c.params.value(gate_);
  float* dw = c.params.grad(gate_);
  Tensor dy = c.workspace({rows, C_});
  const HostView<const float> d(c.stream(), dout, rows * C_);
  const HostView<const float> y(c.stream(), s.y.data<float>(), rows * C_);
  for (int64_t t = 0; t < rows; ++t) {
    const float g = s.gate[t];
    ops::axpy(c.stream(), dy.data<float>() + t * C_, g, dout + t * C_, C_);
    // d loss / d z_t, z_t = x_t . w_g
    const auto dz = static_cast<float>(dot(d.get() + t * C_, y.get() + t * C_, C_) * g * (1.0 - g));
    ops::axpy(c.stream(), dw, dz, inp + t * C_, C_);
    ops::axpy(c.stream(), dinp + t * C_, dz, w, C_);
  }
  mlp_.backward(c, dinp, dy.data<float>(), inp, s.mlp);
}

}  // namespace parallm
