// Stacked experts as grouped linears (see moe_experts.h). Under bf16/fp16
// every GEMM operand is rounded to 16 bits as the dense MLP's are
// (nn/matmul_precision.h): each stacked weight through its once-per-step
// copy, each activation or gradient once per use here (an input shared by
// two linears, SwiGLU's gate and up, once for both).
#include "model/moe/moe_experts.h"

#include <algorithm>

#include "base/error.h"
#include "nn/matmul_precision.h"
#include "nn/op_buffers.h"
#include "ops/activation.h"
#include "ops/copy.h"
#include "ops/grouped_gemm.h"

namespace parallm {
namespace {

// Saved rows: at least one, so an expert-less or token-less rank still
// holds valid (unused) tensors.
Shape rows_shape(int64_t M, int64_t width) { return {std::max<int64_t>(M, 1), width}; }

// n f32 values rounded to the context's 16-bit type, in a workspace.
Tensor rounded(const LayerContext& c, const float* x, int64_t n) {
  const ops::LowpType t = c.matmul->type();
  Tensor r = Tensor::zeros(c.alloc, {std::max<int64_t>(n, 1)},
                           t == ops::LowpType::BF16 ? DType::BF16 : DType::F16, MemTag::Workspace);
  ops::round_to_lowp(c.stream(), r.half_bits(), x, n, t);
  return r;
}

}  // namespace

MoeExperts::MoeExperts(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg,
                       double proj_std, const EpGroup& ep, const TpGroup& tp)
    : swiglu_(cfg.uses_swiglu()),
      local_(ep.local_experts(cfg.moe.num_experts)),
      first_(ep.rank() * local_),
      C_(cfg.hidden),
      I_(cfg.moe.expert_intermediate(cfg.intermediate)) {
  const int64_t E = cfg.moe.num_experts, I = I_;
  const int dim = ep.active() ? 0 : -1;
  const bool etp = ep.split_over_tp && tp.active();
  if (etp) {
    PX_CHECK(I % tp.size() == 0, "expert tp: the experts' width ({}) is not divisible by tp ({})",
             I, tp.size());
    I_ = I / tp.size();
    add_b2_ = tp.rank() == 0;
  }
  // split: the dimension (of the global shape without the expert index)
  // split over tp under expert tp, -1 none.
  auto add = [&](const std::string& name, std::vector<int64_t> global, InitKind init, double std,
                 int split) {
    std::vector<int64_t> shape = global;
    if (etp && split >= 0) shape[static_cast<size_t>(split)] = I_;
    shape.insert(shape.begin(), local_);
    global.insert(global.begin(), E);
    const bool bias = shape.size() == 2;
    return ps.add({.name = prefix + ".experts." + name,
                   .shape = shape,
                   .global_shape = global,
                   .shard_dim = dim,
                   .shard_begin = first_,
                   .init = init,
                   .init_std = std,
                   .weight_decay = !bias,
                   // Under expert tp every tp rank sees every row: whole gradients.
                   .tp_partial_grad = tp.sp() && !etp,
                   .expert = true,
                   .tp_dim = etp && split >= 0 ? split + 1 : -1,
                   .tp_begin = etp && split >= 0 ? tp.rank() * I_ : 0});
  };
  const bool bias = cfg.uses_bias();
  if (swiglu_) {
    w1_ = add("gate.weight", {I, C_}, InitKind::Normal, cfg.init_std, 0);
    w3_ = add("up.weight", {I, C_}, InitKind::Normal, cfg.init_std, 0);
    w2_ = add("down.weight", {C_, I}, InitKind::Normal, proj_std, 1);
  } else {
    w1_ = add("fc.weight", {I, C_}, InitKind::Normal, cfg.init_std, 0);
    if (bias) b1_ = add("fc.bias", {I}, InitKind::Zeros, 0.0, 0);
    w2_ = add("proj.weight", {C_, I}, InitKind::Normal, proj_std, 1);
    if (bias) b2_ = add("proj.bias", {C_}, InitKind::Zeros, 0.0, -1);
  }
}

MoeExperts::Saved MoeExperts::forward(const LayerContext& c, float* out, const float* x,
                                      const std::vector<int64_t>& offsets) const {
  const int64_t M = offsets[local_], n = M * I_;
  const OnDevice<int64_t> offsets_dev(c.stream(), c.alloc, offsets);
  const int64_t* off = offsets_dev.get();
  const ParameterSet& ps = c.params;
  auto bias = [&](ParamRef r) { return r.index >= 0 ? ps.value(r) : nullptr; };
  Saved s;
  s.x = c.activation(rows_shape(M, C_));
  ops::copy(c.stream(), s.x.data<float>(), x, static_cast<size_t>(M * C_) * sizeof(float));
  s.pre = c.activation(rows_shape(M, I_));
  s.act = c.activation(rows_shape(M, I_));
  if (swiglu_) s.up = c.activation(rows_shape(M, I_));
  if (c.matmul != nullptr) {
    forward_lowp(c, out, x, offsets, s);
    return s;
  }
  ops::grouped_linear_forward(c.stream(), s.pre.data<float>(), x, ps.value(w1_), bias(b1_), off,
                              local_, C_, I_);
  if (swiglu_) {
    ops::grouped_linear_forward(c.stream(), s.up.data<float>(), x, ps.value(w3_), nullptr, off,
                                local_, C_, I_);
    ops::swiglu_forward(c.stream(), s.act.data<float>(), s.pre.data<float>(), s.up.data<float>(),
                        n);
  } else {
    ops::gelu_forward(c.stream(), s.act.data<float>(), s.pre.data<float>(), n);
  }
  ops::grouped_linear_forward(c.stream(), out, s.act.data<float>(), ps.value(w2_),
                              add_b2_ ? bias(b2_) : nullptr, off, local_, I_, C_);
  return s;
}

void MoeExperts::forward_lowp(const LayerContext& c, float* out, const float* x,
                              const std::vector<int64_t>& offsets, Saved& s) const {
  const int64_t M = offsets[local_], n = M * I_;
  const OnDevice<int64_t> offsets_dev(c.stream(), c.alloc, offsets);
  const int64_t* off = offsets_dev.get();
  const ParameterSet& ps = c.params;
  const ops::LowpGemm& g = c.matmul->gemm();
  auto bias = [&](ParamRef r) { return r.index >= 0 ? ps.value(r) : nullptr; };
  auto weight = [&](ParamRef r) { return c.matmul->weight(ps, r); };
  {
    const Tensor x16 = rounded(c, x, M * C_);
    ops::grouped_linear_forward_lowp(c.stream(), g, c.alloc, s.pre.data<float>(), x16.half_bits(),
                                     weight(w1_), bias(b1_), off, local_, C_, I_);
    if (swiglu_)
      ops::grouped_linear_forward_lowp(c.stream(), g, c.alloc, s.up.data<float>(), x16.half_bits(),
                                       weight(w3_), nullptr, off, local_, C_, I_);
  }
  if (swiglu_)
    ops::swiglu_forward(c.stream(), s.act.data<float>(), s.pre.data<float>(), s.up.data<float>(),
                        n);
  else
    ops::gelu_forward(c.stream(), s.act.data<float>(), s.pre.data<float>(), n);
  const Tensor act16 = rounded(c, s.act.data<float>(), n);
  ops::grouped_linear_forward_lowp(c.stream(), g, c.alloc, out, act16.half_bits(), weight(w2_),
                                   add_b2_ ? bias(b2_) : nullptr, off, local_, I_, C_);
}

void MoeExperts::backward(const LayerContext& c, float* dx, const float* dout, const Saved& s,
                          const std::vector<int64_t>& offsets) const {
  const int64_t M = offsets[local_], n = M * I_;
  const OnDevice<int64_t> offsets_dev(c.stream(), c.alloc, offsets);
  const int64_t* off = offsets_dev.get();
  const ParameterSet& ps = c.params;
  auto grad = [&](ParamRef r) { return r.index >= 0 ? ps.grad(r) : nullptr; };
  if (c.matmul != nullptr) return backward_lowp(c, dx, dout, s, offsets);
  Tensor dact = c.workspace(rows_shape(M, I_));
  ops::grouped_linear_backward(c.stream(), dact.data<float>(), ps.grad(w2_), grad(b2_), dout,
                               s.act.data<float>(), ps.value(w2_), off, local_, I_, C_);
  Tensor dpre = c.workspace(rows_shape(M, I_));
  if (swiglu_) {
    Tensor dup = c.workspace(rows_shape(M, I_));
    ops::swiglu_backward(c.stream(), dpre.data<float>(), dup.data<float>(), dact.data<float>(),
                         s.pre.data<float>(), s.up.data<float>(), n);
    ops::grouped_linear_backward(c.stream(), dx, ps.grad(w3_), nullptr, dup.data<float>(),
                                 s.x.data<float>(), ps.value(w3_), off, local_, C_, I_);
  } else {
    ops::gelu_backward(c.stream(), dpre.data<float>(), s.pre.data<float>(), dact.data<float>(), n);
  }
  ops::grouped_linear_backward(c.stream(), dx, ps.grad(w1_), grad(b1_), dpre.data<float>(),
                               s.x.data<float>(), ps.value(w1_), off, local_, C_, I_);
}

void MoeExperts::backward_lowp(const LayerContext& c, float* dx, const float* dout, const Saved& s,
                               const std::vector<int64_t>& offsets) const {
  const int64_t M = offsets[local_], n = M * I_;
  const OnDevice<int64_t> offsets_dev(c.stream(), c.alloc, offsets);
  const int64_t* off = offsets_dev.get();
  const ParameterSet& ps = c.params;
  const ops::LowpGemm& g = c.matmul->gemm();
  auto grad = [&](ParamRef r) { return r.index >= 0 ? ps.grad(r) : nullptr; };
  auto weight = [&](ParamRef r) { return c.matmul->weight(ps, r); };
  Tensor dact = c.workspace(rows_shape(M, I_));
  {
    // Under fp16 a gradient beyond 65504 becomes Inf here, as in the dense
    // layers, and the loss scaler sees it.
    const Tensor dout16 = rounded(c, dout, M * C_);
    const Tensor act16 = rounded(c, s.act.data<float>(), n);
    ops::grouped_linear_backward_lowp(c.stream(), g, c.alloc, dact.data<float>(), ps.grad(w2_),
                                      grad(b2_), dout16.half_bits(), dout, act16.half_bits(),
                                      weight(w2_), off, local_, I_, C_);
  }
  Tensor dpre = c.workspace(rows_shape(M, I_));
  const Tensor x16 = rounded(c, s.x.data<float>(), M * C_);
  if (swiglu_) {
    Tensor dup = c.workspace(rows_shape(M, I_));
    ops::swiglu_backward(c.stream(), dpre.data<float>(), dup.data<float>(), dact.data<float>(),
                         s.pre.data<float>(), s.up.data<float>(), n);
    const Tensor dup16 = rounded(c, dup.data<float>(), n);
    ops::grouped_linear_backward_lowp(c.stream(), g, c.alloc, dx, ps.grad(w3_), nullptr,
                                      dup16.half_bits(), dup.data<float>(), x16.half_bits(),
                                      weight(w3_), off, local_, C_, I_);
  } else {
    ops::gelu_backward(c.stream(), dpre.data<float>(), s.pre.data<float>(), dact.data<float>(), n);
  }
  const Tensor dpre16 = rounded(c, dpre.data<float>(), n);
  ops::grouped_linear_backward_lowp(c.stream(), g, c.alloc, dx, ps.grad(w1_), grad(b1_),
                                    dpre16.half_bits(), dpre.data<float>(), x16.half_bits(),
                                    weight(w1_), off, local_, C_, I_);
}

}  // namespace parallm
