#include "parallel/tensor/parallel_linear.h"

#include "base/error.h"
#include "nn/matmul_precision.h"
#include "nn/weight_grad_queue.h"
#include "ops/activation.h"
#include "ops/matmul.h"
#include "parallel/tensor/mappings.h"

namespace parallm {

ColumnParallelLinear::ColumnParallelLinear(ParameterSet& ps, const std::string& name, int64_t in,
                                           int64_t out_features, bool bias, double init_std,
                                           const TpGroup& tp, int replicas)
    : in_(in), site_(lora_site(name)) {
  PX_CHECK(replicas >= 1 && tp.size() % replicas == 0, "{}: {} replicas do not divide tp ({})",
           name, replicas, tp.size());
  const int shards = tp.size() / replicas;
  PX_CHECK(out_features % shards == 0, "{}: output features ({}) are not divisible by {} shards",
           name, out_features, shards);
  out_ = out_features / shards;
  out_global_ = out_features;
  replicas_ = replicas;
  const int64_t begin = (tp.rank() / replicas) * out_;
  begin_ = begin;
  const int dim = tp.active() ? 0 : -1;
  w_ = ps.add({.name = name + ".weight",
               .shape = {out_, in},
               .global_shape = {out_features, in},
               .shard_dim = dim,
               .shard_begin = begin,
               .init_std = init_std,
               .tp_replicas = replicas});
  if (bias)
    b_ = ps.add({.name = name + ".bias",
                 .shape = {out_},
                 .global_shape = {out_features},
                 .shard_dim = dim,
                 .shard_begin = begin,
                 .init = InitKind::Zeros,
                 .weight_decay = false,
                 .tp_replicas = replicas});
}

void ColumnParallelLinear::add_lora(ParameterSet& adapters, const std::string& name,
                                    const LoraConfig& cfg, const TpGroup& tp) {
  lora_ = LoraAdapter::column(adapters, name, in_, out_global_, out_, begin_, replicas_, cfg, tp);
}

void ColumnParallelLinear::forward(const LayerContext& c, float* out, const float* inp) const {
  const float* b = b_.index >= 0 ? c.params.value(b_) : nullptr;
  linear_forward(c, out, inp, w_, b, c.N(), in_, out_);
  lora_.forward_add(c, out, inp);
  add_row_loras(c, site_, out, inp, in_, out_);
}

LinearPart ColumnParallelLinear::part(const LayerContext& c, float* out) const {
  return {w_, b_.index >= 0 ? c.params.value(b_) : nullptr, out_, out};
}

void ColumnParallelLinear::backward(const LayerContext& c, float* dinp, const float* dout,
                                    const float* inp) const {
  lora_.backward(c, dinp, dout, inp);
  float* db = b_.index >= 0 ? c.params.grad(b_) : nullptr;
  float* dw = c.params.grad(w_);  // null for a frozen base (LoRA)
  // Zero-bubble B: dW runs later, at W; not for a shard several tp ranks
  // hold, whose gradient is summed over them when the unit's backward ends.
  if (c.weight_grads != nullptr && dw != nullptr && c.params.spec(w_.index).tp_replicas == 1) {
    linear_backward(c, dinp, nullptr, db, dout, inp, w_, c.N(), in_, out_);
    return c.weight_grads->defer_linear(c, w_, dout, inp, in_, out_);
  }
  linear_backward(c, dinp, dw, db, dout, inp, w_, c.N(), in_, out_);
}

RowParallelLinear::RowParallelLinear(ParameterSet& ps, const std::string& name, int64_t in_features,
                                     int64_t out, bool bias, double init_std, const TpGroup& tp)
    : in_(in_features / tp.size()), out_(out), tp_(tp), site_(lora_site(name)) {
  PX_CHECK(in_features % tp.size() == 0, "{}: input features ({}) are not divisible by tp ({})",
           name, in_features, tp.size());
  w_ = ps.add({.name = name + ".weight",
               .shape = {out, in_},
               .global_shape = {out, in_features},
               .shard_dim = tp.active() ? 1 : -1,
               .shard_begin = tp.rank() * in_,
               .init_std = init_std});
  if (bias)
    b_ = ps.add({.name = name + ".bias",
                 .shape = {out},
                 .init = InitKind::Zeros,
                 .weight_decay = false,
                 .tp_partial_grad = tp.sp()});
}

void RowParallelLinear::add_lora(ParameterSet& adapters, const std::string& name,
                                 const LoraConfig& cfg) {
  lora_ = LoraAdapter::row(adapters, name, in_ * tp_.size(), in_, tp_.rank() * in_, out_, cfg, tp_);
}

void RowParallelLinear::forward(const LayerContext& c, float* stream, const float* inp) const {
  const float* b = b_.index >= 0 ? c.params.value(b_) : nullptr;
  if (!tp_.active()) {
    linear_forward(c, stream, inp, w_, b, c.N(), in_, out_);
    lora_.forward_add(c, stream, inp);
    return add_row_loras(c, site_, stream, inp, in_, out_);
  }
  Tensor partial = c.workspace({c.N(), out_});
  linear_forward(c, partial.data<float>(), inp, w_, nullptr, c.N(), in_, out_);
  lora_.forward_add(c, partial.data<float>(), inp);  // inside the one tp sum
  add_row_loras(c, site_, partial.data<float>(), inp, in_, out_);
  leave_tp_region(tp_, stream, partial.data<float>(), c.N(), out_);
  if (b == nullptr) return;
  const int64_t rows = tp_local_rows(tp_, c.N());
  ops::add_bias_rows(c.stream(), stream, b, rows, out_);
}

void RowParallelLinear::backward(const LayerContext& c, float* dinp, const float* dstream,
                                 const float* inp) const {
  float* db = b_.index >= 0 ? c.params.grad(b_) : nullptr;
  float* dw = c.params.grad(w_);  // null for a frozen base (LoRA)
  const bool defer = c.weight_grads != nullptr && dw != nullptr;
  if (!tp_.active()) lora_.backward(c, dinp, dstream, inp);
  if (!tp_.active() && defer) {  // zero-bubble B: dW runs later, at W
    ops::linear_backward(c.stream(), dinp, static_cast<float*>(nullptr), db, dstream, inp,
                         c.params.value(w_), c.N(), in_, out_);
    return c.weight_grads->defer_linear(c, w_, dstream, inp, in_, out_);
  }
  if (!tp_.active()) return linear_backward(c, dinp, dw, db, dstream, inp, w_, c.N(), in_, out_);
  if (db != nullptr) {  // the bias saw only this rank's rows (all rows unless sp)
    const int64_t rows = tp_local_rows(tp_, c.N());
    for (int64_t r = 0; r < rows; ++r) ops::add_inplace(c.stream(), db, dstream + r * out_, out_);
  }
  const float* dout = dstream;
  Tensor dfull;
  if (tp_.sp()) {
    dfull = c.workspace({c.N(), out_});
    leave_tp_region_backward(tp_, dfull.data<float>(), dstream, c.N(), out_);
    dout = dfull.data<float>();
  }
  lora_.backward(c, dinp, dout, inp);  // dB is this rank's partial sum (tp_grad_sum)
  if (defer) {                         // zero-bubble B: dW runs later, at W
    linear_backward(c, dinp, nullptr, nullptr, dout, inp, w_, c.N(), in_, out_);
    return c.weight_grads->defer_linear(c, w_, dout, inp, in_, out_);
  }
  linear_backward(c, dinp, dw, nullptr, dout, inp, w_, c.N(), in_, out_);
}

}  // namespace parallm
