#include "model/layers/lm_head.h"

#include <algorithm>

#include "nn/matmul_precision.h"

namespace parallm {

LmHead::LmHead(ParameterSet& ps, const ModelConfig& cfg, ParamRef tied_table, const TpGroup& tp)
    : C_(cfg.hidden), shard_(VocabShard::of(cfg.vocab_size, tp.size(), tp.rank())), tp_(tp) {
  w_ = cfg.tie_embeddings ? tied_table
                          : ps.add({.name = "lm_head.weight",
                                    .shape = {shard_.rows, C_},
                                    .global_shape = {shard_.padded, C_},
                                    .shard_dim = tp.active() ? 0 : -1,
                                    .shard_begin = shard_.begin,
                                    .init_std = cfg.init_std});
}

int64_t LmHead::chunk_rows(int64_t N) const {
  // Chunks of up to 32 MiB of logits, and never fewer than two, so the full
  // (N, V) logits never exist; large chunks keep the dW GEMM's inner
  // dimension (the chunk's rows) long, which is what makes it efficient.
  const int64_t V = shard_.valid;
  int64_t rows = std::min<int64_t>((int64_t{8} << 20) / std::max<int64_t>(V, 1), (N + 1) / 2);
  rows = std::clamp<int64_t>(rows, 16, std::max<int64_t>(N, 1));
  const int64_t chunks = (N + rows - 1) / rows;
  return (N + chunks - 1) / chunks;  // even chunks: no short tail GEMM
}

LossSum LmHead::loss(const LayerContext& c, const float* x, const int32_t* targets) const {
  return run(c, nullptr, x, targets, 0.0);
}

LossSum LmHead::loss_and_grad(const LayerContext& c, float* dx, const float* x,
                              const int32_t* targets, double grad_scale) const {
  return run(c, dx, x, targets, grad_scale);
}

LossSum LmHead::run(const LayerContext& c, float* dx, const float* x, const int32_t* targets,
                    double grad_scale) const {
  const int64_t N = c.N();
  const int64_t R = chunk_rows(N);
  const int64_t V = shard_.valid;  // padded ids get no logits at all
  const float* W = c.params.value(w_);
  Tensor logits = c.workspace({R, std::max<int64_t>(V, 1)});
  VocabParallelCrossEntropy ce(c.stream(), c.alloc, shard_, tp_, R);
  const OnDevice<int32_t> targets_op(c.stream(), c.alloc, targets, N);
  LossSum out;
  for (int64_t r0 = 0; r0 < N; r0 += R) {
    const int64_t n = std::min(R, N - r0);
    const float* xr = x + r0 * C_;
    float* L = logits.data<float>();
    if (V > 0) matmul_weight(c, false, true, n, V, C_, xr, C_, w_, W, C_, 0.0f, L, V);
    ce.loss(L, targets + r0, targets_op.get() + r0, n, out);
    if (dx == nullptr || V == 0) continue;
    ce.grad_inplace(L, targets_op.get() + r0, n, grad_scale);
    // dx += dlogits W ; dW += dlogits^T x  (this shard's part of both)
    // (under fp16 the rounded dlogits overflow first when the loss scale is too big)
    matmul_weight(c, false, false, n, C_, V, L, V, w_, W, C_, 1.0f, dx + r0 * C_, C_);
    if (!c.params.frozen())  // a frozen base (LoRA) takes no gradient
      matmul_act(c, true, false, V, C_, n, L, V, xr, C_, 1.0f, c.params.grad(w_), C_);
  }
  return out;
}

void LmHead::logits(const LayerContext& c, float* out, const float* x) const {
  matmul_weight(c, false, true, c.N(), shard_.rows, C_, x, C_, w_, c.params.value(w_), C_, 0.0f,
                out, shard_.rows);
}

}  // namespace parallm
