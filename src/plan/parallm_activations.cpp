#include "plan/parallm_activations.h"

#include <algorithm>

#include "plan/moe_memory.h"

namespace parallm {

namespace {
// The LM head's chunking rule (src/model/layers/lm_head.cpp chunk_rows):
// up to 8M logits per chunk, at least two chunks, at least 16 rows.
int64_t head_chunk_rows(int64_t N, int64_t V) {
  int64_t rows = std::min<int64_t>((int64_t{8} << 20) / std::max<int64_t>(V, 1), (N + 1) / 2);
  rows = std::clamp<int64_t>(rows, 16, std::max<int64_t>(N, 1));
  const int64_t chunks = (N + rows - 1) / rows;
  return (N + chunks - 1) / chunks;
}
}  // namespace

ParallmActivations parallm_activations(const MemoryQuery& q) {
  const ModelConfig& m = q.model;
  const double t = q.tp;
  const double B = static_cast<double>(q.micro_batch);
  const double T = static_cast<double>(q.seq_len / q.cp);
  const double N = B * T;                               // token rows of the micro-batch
  const double rows = q.sequence_parallel ? N / t : N;  // residual-stream rows
  const double C = static_cast<double>(m.hidden);
  const double Q = static_cast<double>(m.q_dim()) / t;  // this rank's query width
  // Key/value width: with fewer kv heads than tp ranks each rank keeps one
  // whole (replicated) group, so ceil(n_kv / t) heads, not kv_dim / t.
  const double K = static_cast<double>(m.head_dim * ((m.n_kv_heads + q.tp - 1) / q.tp));
  const double I = static_cast<double>(m.intermediate) / t;
  const double H = static_cast<double>(m.n_heads) / t;
  const double stats = m.uses_layernorm() ? 2.0 : 1.0;  // mean + rstd, or rstd
  // fp32 saved tensors under every precision on the CPU; on the GPU the
  // activation dtype (2 bytes under bf16/fp16) but statistics and lse in
  // fp32, counted here as 4 / elem elements each.
  const double elem = 4.0;  // activations are fp32 under every precision (16-bit at the GEMMs only)
  const double f32 = 4.0 / elem;

  const double norm_out = rows * C, norm_stats = rows * stats * f32;
  const double block_out = rows * C;                              // next block's input (xs[l+1])
  const double attn = N * (Q + 2 * K) + N * Q + B * H * T * f32;  // q, k, v, att, lse
  const double mid = rows * C;
  const double mlp_pre = N * I * (m.uses_swiglu() ? 2.0 : 1.0);  // fc, or gate and up
  const double mlp_act = N * I;
  const double full = block_out + 2 * (norm_out + norm_stats) + attn + mid + mlp_pre + mlp_act;

  // An MoE layer (model/moe/moe*.cpp) saves, in place of the MLP's: the
  // expert outputs back on this rank (y: S rows, in send order), and on the
  // expert side each received row's input, fc | gate output, up (SwiGLU)
  // and activation (M rows); each at least one row. S (this rank's kept
  // assignments) and M (rows its experts receive) follow an even load
  // (moe_assignments_per_token, per whole sequence: every cp rank routes
  // whole sequences): S = M = fed x a. Under expert tp 1 every tp rank runs
  // its experts whole on its own rows (fed = rows); under expert tp = tp it
  // feeds every row of its tp group (fed = N, gathered under sp) through
  // I_e / tp features. A shared expert saves what a dense MLP of
  // its width does (its activation dropped under selective recomputation)
  // and, when gated, its output (rows, C). The router's logits (gathered
  // over tp and cp), the gathered rows under expert tp and the dispatch
  // buffers are workspace or std::vectors, not activations.
  const MoeConfig& moe = m.moe;
  const double Ie = static_cast<double>(moe.expert_intermediate(m.intermediate)) /
                    static_cast<double>(q.expert_tp);
  const double fed = q.expert_tp > 1 ? N : rows;
  const double assigned =
      moe.enabled() ? std::max(1.0, fed * moe_assignments_per_token(moe, q.seq_len)) : 0;
  const double Is = static_cast<double>(moe.shared_intermediate) / t;
  const double shared_act = N * Is;
  const double gated_out = moe.shared_intermediate > 0 && moe.shared_expert_gate ? rows * C : 0;
  const double moe_part = assigned * C                                           // y
                          + assigned * (C + Ie * (m.uses_swiglu() ? 3.0 : 2.0))  // experts
                          + N * Is * (m.uses_swiglu() ? 2.0 : 1.0) + shared_act + gated_out;
  const double full_moe = full - mlp_pre - mlp_act + moe_part;

  // Per layer of the first stage: what it keeps to the end of the forward
  // pass, and under full recomputation what rebuilding it adds in backward.
  // Block l's backward runs while the outputs of later blocks are freed
  // (model/transformer.cpp frees xs[l + 1] after block l, the last output
  // with the final norm): the peak at block l is the end of the forward pass
  // less the final norm's output and stats, less max(1, L - l - 1) outputs,
  // plus its set without its output (written to workspace).
  const int64_t L = (m.n_layers + q.pp - 1) / q.pp;
  ParallmActivations r;
  double working = 0.0;
  for (int64_t l = 0; l < L; ++l) {
    const bool is_moe = moe.is_moe_layer(l);
    const double f = is_moe ? full_moe : full;
    switch (q.recompute) {
      case Recompute::None:
        r.layers += f;
        break;
      case Recompute::Selective:  // MoE layers keep their experts' activations
        r.layers += f - 2 * (norm_out + norm_stats) - (is_moe ? shared_act : mlp_act);
        break;
      case Recompute::Full:
        r.layers += block_out;
        break;
    }
    const double freed = static_cast<double>(std::max<int64_t>(1, L - l - 1)) * block_out;
    working = std::max(working, f - block_out - freed - norm_out - norm_stats);
  }
  if (q.recompute == Recompute::Full) r.working = working;
  r.per_layer = r.layers / static_cast<double>(L);
  // xs[0] (embedding output) and the final norm's output and stats; its
  // input is the last block's output, already counted.
  r.outside = rows * C + norm_out + norm_stats;
  r.per_layer *= elem;
  r.layers *= elem;
  r.working *= elem;
  r.outside *= elem;
  const int64_t V = (m.vocab_size + q.tp - 1) / q.tp;  // padded shard rows
  const int64_t chunk = head_chunk_rows(static_cast<int64_t>(N), V);
  r.head_chunk = static_cast<double>(chunk) * static_cast<double>(V) * elem;
  return r;
}

ParallmStateBytes parallm_state_bytes(Precision p) {
  ParallmStateBytes b;
  if (p != Precision::FP32) b.gemm_copy = 2.0;
  return b;
}

}  // namespace parallm
