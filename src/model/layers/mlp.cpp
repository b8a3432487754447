#include "model/layers/mlp.h"
#include "model/layers/tp_region_input.h"

#include "nn/op_tap.h"
#include "ops/activation.h"
#include "ops/optimizer.h"
#include "parallel/tensor/mappings.h"

namespace parallm {

Mlp::Mlp(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg, double proj_std,
         const TpGroup& tp, ParameterSet* adapters)
    : swiglu_(cfg.uses_swiglu()),
      geglu_(cfg.gated_gelu()),
      inter_(cfg.intermediate / tp.size()),
      C_(cfg.hidden),
      tp_(tp) {
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
  if (adapters == nullptr) return;
  const LoraConfig& lora = cfg.lora;
  const char* in_kind = swiglu_ ? "gate" : "fc";
  const char* out_kind = swiglu_ ? "down" : "proj";
  if (lora.targets_kind(in_kind)) fc_.add_lora(*adapters, prefix + "." + in_kind, lora, tp);
  if (swiglu_ && lora.targets_kind("up")) up_.add_lora(*adapters, prefix + ".up", lora, tp);
  if (lora.targets_kind(out_kind)) proj_.add_lora(*adapters, prefix + "." + out_kind, lora);
}

void Mlp::gated_forward(const ops::Stream& st, float* act, const float* pre, const float* up,
                        int64_t n) const {
  if (geglu_)
    ops::geglu_forward(st, act, pre, up, n);
  else
    ops::swiglu_forward(st, act, pre, up, n);
}

Mlp::Saved Mlp::forward(const LayerContext& c, float* out, const float* inp) const {
  RegionInput in(c, tp_, inp, C_);
  const float* x = in.get();
  Saved s;
  const int64_t n = c.N() * inter_;
  s.pre = c.activation({c.N(), inter_});
  // The activation may be rebuilt from pre (and up) in backward (nn/recompute.h).
  const bool sel = rebuilds_mlp_activation(c.recompute);
  s.act = sel ? c.workspace({c.N(), inter_}) : c.activation({c.N(), inter_});
  if (swiglu_) {
    s.up = c.activation({c.N(), inter_});
    // gate and up in one pass over their weights (one parallel region at decode)
    const LinearPart parts[] = {fc_.part(c, s.pre.data<float>()), up_.part(c, s.up.data<float>())};
    linear_forward_parts(c, x, c.N(), C_, parts);
    fc_.adapt(c, s.pre.data<float>(), x);  // LoRA terms (nothing without adapters)
    up_.adapt(c, s.up.data<float>(), x);
    gated_forward(c.stream(), s.act.data<float>(), s.pre.data<float>(), s.up.data<float>(), n);
  } else {
    fc_.forward(c, s.pre.data<float>(), x);
    ops::gelu_forward(c.stream(), s.act.data<float>(), s.pre.data<float>(), n);
  }
  if (c.tap != nullptr)  // this rank's columns of the intermediate features
    c.tap->record(
        c.stream(), swiglu_ ? "mlp.gate" : "mlp.fc", c.layer, TapPass::Forward, c.sample_offset,
        {0, c.N(), c.N(), tp_.rank() * inter_, inter_, inter_ * tp_.size()}, s.pre.data<float>());
  in.release();
  proj_.forward(c, out, s.act.data<float>());
  // A bug verify's tests may plant on this row-parallel reduce's result.
  if (c.faults != nullptr && c.faults->after_tp_reduce && tp_.active())
    c.faults->after_tp_reduce(c.stream(), c.layer, out, tp_local_rows(tp_, c.N()) * C_);
  if (sel) s.act = Tensor();
  return s;
}

void Mlp::backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                   const Saved& s) const {
  const int64_t n = c.N() * inter_;
  Tensor dact = c.workspace({c.N(), inter_});
  Tensor act = s.act;
  if (!act.defined()) {  // selective: the forward's kernel again, the same bits
    act = c.workspace({c.N(), inter_});
    if (swiglu_)
      gated_forward(c.stream(), act.data<float>(), s.pre.data<float>(), s.up.data<float>(), n);
    else
      ops::gelu_forward(c.stream(), act.data<float>(), s.pre.data<float>(), n);
  }
  proj_.backward(c, dact.data<float>(), dout, act.data<float>());
  act = Tensor();
  Tensor dpre = c.workspace({c.N(), inter_});
  Tensor dup;
  if (swiglu_) {
    dup = c.workspace({c.N(), inter_});
    auto* backward = geglu_ ? ops::geglu_backward : ops::swiglu_backward;
    backward(c.stream(), dpre.data<float>(), dup.data<float>(), dact.data<float>(),
             s.pre.data<float>(), s.up.data<float>(), n);
  } else {
    ops::gelu_backward(c.stream(), dpre.data<float>(), s.pre.data<float>(), dact.data<float>(), n);
  }
  dact = Tensor();
  const RegionInput in(c, tp_, inp, C_);
  RegionInputGrad dx(c, tp_, dinp, C_);
  if (swiglu_) up_.backward(c, dx.get(), dup.data<float>(), in.get());
  fc_.backward(c, dx.get(), dpre.data<float>(), in.get());
  dx.finish();
}

}  // namespace parallm
