#include "model/layers/block.h"

#include <cmath>

#include "model/layers/dropout.h"
#include "ops/activation.h"
#include "ops/copy.h"

namespace parallm {

Block::Block(ParameterSet& ps, int layer, const ModelConfig& cfg, const TpGroup& tp,
             const EpGroup& ep, const CpGroup& cp, ParameterSet* adapters)
    : C_(cfg.hidden),
      layer_(layer),
      hidden_dropout_(cfg.hidden_dropout),
      is_moe_(cfg.moe.is_moe_layer(layer)),
      tp_(tp) {
  const std::string p = "layers." + std::to_string(layer);
  // GPT-2 scales the residual projections by 1/sqrt(2 * n_layers).
  double proj_std = cfg.init_std / std::sqrt(2.0 * static_cast<double>(cfg.n_layers));
  norm1_ = Norm(ps, p + ".norm1", cfg.hidden, cfg.uses_layernorm(), cfg.norm_eps, tp.sp(),
                cfg.norm_adds_one());
  attn_ = Attention(ps, p + ".attn", cfg, proj_std, tp, cp, adapters);
  norm2_ = Norm(ps, p + ".norm2", cfg.hidden, cfg.uses_layernorm(), cfg.norm_eps, tp.sp(),
                cfg.norm_adds_one());
  if (is_moe_)
    moe_ = Moe(ps, p + ".moe", cfg, proj_std, ep, tp, cp);
  else
    mlp_ = Mlp(ps, p + ".mlp", cfg, proj_std, tp, adapters);
}

namespace {
// The context with this layer's dropout key in place of the micro-batch's.
LayerContext layer_context(const LayerContext& c, int layer) {
  LayerContext cl = c;
  cl.dropout_seed = layer_dropout_key(c.dropout_seed, layer);
  cl.layer = layer;
  return cl;
}

// A context whose forward saves nothing lasting (Workspace tags, no recompute).
LayerContext transient_context(const LayerContext& c) {
  LayerContext t = c;
  t.saved_tag = MemTag::Workspace;
  t.recompute = Recompute::None;
  return t;
}
}  // namespace

Block::Saved Block::forward(const LayerContext& c0, float* out, const float* inp) const {
  const LayerContext c = layer_context(c0, layer_);
  if (!reruns_block_forward(c.recompute)) return run_forward(c, out, inp);
  run_forward(transient_context(c), out, inp);  // backward reruns it
  return {};
}

void Block::backward(const LayerContext& c0, float* dinp, const float* dout, const float* inp,
                     const Saved& s) const {
  const LayerContext c = layer_context(c0, layer_);
  if (!reruns_block_forward(c.recompute)) return run_backward(c, dinp, dout, inp, s);
  // Rerun the forward saving everything (one block's set at a time), into a
  // scratch output: the stream already holds this block's output.
  LayerContext r = c;
  r.recompute = Recompute::None;
  r.tap = nullptr;  // verify recorded the forward when it first ran
  Tensor out = c.workspace({tp_local_rows(tp_, c.N()), C_});
  const Saved full = run_forward(r, out.data<float>(), inp);
  out = Tensor();
  run_backward(r, dinp, dout, inp, full);
}

Block::Saved Block::run_forward(const LayerContext& c, float* out, const float* inp) const {
  const int64_t rows = tp_local_rows(tp_, c.N()), n = rows * C_;
  const int64_t row0 = tp_.sp() ? tp_.rank() * rows : 0;
  const LayerContext cs = stream_context(c, rows);
  // The norms' outputs and statistics may live only until their matmuls
  // have read them (nn/recompute.h).
  const bool sel = drops_norm_outputs(c.recompute);
  const LayerContext cn = sel ? transient_context(cs) : cs;
  Saved s;
  auto tap = [&](const char* op, const float* x) {
    tap_stream(c, op, TapPass::Forward, x, row0, rows, C_, c.N());
  };
  s.norm1 = norm1_.forward(cn, inp);
  tap("norm1", s.norm1.out.data<float>());
  s.mid = c.activation({rows, C_});
  float* mid = s.mid.data<float>();
  s.attn = attn_.forward(c, mid, s.norm1.out.data<float>());
  tap("attn.out", mid);
  if (sel) s.norm1 = {};
  hidden_dropout(c, DropoutSite::AttnOut, hidden_dropout_, mid, row0, rows, C_);
  ops::add_inplace(c.stream(), mid, inp, n);
  s.norm2 = norm2_.forward(cn, mid);
  tap("norm2", s.norm2.out.data<float>());
  if (is_moe_)
    s.moe = moe_.forward(c, out, s.norm2.out.data<float>());
  else
    s.mlp = mlp_.forward(c, out, s.norm2.out.data<float>());
  tap(is_moe_ ? "moe.out" : "mlp.proj", out);
  if (sel) s.norm2 = {};
  hidden_dropout(c, DropoutSite::MlpOut, hidden_dropout_, out, row0, rows, C_);
  ops::add_inplace(c.stream(), out, mid, n);
  tap("output", out);
  return s;
}

void Block::forward_cached(const LayerContext& c, float* out, const float* inp, PagedKvCache& cache,
                           const std::vector<PagedSpan>& spans) const {
  const int64_t n = c.N() * C_;
  Tensor mid = c.workspace({c.N(), C_});
  {
    const Norm::Saved n1 = norm1_.forward(c, inp);
    attn_.forward_cached(c, mid.data<float>(), n1.out.data<float>(), layer_, cache, spans);
  }
  ops::add_inplace(c.stream(), mid.data<float>(), inp, n);
  const Norm::Saved n2 = norm2_.forward(c, mid.data<float>());
  if (is_moe_)  // the cache's context is one row of N tokens
    moe_.forward(c, out, n2.out.data<float>());
  else
    mlp_.forward(c, out, n2.out.data<float>());
  ops::add_inplace(c.stream(), out, mid.data<float>(), n);
}

void Block::run_backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                         const Saved& s) const {
  const int64_t rows = tp_local_rows(tp_, c.N()), n = rows * C_;
  const int64_t row0 = tp_.sp() ? tp_.rank() * rows : 0;
  const bool drop = hidden_dropout_ > 0.0 && c.dropout_seed != 0;
  const LayerContext cs = stream_context(c, rows);
  auto tap = [&](const char* op, const float* x) {
    tap_stream(c, op, TapPass::Backward, x, row0, rows, C_, c.N());
  };
  tap("grad.output", dout);
  // d mid = dout (residual) + norm2 path.
  Tensor dmid = c.workspace({rows, C_});
  ops::copy(c.stream(), dmid.data<float>(), dout, static_cast<size_t>(n) * sizeof(float));
  {
    Tensor dnorm2 = c.workspace({rows, C_});
    Tensor dmlp;  // the MLP output's gradient through the dropout mask
    if (drop) {
      dmlp = c.workspace({rows, C_});
      ops::copy(c.stream(), dmlp.data<float>(), dout, static_cast<size_t>(n) * sizeof(float));
      hidden_dropout(c, DropoutSite::MlpOut, hidden_dropout_, dmlp.data<float>(), row0, rows, C_);
    }
    // Selective: the same kernel on the same input gives the same bits.
    const Norm::Saved norm2 = s.norm2.out.defined()
                                  ? s.norm2
                                  : norm2_.forward(transient_context(cs), s.mid.data<float>());
    if (is_moe_)
      moe_.backward(c, dnorm2.data<float>(), drop ? dmlp.data<float>() : dout,
                    norm2.out.data<float>(), s.moe);
    else
      mlp_.backward(c, dnorm2.data<float>(), drop ? dmlp.data<float>() : dout,
                    norm2.out.data<float>(), s.mlp);
    tap(is_moe_ ? "grad.moe.in" : "grad.mlp.in", dnorm2.data<float>());
    norm2_.backward(cs, dmid.data<float>(), dnorm2.data<float>(), s.mid.data<float>(), norm2);
    tap("grad.mid", dmid.data<float>());
  }
  // d inp += d mid (residual) + norm1 path.
  ops::add_inplace(c.stream(), dinp, dmid.data<float>(), n);
  hidden_dropout(c, DropoutSite::AttnOut, hidden_dropout_, dmid.data<float>(), row0, rows, C_);
  Tensor dnorm1 = c.workspace({rows, C_});
  const Norm::Saved norm1 =
      s.norm1.out.defined() ? s.norm1 : norm1_.forward(transient_context(cs), inp);
  attn_.backward(c, dnorm1.data<float>(), dmid.data<float>(), norm1.out.data<float>(), s.attn);
  tap("grad.attn.in", dnorm1.data<float>());
  norm1_.backward(cs, dinp, dnorm1.data<float>(), inp, norm1);
  tap("grad.input", dinp);
}

}  // namespace parallm
