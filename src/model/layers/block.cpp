#include "model/layers/block.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/activation.h"
#include "model/layers/dropout.h"

namespace parallm {

Block::Block(ParameterSet& ps, int layer, const ModelConfig& cfg, const TpGroup& tp)
    : C_(cfg.hidden), layer_(layer), hidden_dropout_(cfg.hidden_dropout), tp_(tp) {
  const std::string p = "layers." + std::to_string(layer);
  // GPT-2 scales the residual projections by 1/sqrt(2 * n_layers).
  double proj_std = cfg.init_std / std::sqrt(2.0 * static_cast<double>(cfg.n_layers));
  norm1_ = Norm(ps, p + ".norm1", cfg.hidden, cfg.uses_layernorm(), cfg.norm_eps, tp.sp());
  attn_ = Attention(ps, p + ".attn", cfg, proj_std, tp);
  norm2_ = Norm(ps, p + ".norm2", cfg.hidden, cfg.uses_layernorm(), cfg.norm_eps, tp.sp());
  mlp_ = Mlp(ps, p + ".mlp", cfg, proj_std, tp);
}

namespace {
// The context with this layer's dropout key in place of the micro-batch's.
LayerContext layer_context(const LayerContext& c, int layer) {
  LayerContext cl = c;
  cl.dropout_seed = layer_dropout_key(c.dropout_seed, layer);
  return cl;
}
}  // namespace

Block::Saved Block::forward(const LayerContext& c0, float* out, const float* inp) const {
  const LayerContext c = layer_context(c0, layer_);
  const int64_t rows = tp_local_rows(tp_, c.N()), n = rows * C_;
  const int64_t row0 = tp_.sp() ? tp_.rank() * rows : 0;
  const LayerContext cs = stream_context(c, rows);
  Saved s;
  s.norm1 = norm1_.forward(cs, inp);
  s.mid = c.activation({rows, C_});
  float* mid = s.mid.data<float>();
  s.attn = attn_.forward(c, mid, s.norm1.out.data<float>());
  hidden_dropout(c, DropoutSite::kAttnOut, hidden_dropout_, mid, row0, rows, C_);
  cpu::add_inplace(mid, inp, n);
  s.norm2 = norm2_.forward(cs, mid);
  s.mlp = mlp_.forward(c, out, s.norm2.out.data<float>());
  hidden_dropout(c, DropoutSite::kMlpOut, hidden_dropout_, out, row0, rows, C_);
  cpu::add_inplace(out, mid, n);
  return s;
}

void Block::backward(const LayerContext& c0, float* dinp, const float* dout, const float* inp,
                     const Saved& s) const {
  const LayerContext c = layer_context(c0, layer_);
  const int64_t rows = tp_local_rows(tp_, c.N()), n = rows * C_;
  const int64_t row0 = tp_.sp() ? tp_.rank() * rows : 0;
  const bool drop = hidden_dropout_ > 0.0 && c.dropout_seed != 0;
  const LayerContext cs = stream_context(c, rows);
  // d mid = dout (residual) + norm2 path.
  Tensor dmid = c.workspace({rows, C_});
  std::memcpy(dmid.data<float>(), dout, static_cast<size_t>(n) * sizeof(float));
  {
    Tensor dnorm2 = c.workspace({rows, C_});
    Tensor dmlp;  // the MLP output's gradient through the dropout mask
    if (drop) {
      dmlp = c.workspace({rows, C_});
      std::memcpy(dmlp.data<float>(), dout, static_cast<size_t>(n) * sizeof(float));
      hidden_dropout(c, DropoutSite::kMlpOut, hidden_dropout_, dmlp.data<float>(), row0, rows, C_);
    }
    mlp_.backward(c, dnorm2.data<float>(), drop ? dmlp.data<float>() : dout,
                  s.norm2.out.data<float>(), s.mlp);
    norm2_.backward(cs, dmid.data<float>(), dnorm2.data<float>(), s.mid.data<float>(), s.norm2);
  }
  // d inp += d mid (residual) + norm1 path.
  cpu::add_inplace(dinp, dmid.data<float>(), n);
  hidden_dropout(c, DropoutSite::kAttnOut, hidden_dropout_, dmid.data<float>(), row0, rows, C_);
  Tensor dnorm1 = c.workspace({rows, C_});
  attn_.backward(c, dnorm1.data<float>(), dmid.data<float>(), s.norm1.out.data<float>(), s.attn);
  norm1_.backward(cs, dinp, dnorm1.data<float>(), inp, s.norm1);
}

}  // namespace parallm
