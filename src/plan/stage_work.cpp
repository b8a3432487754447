#include "plan/stage_work.h"

#include <algorithm>
#include <cmath>

namespace parallm {

namespace {

void add_linear(std::vector<LinearWork>& v, int64_t rows, int64_t in, int64_t out, double calls,
                bool deferred_dw = true) {
  for (LinearWork& w : v)
    if (w.rows == rows && w.in == in && w.out == out && w.deferred_dw == deferred_dw) {
      w.calls += calls;
      return;
    }
  v.push_back({rows, in, out, calls, deferred_dw});
}

// One transformer block on this rank, `count` times.
void add_blocks(StageWork& w, const MemoryQuery& q, int64_t first_layer, int64_t count) {
  const ModelConfig& m = q.model;
  const int64_t tp = q.tp, C = m.hidden;
  const int64_t n = q.micro_batch * q.seq_len / q.cp;  // rows of the linears
  const bool sp = q.sequence_parallel && tp > 1;
  const double rows_sp = sp ? static_cast<double>(n) / tp : static_cast<double>(n);
  const int64_t heads = m.n_heads / tp;
  // key/value heads replicated when there are fewer than tp of them
  const int64_t kv_heads = std::max<int64_t>(1, m.n_kv_heads / tp);
  const double layers = static_cast<double>(count);
  const bool full = q.recompute == Recompute::Full;

  std::vector<LinearWork> lin;
  add_linear(lin, n, C, heads * m.head_dim, layers);
  add_linear(lin, n, C, kv_heads * m.head_dim, 2 * layers);
  add_linear(lin, n, heads * m.head_dim, C, layers);
  std::map<std::string, double> el;
  const std::string norm_kind = m.uses_layernorm() ? "layernorm" : "rmsnorm";
  el[norm_kind] += 2 * rows_sp * C * layers;
  el["add"] += 2 * rows_sp * C * layers;
  if (!m.uses_learned_positions())
    el["rope"] += static_cast<double>(n) * (heads + kv_heads) * m.head_dim * layers;

  // MLP or experts, layer by layer (MoE layers follow the model's pattern).
  const std::string act = m.uses_swiglu() ? "swiglu" : "gelu";
  const double mats = m.uses_swiglu() ? 2.0 : 1.0;  // gate + up, or fc
  for (int64_t l = first_layer; l < first_layer + count; ++l) {
    if (m.moe.enabled() && m.moe.is_moe_layer(l)) {
      // Experts are not tp-split: each tp rank routes its own rows (1/tp of
      // them under sp, all without); an ep rank receives its tokens' top-k
      // assignments from the ep group, spread over its E / ep experts; the
      // busiest ep rank (the one the group waits for) ep_load_factor times
      // the mean.
      const int64_t F = m.moe.expert_intermediate(m.intermediate);
      const int64_t local = m.moe.num_experts / q.ep;
      const auto moe_rows = static_cast<int64_t>(rows_sp);
      const auto rows = std::max<int64_t>(
          1, std::llround(static_cast<double>(moe_rows) * m.moe.topk / local * q.ep_load_factor()));
      add_linear(lin, moe_rows, C, m.moe.num_experts, 1, false);  // router
      add_linear(lin, rows, C, F, mats * local, false);
      add_linear(lin, rows, F, C, local, false);
      el[act] += static_cast<double>(rows) * local * F;
      el["moe_rows"] += static_cast<double>(moe_rows) * m.moe.topk * C;
      if (m.moe.shared_intermediate > 0) {  // the shared expert is tp-split like an MLP
        const int64_t S = m.moe.shared_intermediate / tp;
        add_linear(lin, n, C, S, mats);
        add_linear(lin, n, S, C, 1);
        el[act] += static_cast<double>(n) * S;
      }
      w.moe_layers += 1;
      w.moe_rows = moe_rows;
      continue;
    }
    const int64_t F = m.intermediate / tp;
    add_linear(lin, n, C, F, mats);
    add_linear(lin, n, F, C, 1);
    el[act] += static_cast<double>(n) * F;
  }
  for (const LinearWork& l : lin) {
    add_linear(w.linears, l.rows, l.in, l.out, l.calls, l.deferred_dw);
    if (full) add_linear(w.recomputed, l.rows, l.in, l.out, l.calls, l.deferred_dw);
  }
  // Causal pairs of a sequence, split evenly over cp by the load-balanced chunks.
  const double pairs = static_cast<double>(q.seq_len) * (q.seq_len + 1) / 2.0 / q.cp;
  const double units = static_cast<double>(q.micro_batch) * heads * pairs * m.head_dim * layers;
  w.attn_units += units;
  // Under cp the kernel runs on pairs of load-balanced chunks, 2 x cp of them.
  w.attn_seq = q.cp > 1 ? q.seq_len / (2 * q.cp) : q.seq_len;
  w.attn_head_dim = m.head_dim;
  if (full) w.attn_units_recomputed += units;
  for (const auto& [k, v] : el) {
    w.elements[k] += v;
    // full: the whole block forward again; parallm's selective mode
    // recomputes the norm outputs and the activation (docs/recompute.md).
    const bool selective_kind = k == norm_kind || k == act;
    if (full || (q.recompute == Recompute::Selective && selective_kind))
      w.elements_recomputed[k] += v;
  }
}

}  // namespace

std::vector<StageWork> end_stage_works(const MemoryQuery& q) {
  const ModelConfig& m = q.model;
  const int64_t n = q.micro_batch * q.seq_len / q.cp;
  const bool sp = q.sequence_parallel && q.tp > 1;
  const double rows_sp = sp ? static_cast<double>(n) / q.tp : static_cast<double>(n);
  const int64_t vocab_rows = (m.vocab_size + q.tp - 1) / q.tp;
  const int64_t per_stage = m.n_layers / q.pp;

  StageWork first, last;
  add_blocks(first, q, 0, per_stage);
  first.elements["embedding"] += rows_sp * m.hidden;
  // DualPipeV's V puts the head on stage 0 with the embedding.
  const bool v_shape = q.schedule == pipeline::ScheduleKind::DualPipeV;
  StageWork& tail = q.pp == 1 || v_shape ? first : last;
  if (q.pp > 1) add_blocks(last, q, m.n_layers - per_stage, per_stage);
  tail.elements[m.uses_layernorm() ? "layernorm" : "rmsnorm"] += rows_sp * m.hidden;
  add_linear(tail.linears, n, m.hidden, vocab_rows, 1, false);  // the LM head
  tail.elements["cross_entropy"] += static_cast<double>(n) * vocab_rows;
  if (q.pp == 1) return {first};
  return {first, last};
}

StageSeconds price_stage(const StageWork& w, const OpCosts& c) {
  StageSeconds s;
  for (const LinearWork& l : w.linears) {
    const double fwd = l.calls * c.linear_fwd_s(l.rows, l.in, l.out);
    const double bwd = l.calls * c.linear_bwd_s(l.rows, l.in, l.out);
    s.matmul_s += fwd + bwd;
    s.forward_s += fwd;
    s.weight_s += l.deferred_dw ? bwd / 2 : 0.0;
    s.backward_s += l.deferred_dw ? bwd / 2 : bwd;
  }
  for (const LinearWork& l : w.recomputed) {
    const double fwd = l.calls * c.linear_fwd_s(l.rows, l.in, l.out);
    s.matmul_s += fwd;
    s.backward_s += fwd;
  }
  const double attn_fwd = c.attention_s(Pass::Forward, w.attn_units, w.attn_seq, w.attn_head_dim);
  const double attn_refwd =
      c.attention_s(Pass::Forward, w.attn_units_recomputed, w.attn_seq, w.attn_head_dim);
  const double attn_bwd = c.attention_s(Pass::Backward, w.attn_units, w.attn_seq, w.attn_head_dim);
  s.matmul_s += attn_fwd + attn_refwd + attn_bwd;
  s.forward_s += attn_fwd;
  s.backward_s += attn_refwd + attn_bwd;
  for (const auto& [k, n] : w.elements) {
    const double fwd = c.elementwise_s(Pass::Forward, k, n),
                 bwd = c.elementwise_s(Pass::Backward, k, n);
    s.elementwise_s += fwd + bwd;
    s.forward_s += fwd;
    s.backward_s += bwd;
  }
  for (const auto& [k, n] : w.elements_recomputed) {
    const double fwd = c.elementwise_s(Pass::Forward, k, n);
    s.elementwise_s += fwd;
    s.backward_s += fwd;
  }
  return s;
}

}  // namespace parallm
