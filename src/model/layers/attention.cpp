#include "model/layers/attention.h"
#include "model/layers/tp_region_input.h"

#include <algorithm>
#include <cmath>

#include "base/rng.h"
#include "model/layers/dropout.h"
#include "nn/op_buffers.h"
#include "ops/rope.h"
#include "parallel/tensor/mappings.h"

namespace parallm {
namespace {

// Rotary embedding of x (B, T, H, D) at this context's positions: one row
// at a time when each row has its own (packed documents restart them).
void rope_rows(const LayerContext& c, float* x, int64_t H, int64_t D,
               const std::vector<double>& inv_freq, bool backward) {
  using Rotate = void (*)(const ops::Stream&, float*, const int64_t*, int64_t, int64_t, int64_t,
                          int64_t, const double*);
  const Rotate apply = backward ? Rotate(ops::rope_backward) : Rotate(ops::rope_forward);
  const OnDevice<double> freq(c.stream(), c.alloc, inv_freq);
  if (c.position_ids == nullptr) {
    const OnDevice<int64_t> pos(c.stream(), c.alloc, c.positions, c.T);
    apply(c.stream(), x, pos.get(), c.B, c.T, H, D, freq.get());
    return;
  }
  const OnDevice<int64_t> ids(c.stream(), c.alloc, c.position_ids, c.B * c.T);
  for (int64_t b = 0; b < c.B; ++b)
    apply(c.stream(), x + b * c.T * H * D, ids.get() + b * c.T, 1, c.T, H, D, freq.get());
}

// Attention dims with the document starts where the ops read them.
struct OpDims {
  OpDims(const LayerContext& c, const ops::AttnDims& dims)
      : docs(c.stream(), c.alloc, c.doc_start, c.B * c.doc_len), d(dims) {
    d.doc_start = docs.get();
  }
  OnDevice<int64_t> docs;
  ops::AttnDims d;
};

}  // namespace

void check_tp_divides(const ModelConfig& cfg, int tp) {
  PX_CHECK(tp >= 1, "tensor parallel size must be positive, got {}", tp);
  PX_CHECK(cfg.n_heads % tp == 0, "num_attention_heads ({}) is not divisible by tp ({})",
           cfg.n_heads, tp);
  PX_CHECK(cfg.n_kv_heads % tp == 0 || tp % cfg.n_kv_heads == 0,
           "num_key_value_heads ({}) and tp ({}): one must divide the other (key/value heads "
           "are split over tp, or replicated when there are fewer of them than tp)",
           cfg.n_kv_heads, tp);
  PX_CHECK(cfg.intermediate % tp == 0, "intermediate_size ({}) is not divisible by tp ({})",
           cfg.intermediate, tp);
}

int kv_replicas(const ModelConfig& cfg, int tp) {
  return cfg.n_kv_heads < tp ? tp / cfg.n_kv_heads : 1;
}

Attention::Attention(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg,
                     double proj_std, const TpGroup& tp, const CpGroup& cp, ParameterSet* adapters)
    : n_heads_(cfg.n_heads / tp.size()),
      n_kv_heads_(cfg.n_kv_heads * kv_replicas(cfg, tp.size()) / tp.size()),
      head_dim_(cfg.head_dim),
      C_(cfg.hidden),
      dropout_(cfg.attn_dropout),
      rope_(!cfg.uses_learned_positions()),
      window_(cfg.sliding_window),
      tp_(tp),
      cp_(cp) {
  check_tp_divides(cfg, tp.size());
  if (cp_.active()) cp_core_ = ContextAttention(cp_, n_heads_, n_kv_heads_, head_dim_);
  if (rope_) rope_freq_ = RopeFrequencies(cfg);
  // GPT-2 has biases on every projection, Qwen2 (qkv_bias) on q, k and v only.
  const bool bias = cfg.uses_bias(), qkv_bias = bias || cfg.qkv_bias;
  q_ = ColumnParallelLinear(ps, prefix + ".q", cfg.hidden, cfg.q_dim(), qkv_bias, cfg.init_std, tp);
  // Fewer key/value groups than tp ranks: each rank's query heads use one
  // group, whose k/v slice it holds whole (replicated over tp / n_kv ranks).
  const int reps = kv_replicas(cfg, tp.size());
  k_ = ColumnParallelLinear(ps, prefix + ".k", cfg.hidden, cfg.kv_dim(), qkv_bias, cfg.init_std, tp,
                            reps);
  v_ = ColumnParallelLinear(ps, prefix + ".v", cfg.hidden, cfg.kv_dim(), qkv_bias, cfg.init_std, tp,
                            reps);
  o_ = RowParallelLinear(ps, prefix + ".o", cfg.q_dim(), cfg.hidden, bias, proj_std, tp);
  if (adapters == nullptr) return;
  const LoraConfig& lora = cfg.lora;
  if (lora.targets_kind("q")) q_.add_lora(*adapters, prefix + ".q", lora, tp);
  if (lora.targets_kind("k")) k_.add_lora(*adapters, prefix + ".k", lora, tp);
  if (lora.targets_kind("v")) v_.add_lora(*adapters, prefix + ".v", lora, tp);
  if (lora.targets_kind("o")) o_.add_lora(*adapters, prefix + ".o", lora);
}

ops::AttnDims Attention::dims(const LayerContext& c) const {
  ops::AttnDims d{
      .B = c.B, .Tq = c.T, .Tk = c.T, .Hq = n_heads_, .Hkv = n_kv_heads_, .D = head_dim_};
  d.q_pos0 = c.positions[0];
  d.k_pos0 = c.positions[0];
  d.doc_start = c.doc_start;  // packed documents: indexed by global position
  d.doc_ld = c.doc_len;
  // Mistral's window, by global position as cp chunks need.
  d.window = window_;
  if (dropout_ > 0.0 && c.dropout_seed != 0) {  // keyed by global head and sample
    d.dropout_p = dropout_;
    d.dropout_key = mix64(c.dropout_seed ^ mix64(static_cast<uint64_t>(DropoutSite::Attention)));
    if (d.dropout_key == 0) d.dropout_key = 1;
    d.head0 = static_cast<int64_t>(tp_.rank()) * n_heads_;
    d.sample0 = c.sample_offset;
  }
  return d;
}

std::vector<double> Attention::rope_table(const LayerContext& c) const {
  if (!rope_freq_.depends_on_length()) return rope_freq_.at_length(0);
  // Dynamic NTK reads the forward's length, its largest position + 1
  // (transformers: max(position_ids) + 1): the whole sequence, which context
  // parallelism spreads over cp ranks in chunks of c.T tokens each.
  int64_t length = c.T * cp_.size();
  for (int64_t t = 0; t < c.T; ++t) length = std::max(length, c.positions[t] + 1);
  // Restarted positions would make transformers read the longest document
  // instead, which a cp rank cannot see.
  PX_CHECK(c.position_ids == nullptr || length <= rope_freq_.max_positions(),
           "dynamic NTK rope scaling with restarted position ids (--reset-position-ids) needs "
           "the sequence length ({}) within max_positions ({})",
           length, rope_freq_.max_positions());
  return rope_freq_.at_length(length);
}

Attention::Saved Attention::forward(const LayerContext& c, float* out, const float* inp) const {
  RegionInput in(c, tp_, inp, C_);
  const float* x = in.get();
  Saved s;
  s.q = c.activation({c.B, c.T, q_.out()});
  s.k = c.activation({c.B, c.T, k_.out()});
  s.v = c.activation({c.B, c.T, v_.out()});
  q_.forward(c, s.q.data<float>(), x);
  k_.forward(c, s.k.data<float>(), x);
  v_.forward(c, s.v.data<float>(), x);
  in.release();
  if (rope_) {
    const std::vector<double> inv_freq = rope_table(c);
    rope_rows(c, s.q.data<float>(), n_heads_, head_dim_, inv_freq, false);
    rope_rows(c, s.k.data<float>(), n_kv_heads_, head_dim_, inv_freq, false);
  }
  s.att = c.activation({c.B, c.T, q_.out()});
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  if (cp_.active()) {
    s.cp = cp_core_.forward(c, s.att, s.q, s.k, s.v, OpDims(c, dims(c)).d, scale);
    s.q = s.k = s.v = Tensor();  // backward reads the core's copies (the same ones under ring)
    o_.forward(c, out, s.att.data<float>());
    return s;
  }
  s.lse = c.activation({c.B, n_heads_, c.T});
  const OpDims od(c, dims(c));
  ops::attention_forward(c.stream(), s.att.data<float>(), s.lse.data<float>(), s.q.data<float>(),
                         s.k.data<float>(), s.v.data<float>(), od.d,
                         1.0 / std::sqrt(static_cast<double>(head_dim_)));
  o_.forward(c, out, s.att.data<float>());
  return s;
}

void Attention::forward_cached(const LayerContext& c, float* out, const float* inp, int64_t layer,
                               PagedKvCache& cache, const std::vector<PagedSpan>& spans) const {
  PX_CHECK(!tp_.sp(), "cached attention runs without sequence parallelism");
  PX_CHECK(!cp_.active(), "cached attention runs without context parallelism");
  const int64_t N = c.N(), qd = q_.out(), kd = k_.out();
  Tensor q = c.workspace({N, qd}), k = c.workspace({N, kd}), v = c.workspace({N, kd});
  // q, k and v in one pass over their weights (one parallel region at decode).
  const LinearPart parts[] = {q_.part(c, q.data<float>()), k_.part(c, k.data<float>()),
                              v_.part(c, v.data<float>())};
  linear_forward_parts(c, inp, N, C_, parts);
  q_.adapt(c, q.data<float>(), inp);  // LoRA terms (nothing without adapters)
  k_.adapt(c, k.data<float>(), inp);
  v_.adapt(c, v.data<float>(), inp);
  const OnDevice<int64_t> pos(c.stream(), c.alloc, c.positions, N);
  if (rope_ && !rope_freq_.depends_on_length()) {  // one row of N tokens, each at its own position
    const std::vector<double> freq = rope_freq_.at_length(0);
    const OnDevice<double> inv_freq(c.stream(), c.alloc, freq);
    ops::rope_forward(c.stream(), q.data<float>(), pos.get(), 1, N, n_heads_, head_dim_,
                      inv_freq.get());
    ops::rope_forward(c.stream(), k.data<float>(), pos.get(), 1, N, n_kv_heads_, head_dim_,
                      inv_freq.get());
  } else if (rope_) {
    // Dynamic NTK: each span at its own sequence's length so far (its last
    // position + 1), whatever else shares the batch. Keys already cached
    // keep the frequencies they were written with, as in transformers.
    int64_t r0 = 0;
    for (const PagedSpan& s : spans) {
      const std::vector<double> freq = rope_freq_.at_length(s.pos0 + s.count);
      const OnDevice<double> inv_freq(c.stream(), c.alloc, freq);
      ops::rope_forward(c.stream(), q.data<float>() + r0 * qd, pos.get() + r0, 1, s.count,
                        n_heads_, head_dim_, inv_freq.get());
      ops::rope_forward(c.stream(), k.data<float>() + r0 * kd, pos.get() + r0, 1, s.count,
                        n_kv_heads_, head_dim_, inv_freq.get());
      r0 += s.count;
    }
  }
  const PagedTables tables(c.stream(), c.alloc, spans);
  const std::vector<ops::PagedSeq>& seqs = tables.seqs();
  int64_t r0 = 0;
  for (const ops::PagedSeq& s : seqs) {
    cache.write(layer, s, k.data<float>() + r0 * kd, v.data<float>() + r0 * kd);
    r0 += s.Tq;
  }
  Tensor att = c.workspace({N, qd});
  ops::PagedAttnDims pd = cache.attn_dims(n_heads_);
  pd.window = window_;
  cache.attention(layer, att.data<float>(), q.data<float>(), seqs, pd,
                  1.0 / std::sqrt(static_cast<double>(head_dim_)));
  o_.forward(c, out, att.data<float>());
}

void Attention::backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                         const Saved& s) const {
  Tensor datt = c.workspace({c.N(), q_.out()});
  o_.backward(c, datt.data<float>(), dout, s.att.data<float>());
  Tensor dq = c.workspace({c.N(), q_.out()});
  Tensor dk = c.workspace({c.N(), k_.out()});
  Tensor dv = c.workspace({c.N(), v_.out()});
  if (cp_.active())
    cp_core_.backward(c, dq.data<float>(), dk.data<float>(), dv.data<float>(), datt.data<float>(),
                      s.att.data<float>(), s.cp, OpDims(c, dims(c)).d,
                      1.0 / std::sqrt(static_cast<double>(head_dim_)));
  else {
    const OpDims od(c, dims(c));
    ops::attention_backward(c.stream(), dq.data<float>(), dk.data<float>(), dv.data<float>(),
                            datt.data<float>(), s.q.data<float>(), s.k.data<float>(),
                            s.v.data<float>(), s.att.data<float>(), s.lse.data<float>(), od.d,
                            1.0 / std::sqrt(static_cast<double>(head_dim_)));
  }
  datt = Tensor();
  if (rope_) {
    const std::vector<double> inv_freq = rope_table(c);
    rope_rows(c, dq.data<float>(), n_heads_, head_dim_, inv_freq, true);
    rope_rows(c, dk.data<float>(), n_kv_heads_, head_dim_, inv_freq, true);
  }
  const RegionInput in(c, tp_, inp, C_);
  RegionInputGrad dx(c, tp_, dinp, C_);
  q_.backward(c, dx.get(), dq.data<float>(), in.get());
  k_.backward(c, dx.get(), dk.data<float>(), in.get());
  v_.backward(c, dx.get(), dv.data<float>(), in.get());
  dx.finish();
}

}  // namespace parallm
