#include "model/layers/lm_head.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/matmul.h"

namespace parallm {

LmHead::LmHead(ParameterSet& ps, const ModelConfig& cfg, ParamRef tied_table)
    : V_(cfg.vocab_size), C_(cfg.hidden) {
  w_ = cfg.tie_embeddings
           ? tied_table
           : ps.add({.name = "lm_head.weight", .shape = {V_, C_}, .init_std = cfg.init_std});
}

int64_t LmHead::chunk_rows(int64_t N) const {
  // Chunks of up to 32 MiB of logits, and never fewer than two, so the full
  // (N, V) logits never exist; large chunks keep the dW GEMM's inner
  // dimension (the chunk's rows) long, which is what makes it efficient.
  int64_t rows = std::min<int64_t>((int64_t{8} << 20) / std::max<int64_t>(V_, 1), (N + 1) / 2);
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
  const float* W = c.params.value(w_);
  Tensor logits = c.workspace({R, V_});
  std::vector<float> mx(R), se(R), tl(R), lse(R), scale(R);
  LossSum out;
  for (int64_t r0 = 0; r0 < N; r0 += R) {
    const int64_t n = std::min(R, N - r0);
    const float* xr = x + r0 * C_;
    const int32_t* tr = targets + r0;
    float* L = logits.data<float>();
    cpu::gemm<float>(false, true, n, V_, C_, 1.0f, xr, C_, W, C_, 0.0f, L, V_);
    cpu::ce_row_max(mx.data(), L, n, V_);
    cpu::ce_row_sumexp(se.data(), L, mx.data(), n, V_);
    cpu::ce_target_logit(tl.data(), L, tr, n, V_, 0);
    for (int64_t i = 0; i < n; ++i) {
      lse[i] = mx[i] + std::log(se[i]);
      scale[i] = static_cast<float>(grad_scale);
      if (tr[i] < 0) continue;
      PX_CHECK(tr[i] < V_, "target token {} is outside the vocabulary ({})", tr[i], V_);
      out.sum += static_cast<double>(lse[i]) - static_cast<double>(tl[i]);
      out.count += 1;
    }
    if (dx == nullptr) continue;
    cpu::ce_softmax_grad_inplace(L, lse.data(), tr, scale.data(), n, V_, 0);
    // dx += dlogits W ; dW += dlogits^T x
    cpu::gemm<float>(false, false, n, C_, V_, 1.0f, L, V_, W, C_, 1.0f, dx + r0 * C_, C_);
    cpu::gemm<float>(true, false, V_, C_, n, 1.0f, L, V_, xr, C_, 1.0f, c.params.grad(w_), C_);
  }
  return out;
}

void LmHead::logits(const LayerContext& c, float* out, const float* x) const {
  cpu::gemm<float>(false, true, c.N(), V_, C_, 1.0f, x, C_, c.params.value(w_), C_, 0.0f, out, V_);
}

}  // namespace parallm
