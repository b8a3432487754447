#include "optim/muon.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "kernels/cpu/optimizer.h"
#include "optim/newton_schulz.h"
#include "parallel/tensor/gather_parameters.h"

namespace parallm {

bool Muon::is_matrix(const ParamSpec& s) {
  return s.shape.size() == 2 && s.name.rfind("layers.", 0) == 0;
}

namespace {
void push_span(std::vector<FlatSpan>& spans, int64_t b, int64_t e) {
  if (b >= e) return;
  if (!spans.empty() && spans.back().end == b) spans.back().end = e;
  else spans.push_back({b, e});
}
}  // namespace

Muon::Muon(const ParameterSet& params, const OptimizerConfig& cfg, Allocator& alloc,
           int64_t begin, int64_t end, const TpGroup& tp)
    : Optimizer(begin, end), cfg_(cfg), alloc_(alloc), tp_(tp) {
  PX_CHECK(begin == 0 && end == params.total_numel(),
           "muon needs whole matrices but was given the flat range [{}, {}) of {} parameters "
           "(ZeRO shards cut matrices; use --zero 0 or another optimizer)",
           begin, end, params.total_numel());
  // Matrices' elements go to momentum_ in order; everything else (padding
  // included) to the AdamW moments, so the two cover the flat buffer.
  int64_t mat = 0, other = 0;
  for (int i = 0; i < params.size(); ++i) {
    const int64_t off = params.offset(i), n = params.numel(i), slot_end = params.offset(i + 1);
    const bool m = is_matrix(params.spec(i));
    matrix_.push_back(m);
    if (m) {
      slot_.push_back(mat);
      mat += n;
      push_span(matrix_spans_, off, off + n);
      push_span(other_spans_, off + n, slot_end);
      other += slot_end - off - n;
    } else {
      slot_.push_back(other);
      push_span(other_spans_, off, slot_end);
      other += slot_end - off;
    }
  }
  momentum_ = Tensor::zeros(alloc, {mat}, DType::F32, MemTag::Optimizer);
  m_ = Tensor::zeros(alloc, {other}, DType::F32, MemTag::Optimizer);
  v_ = Tensor::zeros(alloc, {other}, DType::F32, MemTag::Optimizer);
}

void Muon::step_range(const ParameterSet& params, double lr, float* p, const float* g) {
  ++step_;
  const float mu = static_cast<float>(cfg_.muon_momentum);
  const double lr_m = lr * cfg_.muon_lr_ratio;
  const float decay = static_cast<float>(1.0 - lr_m * cfg_.muon_weight_decay);
  for (int i = 0; i < params.size(); ++i) {
    const int64_t off = params.offset(i), n = params.numel(i);
    float* pi = p + off;
    const float* gi = g + off;
    if (!matrix_[i]) {
      cpu::AdamWParams h{.lr = lr, .beta1 = cfg_.beta1, .beta2 = cfg_.beta2, .eps = cfg_.eps,
                         .weight_decay = params.spec(i).weight_decay ? cfg_.weight_decay : 0.0,
                         .step = step_};
      cpu::adamw_step(pi, gi, m_.data<float>() + slot_[i], v_.data<float>() + slot_[i], n, h);
      continue;
    }
    // Momentum and the Nesterov blend in the reference's lerp form.
    float* buf = momentum_.data<float>() + slot_[i];
    Tensor u = Tensor::zeros(alloc_, {n}, DType::F32, MemTag::Workspace);
    float* ud = u.data<float>();
    for (int64_t e = 0; e < n; ++e) {
      buf[e] += (1.0f - mu) * (gi[e] - buf[e]);
      ud[e] = gi[e] + mu * (buf[e] - gi[e]);
    }
    // Whole matrix: gathered over tp when sharded (identical on every tp rank).
    const ParamSpec& s = params.spec(i);
    std::vector<float> full = gather_tp_parameter(params, i, ud, tp_);
    const bool sharded = tp_.active() && s.shard_dim >= 0;
    const int64_t R = sharded ? s.global_shape[0] : s.shape[0];
    const int64_t C = sharded ? s.global_shape[1] : s.shape[1];
    PX_CHECK(static_cast<int64_t>(full.size()) == R * C,
             "muon: {} gathered {} elements, expected {} x {}", s.name, full.size(), R, C);
    newton_schulz_orthogonalise(full.data(), R, C, cfg_.muon_ns_steps, alloc_);
    const float scale = static_cast<float>(
        std::sqrt(std::max(1.0, static_cast<double>(R) / static_cast<double>(C))));
    // This rank's slice: rows [r0, r0 + shape[0]) and columns [c0, c0 + shape[1]).
    const int64_t r0 = sharded && s.shard_dim == 0 ? s.shard_begin : 0;
    const int64_t c0 = sharded && s.shard_dim == 1 ? s.shard_begin : 0;
    const int64_t lr_rows = s.shape[0], lc = s.shape[1];
    const float step = static_cast<float>(lr_m) * scale;
    for (int64_t r = 0; r < lr_rows; ++r) {
      const float* o = full.data() + (r0 + r) * C + c0;
      float* pr = pi + r * lc;
      for (int64_t c = 0; c < lc; ++c) pr[c] = pr[c] * decay - step * o[c];
    }
  }
}

std::vector<OptimizerState> Muon::state() {
  return {{"momentum_buffer", &momentum_, matrix_spans_},
          {"exp_avg", &m_, other_spans_},
          {"exp_avg_sq", &v_, other_spans_}};
}

}  // namespace parallm
